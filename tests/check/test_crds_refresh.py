"""`python -m webhook crds refresh DIR`: a checkout is read for its CRD documents alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from webhook.crds.refresh import main, scan

REPO = Path(__file__).resolve().parents[2]
PODGROUP = json.loads((REPO / "webhook" / "crds" / "podgroups.scheduling.volcano.sh.json").read_text())
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


def bundle(root: Path) -> Path:
    target = root / "bundle"
    target.mkdir()
    (target / "versions.json").write_text("[]")
    return target


def test_scan_reads_the_crd_and_counts_what_it_skips(tmp_path):
    found = scan([checkout(tmp_path / "src")])
    assert [f.crd["metadata"]["name"] for f in found.crds] == ["podgroups.scheduling.volcano.sh"]
    assert (found.helm_templates, found.unparsable, found.other_documents) == (1, 2, 2)


def test_refresh_of_a_checkout_outside_git(tmp_path, capsys):
    src = checkout(tmp_path / "src")
    target = bundle(tmp_path)
    assert main(["refresh", "--add", "--upstream", "volcano test", str(src)], target=target) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "refreshed podgroups.scheduling.volcano.sh (v1beta1) from charts/crds/podgroup.yaml [volcano test]",
        "read 1 CRD(s); skipped 1 Helm template file(s), 2 unparsable file(s), 2 other document(s)",
    ]
    [entry] = json.loads((target / "versions.json").read_text())
    assert "commit" not in entry and entry["source"] == "charts/crds/podgroup.yaml"
    assert json.loads((target / entry["file"]).read_text())["spec"]["names"]["kind"] == "PodGroup"


def test_refresh_records_the_commit_of_a_git_work_tree(tmp_path, capsys):
    src = checkout(tmp_path / "src")
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "crds"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (src / ".git" / "stray.yaml").write_text("kind: [broken\n")  # hidden folders are not searched
    target = bundle(tmp_path)
    assert main(["refresh", "--add", str(src / "charts")], target=target) == 0
    [entry] = json.loads((target / "versions.json").read_text())
    assert entry["commit"] == head
    assert entry["upstream"] == head[:7]  # git describe --always without tags: the short commit
    assert entry["source"] == "crds/podgroup.yaml"
    assert f"@ {head}]" in capsys.readouterr().out


def test_a_second_copy_of_a_crd_keeps_the_first(tmp_path, capsys):
    src = checkout(tmp_path / "src")
    (src / "z-all-in-one.yaml").write_text(yaml.safe_dump(PODGROUP))
    target = bundle(tmp_path)
    assert main(["refresh", "--add", "--upstream", "x", str(src)], target=target) == 0
    assert "ignored a second copy of podgroups.scheduling.volcano.sh in " in capsys.readouterr().out
    assert json.loads((target / "versions.json").read_text())[0]["source"] == "charts/crds/podgroup.yaml"


def test_crds_not_bundled_need_add(tmp_path, capsys):
    target = bundle(tmp_path)
    assert main(["refresh", str(checkout(tmp_path / "src"))], target=target) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "use --add" in err
    assert json.loads((target / "versions.json").read_text()) == []


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
    target = bundle(tmp_path)
    assert main(["refresh", str(src)], target=target) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err
    assert "Traceback" not in captured.err


def test_broken_bundle_index_is_one_line(tmp_path, capsys):
    target = bundle(tmp_path)
    (target / "versions.json").write_text("{not json")
    assert main(["refresh", "--add", "--upstream", "x", str(checkout(tmp_path / "src"))], target=target) == 2
    err = capsys.readouterr().err
    assert err.startswith("crds refresh: cannot update the bundle in ") and err.count("\n") == 1


def test_command_line_has_no_traceback_on_a_helm_chart(tmp_path):
    """The end-to-end form the README gives, on a chart folder of templates only."""
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "deployment.yaml").write_text(HELM_TEMPLATE)
    proc = subprocess.run([sys.executable, "-m", "webhook", "crds", "refresh", str(tmp_path / "chart")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("crds refresh: no CustomResourceDefinition found under")


def test_bundled_kthena_crds_name_the_commit_they_come_from(capsys):
    """ModelServing and AutoscalingPolicy are Kthena's after kthena#1626, refreshed from a checkout."""
    assert main(["list"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    for name in ("modelservings.workload.serving.volcano.sh", "autoscalingpolicies.workload.serving.volcano.sh"):
        assert lines[name].endswith("commit:2029995cfa57"), lines[name]
    assert "commit:" not in lines["podgroups.scheduling.volcano.sh"]
