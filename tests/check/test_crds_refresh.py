"""`python -m webhook crds refresh PATH` fills the user's CRD cache from a chart or a checkout,
read for its CRD documents alone; `crds list`, `check` and `version` read the cache back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import CRDS, REPO
from support.commands import run_webhook

from webhook.crds import cache_dir, scan
from webhook.crds.refresh import main

PODGROUP = yaml.safe_load((CRDS / "podgroup.yaml").read_text())
HELM_TEMPLATE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-controller
spec:
  replicas: {{ .Values.replicas }}
"""


def checkout(root: Path) -> Path:
    """A folder laid out like a project checkout: one CRD among the files a refresh must skip."""
    (root / "charts" / "crds").mkdir(parents=True)
    (root / "charts" / "templates").mkdir(parents=True)
    (root / "charts" / "crds" / "podgroup.yaml").write_text(yaml.safe_dump(PODGROUP))
    (root / "charts" / "templates" / "deployment.yaml").write_text(HELM_TEMPLATE)
    (root / "charts" / "values.yaml").write_text("replicas: 1\n---\nkind: ConfigMap\napiVersion: v1\n")
    (root / "examples").mkdir()
    (root / "examples" / "broken.yaml").write_text("kind: ModelServing\nspec: [unclosed\n")
    (root / "examples" / "binary.json").write_bytes(b"\xff\xfe\x00garbage\xff")
    return root


def test_scan_reads_the_crd_and_counts_what_it_skips(tmp_path):
    found = scan([checkout(tmp_path / "src")])
    assert [f.name for f in found.crds] == ["podgroups.scheduling.volcano.sh"]
    assert (found.helm_templates, found.unparsable, found.other_documents, found.problems) == (1, 2, 2, [])


def test_a_crd_that_does_not_parse_is_named_with_file_and_line_and_the_others_are_read(tmp_path):
    good = yaml.safe_dump(PODGROUP)
    broken = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: [unclosed\n"
    (tmp_path / "crds.yaml").write_text(f"{good}---\n{broken}---\n{good.replace('podgroups.', 'others.')}")
    found = scan([tmp_path / "crds.yaml"])
    assert [f.name for f in found.crds] == ["podgroups.scheduling.volcano.sh", "others.scheduling.volcano.sh"]
    start = good.count("\n") + 2  # the broken document's first line
    [problem] = found.problems
    assert problem.startswith(f"{tmp_path / 'crds.yaml'}:{start + 3}: a CustomResourceDefinition that does not parse: "), problem
    assert found.crds[1].line == start + 4


def test_a_crd_without_its_kind_is_a_problem_and_a_crd_list_is_read(tmp_path):
    nameless = {**PODGROUP, "spec": {**PODGROUP["spec"], "names": {}}}
    (tmp_path / "list.json").write_text(json.dumps({"kind": "CustomResourceDefinitionList", "items": [PODGROUP, nameless]}))
    found = scan([tmp_path])
    assert [f.name for f in found.crds] == ["podgroups.scheduling.volcano.sh"]
    assert found.problems == [f"{tmp_path / 'list.json'}:1: a CustomResourceDefinition that cannot be used: no spec.group or spec.names.kind"]


def test_refresh_of_a_checkout_outside_git(tmp_path, capsys):
    src = checkout(tmp_path / "src")
    target = tmp_path / "cache"
    assert main(["refresh", "--upstream", "volcano test", str(src)], target=target) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "cached podgroups.scheduling.volcano.sh (v1beta1) from charts/crds/podgroup.yaml [volcano test]",
        f"read 1 CRD(s); skipped 1 Helm template file(s), 2 unparsable file(s) or document(s), 2 other document(s); cache: {target}",
    ]
    [entry] = json.loads((target / "versions.json").read_text())
    assert "commit" not in entry and entry["source"] == "charts/crds/podgroup.yaml" and len(entry["sha256"]) == 64
    assert json.loads((target / entry["file"]).read_text())["spec"]["names"]["kind"] == "PodGroup"


def test_refresh_records_the_commit_of_a_git_work_tree(tmp_path, capsys):
    src = checkout(tmp_path / "src")
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "crds"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (src / ".git" / "stray.yaml").write_text("kind: [broken\n")  # hidden folders are not searched
    target = tmp_path / "cache"
    assert main(["refresh", str(src / "charts")], target=target) == 0
    [entry] = json.loads((target / "versions.json").read_text())
    assert entry["commit"] == head
    assert entry["upstream"] == head[:7]  # git describe --always without tags: the short commit
    assert entry["source"] == "crds/podgroup.yaml"
    assert f"@ {head}]" in capsys.readouterr().out


def test_a_second_copy_of_a_crd_replaces_the_first_and_is_said(tmp_path, capsys):
    src = checkout(tmp_path / "src")
    (src / "z-all-in-one.yaml").write_text(yaml.safe_dump(PODGROUP))
    target = tmp_path / "cache"
    assert main(["refresh", "--upstream", "x", str(src)], target=target) == 0
    err = capsys.readouterr().err
    assert f"podgroups.scheduling.volcano.sh: {src / 'z-all-in-one.yaml'}:1 replaces {src / 'charts/crds/podgroup.yaml'}:1 (the last read wins)" in err
    assert json.loads((target / "versions.json").read_text())[0]["source"] == "z-all-in-one.yaml"


