"""Where `check` takes its CRDs from: `--crds` (repeatable; SERVINGGATE_CRDS, the config file),
the cache, the cluster with `--kubeconfig`; what it says when a kind has none, when a later CRD
replaces an earlier one, and when a `--crds` path cannot be used."""

from __future__ import annotations

import shutil

import pytest
import yaml
from support import CRDS, REPO

from webhook.__main__ import main

CASES = REPO / "tests" / "fixtures" / "verdicts" / "cases"
UNSUPPORTED_RECOVERY = CASES / "ms-recovery-policy-unsupported.yaml"  # refused by the CRD's enum alone
RECOVERY_ERROR = 'spec.recoveryPolicy: Unsupported value: "GroupRecreate"'


def check(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_crds(monkeypatch):
    """No CRD anywhere: SERVINGGATE_CRDS unset, the cache (conftest's, per test) empty."""
    monkeypatch.delenv("SERVINGGATE_CRDS")


def test_a_kind_without_a_crd_is_judged_by_our_rules_alone_with_one_note(no_crds, tmp_path, capsys):
    two = tmp_path / "two.yaml"
    ms = yaml.safe_load(UNSUPPORTED_RECOVERY.read_text())
    other = {**ms, "metadata": {**ms["metadata"], "name": "other"}}
    two.write_text(yaml.safe_dump_all([ms, other]))
    code, out, err = check(capsys, str(two))
    assert code == 0 and RECOVERY_ERROR not in out  # the enum is the CRD's: not known without it
    notes = [line for line in err.splitlines() if "no CRD for" in line]
    assert notes == [
        "check: no CRD for ModelServing (workload.serving.volcano.sh/v1alpha1): the API server's schema, defaults and CEL rules are skipped for it, "
        "our rules still judge it; give its CRD with --crds PATH (or SERVINGGATE_CRDS, crds refresh PATH, --kubeconfig)"
    ]


def test_without_a_crd_our_rules_still_refuse(no_crds, tmp_path, capsys):
    ms = yaml.safe_load((CASES / "ms-valid.yaml").read_text())
    ms["spec"]["template"]["roles"][0]["name"] = "Prefill"  # the CRD's pattern allows it, our role-names rule does not
    ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"] = {"Prefill": 2, "decode": 1}
    (tmp_path / "ms.yaml").write_text(yaml.safe_dump(ms))
    code, out, err = check(capsys, str(tmp_path / "ms.yaml"))
    assert code == 1 and "modelservings.kthena.role-names" in out
    assert "no CRD for ModelServing" in err


def test_crds_flag_env_and_config_file_each_give_the_crds(no_crds, tmp_path, capsys, monkeypatch):
    assert check(capsys, "--crds", str(CRDS), str(UNSUPPORTED_RECOVERY))[0] == 1
    assert check(capsys, "--crds", str(CRDS / "modelserving.yaml"), str(UNSUPPORTED_RECOVERY))[0] == 1
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"crds": [str(CRDS / "podgroup.yaml"), str(CRDS / "modelserving.yaml")]}))
    code, out, _ = check(capsys, "--config", str(config), str(UNSUPPORTED_RECOVERY))
    assert code == 1 and RECOVERY_ERROR in out
    monkeypatch.setenv("SERVINGGATE_CRDS", f"{CRDS / 'podgroup.yaml'}:{CRDS / 'modelserving.yaml'}")
    code, out, err = check(capsys, str(UNSUPPORTED_RECOVERY))
    assert code == 1 and RECOVERY_ERROR in out and "no CRD for" not in err


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda tmp: tmp / "missing", "no such file or directory"),
        (lambda tmp: tmp, "no CustomResourceDefinition found (skipped 0 Helm template file(s), 0 unparsable file(s) or document(s), 1 other document(s))"),
    ],
    ids=["missing", "no-crd"],
)
def test_an_unusable_crds_path_exits_2_with_one_line(tmp_path, capsys, make, why):
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    path = make(tmp_path)
    code, out, err = check(capsys, "--crds", str(path), str(UNSUPPORTED_RECOVERY))
    assert (code, out, err) == (2, "", f"check: --crds {path}: {why}\n")


