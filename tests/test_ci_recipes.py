"""The CI recipes of docs/ci.md, run as far as this machine allows and without the network: the
GitHub Actions workflow's render-and-check step, and the pre-commit hook the way pre-commit runs
it (its `files`/`exclude` selection, then its `entry` with the selected files)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import CRDS

from webhook.smoke import objects

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the venv's console scripts: `servinggate`


def _yaml_blocks(markdown: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", markdown, re.DOTALL)


def _workflow() -> dict:
    blocks = [yaml.safe_load(b) for b in _yaml_blocks((REPO / "docs" / "ci.md").read_text())]
    return next(b for b in blocks if isinstance(b, dict) and "jobs" in b)


def _step(name: str) -> dict:
    return next(s for s in _workflow()["jobs"]["check"]["steps"] if s.get("name") == name)


def _write(path: Path, docs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs))


def _env() -> dict:
    """The runner's environment: the venv's scripts on PATH, and no SERVINGGATE_CRDS (the recipes name their CRDs)."""
    env = {k: v for k, v in os.environ.items() if k != "SERVINGGATE_CRDS"}
    return {**env, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}


def _pulled_crds(folder: Path) -> None:
    """What the recipes' `helm pull --untar` leaves, stood in for by the test suite's own CRDs (no network here)."""
    shutil.copytree(CRDS, folder / "kthena" / "crds")


def test_the_workflow_uploads_sarif_and_fails_on_refusals():
    wf = _workflow()
    assert wf["permissions"]["security-events"] == "write"
    steps = wf["jobs"]["check"]["steps"]
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    check = _step("Check")
    assert upload["with"]["sarif_file"] in check["run"] and "--output sarif" in check["run"]
    assert check["continue-on-error"] is True and _step("Fail on refused objects")["if"] == "steps.check.outcome == 'failure'"


def test_the_workflow_hands_check_the_crds_of_the_charts_it_pulls():
    names = [s.get("name") for s in _workflow()["jobs"]["check"]["steps"]]
    assert names.index("CRDs") < names.index("Check")
    pulls = _step("CRDs")["run"].splitlines()
    assert any(line.startswith("helm pull oci://ghcr.io/volcano-sh/charts/kthena ") and "--untar --untardir crds" in line for line in pulls)
    assert "--crds crds/" in _step("Check")["run"]


@pytest.mark.skipif(not shutil.which("kubectl"), reason="kubectl renders the kustomization")
@pytest.mark.parametrize("with_bad, code", [(False, 0), (True, 1)])
def test_the_workflows_render_and_check_steps(tmp_path, with_bad, code):
    overlay = tmp_path / "deploy" / "overlays" / "production"
    docs = [objects.good_modelserving("team-a")] + ([objects.bad_modelserving("team-a")] if with_bad else [])
    _write(overlay / "servings.yaml", docs)
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": ["servings.yaml"]})
    )
    _pulled_crds(tmp_path / "crds")
    # The Render step's lines that need no helm binary, then the Check step, as the runner runs them.
    render = [line for line in _step("Render")["run"].splitlines() if not line.startswith("helm ")]
    script = "\n".join(["set -e", *render, _step("Check")["run"]])
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert done.returncode == code, done.stderr
    assert "no CRD for" not in done.stderr  # the ModelServings were validated against the CRDs handed over
    sarif = json.loads((tmp_path / "servinggate.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ([objects.BAD_RULE] if with_bad else [])


# ---- pre-commit ------------------------------------------------------------------------------------


def _hook() -> dict:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["servinggate-check"]
    return hooks[0]


def _precommit_config() -> dict:
    """The `.pre-commit-config.yaml` docs/ci.md gives."""
    blocks = [yaml.safe_load(b) for b in _yaml_blocks((REPO / "docs" / "ci.md").read_text())]
    return next(b for b in blocks if isinstance(b, dict) and "repos" in b)


def _selected(paths: list[str]) -> list[str]:
    """pre-commit's selection: `files` and `exclude` are Python regexes searched in the path."""
    hook = _hook()
    return [p for p in paths if re.search(hook["files"], p) and not re.search(hook["exclude"], p)]


def test_the_hook_leaves_out_files_that_are_not_kubernetes_objects():
    paths = [
        "deploy/good.yaml",
        "deploy/kustomization.yaml",
        "charts/app/Chart.yaml",
        "charts/app/values.yaml",
        "charts/app/values-prod.yaml",
        "charts/app/templates/deployment.yaml",
        ".github/workflows/ci.yaml",
        ".pre-commit-config.yaml",
        "charts/app/crds/crd.yaml",
        "ci/crds/kthena/charts/workload/crds/modelservings.yaml",
        "README.md",
        "objects/pod.json",
        "base/service.yml",
    ]
    assert _selected(paths) == ["deploy/good.yaml", "objects/pod.json", "base/service.yml"]


def test_the_hook_passes_a_good_manifest_and_fails_a_bad_one(tmp_path):
    _write(tmp_path / "deploy" / "good.yaml", [objects.good_modelserving("team-a")])
    _write(tmp_path / "deploy" / "bad.yaml", [objects.bad_modelserving("team-a")])
    (tmp_path / "deploy" / "kustomization.yaml").write_text("resources: [good.yaml, bad.yaml]\n")
    _pulled_crds(tmp_path / "ci" / "crds")
    hook = _hook()
    assert hook["language"] == "python" and hook.get("pass_filenames", True)
    args = _precommit_config()["repos"][0]["hooks"][0]["args"]
    assert args[:2] == ["--crds", "ci/crds"]

    def run(files: list[str]) -> subprocess.CompletedProcess:
        command = [*shlex.split(hook["entry"]), *args, *_selected(files)]
        return subprocess.run(command, cwd=tmp_path, env=_env(), capture_output=True, text=True)

    crd_files = [str(p.relative_to(tmp_path)) for p in (tmp_path / "ci").rglob("*.yaml")]
    good = run(["deploy/good.yaml", "deploy/kustomization.yaml", *crd_files])
    assert good.returncode == 0 and "no CRD for" not in good.stderr, good.stdout + good.stderr
    bad = run(["deploy/good.yaml", "deploy/bad.yaml", "deploy/kustomization.yaml"])
    assert bad.returncode == 1 and f"deploy/bad.yaml:16:13: error [{objects.BAD_RULE}]" in bad.stdout