def test_a_refresh_keeps_the_cached_crds_of_other_names(tmp_path):
    target = tmp_path / "cache"
    assert main(["refresh", "--upstream", "ours", str(CRDS / "podgroup.yaml")], target=target) == 0
    assert main(["refresh", "--upstream", "ours", str(CRDS / "autoscaling.yaml")], target=target) == 0
    names = [e["name"] for e in json.loads((target / "versions.json").read_text())]
    assert names == [
        "autoscalingpolicies.workload.serving.volcano.sh",
        "autoscalingpolicybindings.workload.serving.volcano.sh",
        "podgroups.scheduling.volcano.sh",
    ]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "missing", "no such file or directory"),
        (lambda tmp: Path("/dev/null"), "not a file or directory"),
        (lambda tmp: tmp, "no CustomResourceDefinition found under"),
    ],
    ids=["missing", "device", "no-crds"],
)
def test_unusable_path_exits_2_with_one_line(tmp_path, capsys, make, message):
    src = make(tmp_path / "src")
    if src == tmp_path / "src":
        src.mkdir()
        (src / "chart.yaml").write_text(HELM_TEMPLATE)
    assert main(["refresh", str(src)], target=tmp_path / "cache") == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err
    assert "Traceback" not in captured.err
    assert not (tmp_path / "cache").exists()


def test_broken_cache_index_is_one_line(tmp_path, capsys):
    target = tmp_path / "cache"
    target.mkdir()
    (target / "versions.json").write_text("{not json")
    assert main(["refresh", "--upstream", "x", str(checkout(tmp_path / "src"))], target=target) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"crds refresh: the CRD cache {target} cannot be read (") and err.count("\n") == 1
    assert main(["list"], target=target) == 2


def test_the_cache_is_under_xdg_cache_home(tmp_path):
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "servinggate" / "crds"
    assert cache_dir({"XDG_CACHE_HOME": "relative", "HOME": str(tmp_path)}) == Path(os.path.expanduser("~")) / ".cache" / "servinggate" / "crds"


def test_command_line_has_no_traceback_on_a_helm_chart(tmp_path):
    """The end-to-end form the README gives, on a chart folder of templates only."""
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "deployment.yaml").write_text(HELM_TEMPLATE)
    proc = run_webhook(["crds", "refresh", str(tmp_path / "chart")], cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("crds refresh: no CustomResourceDefinition found under")


def test_refreshed_crds_are_what_check_list_and_version_use(tmp_path):
    """`crds refresh` with no target fills $XDG_CACHE_HOME's cache; `check` (no --crds) validates
    against it, and `crds list` and `version` say where each cached CRD came from."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("SERVINGGATE_CRDS")

    def webhook(*args: str) -> subprocess.CompletedProcess:
        return run_webhook([*args], cwd=REPO, env=env, timeout=120)

    fixtures = tmp_path / "ours"  # outside any git work tree: no commit recorded
    shutil.copytree(CRDS, fixtures)
    bad = tmp_path / "ms.yaml"
    bad.write_text((REPO / "tests" / "fixtures" / "verdicts" / "cases" / "ms-recovery-policy-unsupported.yaml").read_text())
    before = webhook("check", str(bad))
    assert before.returncode == 0 and "no CRD for ModelServing" in before.stderr
    assert webhook("crds", "refresh", "--upstream", "our fixtures", str(fixtures)).returncode == 0
    after = webhook("check", str(bad))
    assert after.returncode == 1 and 'spec.recoveryPolicy: Unsupported value: "GroupRecreate"' in after.stdout
    assert "no CRD for" not in after.stderr
    listed = webhook("crds", "list").stdout
    assert "modelservings.workload.serving.volcano.sh  v1alpha1  our fixtures, modelserving.yaml  sha256:" in listed
    version = webhook("version").stdout
    assert f"  cache {tmp_path / 'xdg' / 'servinggate' / 'crds'} (python -m webhook crds refresh PATH):" in version
    assert "    modelservings.workload.serving.volcano.sh v1alpha1: our fixtures, modelserving.yaml" in version


def test_a_crd_quoting_braces_in_a_description_is_read_and_a_templated_one_is_not(tmp_path):
    described = {**PODGROUP, "spec": {**PODGROUP["spec"], "versions": [dict(PODGROUP["spec"]["versions"][0])]}}
    described["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": {"type": "object", "description": "use {{ .Values.x }} in your templates"}}
    (tmp_path / "described.yaml").write_text(yaml.safe_dump(described))
    templated = {**PODGROUP, "metadata": {"name": "{{ .Values.prefix }}podgroups.scheduling.volcano.sh"}}
    (tmp_path / "templated.yaml").write_text(yaml.safe_dump(templated))
    found = scan([tmp_path])
    assert [str(f.file.name) for f in found.crds] == ["described.yaml"]
    assert (found.helm_templates, found.problems) == (1, [])