def test_a_crd_that_does_not_parse_is_named_and_the_others_are_read(no_crds, tmp_path, capsys):
    folder = tmp_path / "crds"
    shutil.copytree(CRDS, folder)
    with open(folder / "modelserving.yaml", "a") as fh:
        fh.write("---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {group: [unclosed\n")
    lines = (folder / "modelserving.yaml").read_text().count("\n")
    code, out, err = check(capsys, "--crds", str(folder), str(UNSUPPORTED_RECOVERY))
    assert code == 1 and RECOVERY_ERROR in out
    [problem] = [line for line in err.splitlines() if "does not parse" in line]
    assert problem.startswith(f"check: {folder / 'modelserving.yaml'}:{lines + 1}: a CustomResourceDefinition that does not parse: "), problem


def test_the_last_crd_given_for_a_kind_wins_and_check_says_which(no_crds, tmp_path, capsys):
    loose = yaml.safe_load((CRDS / "modelserving.yaml").read_text())
    spec = loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del spec["properties"]["recoveryPolicy"]["enum"]
    (tmp_path / "loose.yaml").write_text(yaml.safe_dump(loose))
    code, _, err = check(capsys, "--crds", str(CRDS), "--crds", str(tmp_path / "loose.yaml"), str(UNSUPPORTED_RECOVERY))
    assert code == 0
    assert (
        f"check: the CRD of ModelServing.workload.serving.volcano.sh from {tmp_path / 'loose.yaml'} replaces the one from {CRDS / 'modelserving.yaml'} "
        "(the last given wins)"
    ) in err.splitlines()
    code, out, _ = check(capsys, "--crds", str(tmp_path / "loose.yaml"), "--crds", str(CRDS), str(UNSUPPORTED_RECOVERY))
    assert code == 1 and RECOVERY_ERROR in out


def test_crds_given_replace_the_cached_ones(no_crds, tmp_path, capsys):
    loose = yaml.safe_load((CRDS / "modelserving.yaml").read_text())
    del loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["recoveryPolicy"]["enum"]
    (tmp_path / "loose.yaml").write_text(yaml.safe_dump(loose))
    assert main(["crds", "refresh", "--upstream", "loose", str(tmp_path / "loose.yaml")]) == 0
    capsys.readouterr()
    code, _, err = check(capsys, str(UNSUPPORTED_RECOVERY))
    assert code == 0 and "no CRD for" not in err  # the cache's loose CRD
    code, out, err = check(capsys, "--crds", str(CRDS), str(UNSUPPORTED_RECOVERY))
    assert code == 1 and RECOVERY_ERROR in out
    assert "from the cache (loose, loose.yaml) (the last given wins)" in err


def test_an_unreadable_cache_is_said_and_skipped(no_crds, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "servinggate" / "crds").mkdir(parents=True)
    (tmp_path / "servinggate" / "crds" / "versions.json").write_text("{not json")
    code, _, err = check(capsys, "--crds", str(CRDS), str(UNSUPPORTED_RECOVERY))
    assert code == 1
    assert err.startswith(f"check: the CRD cache {tmp_path / 'servinggate' / 'crds'} cannot be read (")


def test_with_a_kubeconfig_the_clusters_crds_are_used(fake_api, no_crds, tmp_path, capsys):
    """The cluster serves the ModelServing CRD: check validates against it (the cache is not read)."""
    fake_api.add_custom(yaml.safe_load((CRDS / "modelserving.yaml").read_text()), plural="customresourcedefinitions")
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    code, out, err = check(capsys, "--kubeconfig", str(kubeconfig), str(UNSUPPORTED_RECOVERY))
    assert code == 1 and RECOVERY_ERROR in out and "no CRD for" not in err
    pg = CASES / "podgroup-valid.yaml"  # the cluster has no PodGroup CRD
    code, _, err = check(capsys, "--kubeconfig", str(kubeconfig), str(pg))
    assert code == 0 and "no CRD for PodGroup (scheduling.volcano.sh/v1beta1)" in err


def test_help_says_which_crds_are_in_use(capsys, monkeypatch):
    monkeypatch.setenv("SERVINGGATE_CRDS", str(CRDS / "modelserving.yaml"))
    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    assert "CRDs check validates against (a later one wins for the same kind; --kubeconfig: the cluster's CRDs in place of the cache):" in out
    assert f"  --crds {CRDS / 'modelserving.yaml'}:\n    modelservings.workload.serving.volcano.sh v1alpha1: {CRDS / 'modelserving.yaml'}\n" in out
