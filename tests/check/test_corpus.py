"""The verdict corpus: manifests and what a real kube-apiserver 1.28.7 with Kthena's and Volcano's CRDs said
about each (tests/fixtures/verdicts/, recorded by record.py). `check` must give the same verdict,
the same status code (validated against our own small CRDs, tests/fixtures/crds/), and, for a refusal, the same errors: every `field: message` of the API
server's Status causes (order aside: the API server's order follows Go map iteration), or the
same message for a 400 and for kubectl's `no matches for kind`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import CRDS

from webhook.check import run
from webhook.policies.settings import PolicySettings

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "verdicts"
VERDICTS = json.loads((ROOT / "verdicts.json").read_text())
API_SERVER_STEPS = ("mapping", "decode", "validation")  # refusals before any webhook is asked


def check_case(name: str):
    case = ROOT / "cases" / f"{name}.yaml"
    old = ROOT / "cases" / f"{name}.old.yaml"
    results, problems = run([str(case)], [str(old)] if old.exists() else [], PolicySettings(), crd_paths=[str(CRDS)], kubernetes_version="1.28")
    assert problems == []
    [result] = results
    return result


def test_the_corpus_covers_the_issue_table():
    names = set(VERDICTS)
    for needed in (
        "ms-unknown-gangPolcy",
        "ms-unknown-minRoleReplica",
        "ms-unknown-workerReplica",
        "ms-recovery-policy-unsupported",
        "ms-role-name-too-long",
        "ms-role-name-pattern",
        "ms-role-names-not-unique",
        "ms-entry-template-missing",
        "ms-unknown-version",
        "hpa-unknown-minReplica",
        "ms-without-replicas-defaulted",
        "ms-update-min-role-replicas-changed",
        "ms-update-gang-policy-removed",
    ):
        assert needed in names
    assert all(v["recorded"].startswith("kube-apiserver v1.28") for v in VERDICTS.values())


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_check_agrees_with_the_api_server(name):
    verdict = VERDICTS[name]
    result = check_case(name)
    ours = sorted(f"{f.field}: {f.message}" for f in result.errors if f.rule in ("schema", "cel", "decode"))
    if verdict["kubectl_exit"] == 0:
        assert result.reason not in API_SERVER_STEPS, (result.message, ours)
        return
    status = verdict["status"]
    if status is None:  # kubectl could not map the kind: no request was sent
        assert result.reason == "mapping"
        assert result.message in verdict["kubectl"]
        return
    assert (result.code, result.reason in API_SERVER_STEPS) == (status["code"], True), result.message
    if status["code"] == 422:
        assert ours == sorted(f"{c['field']}: {c['message']}" for c in status["causes"])
        if len(status["causes"]) == 1:
            assert result.message == status["message"]
    else:
        assert result.message == status["message"]


WARN_CASES = sorted(name for name, v in VERDICTS.items() if "warn" in v)


def test_some_cases_were_recorded_with_field_validation_warn():
    assert {"ms-unknown-gangPolcy", "ms-unknown-workerReplica"} <= set(WARN_CASES)


@pytest.mark.parametrize("name", WARN_CASES)
def test_field_validation_warn_agrees_with_the_api_server(name):
    """With Warn the API server drops unknown fields with a warning each, then validates what is
    left: the misspelled workerReplicas leaves the required one missing."""
    warn = VERDICTS[name]["warn"]
    results, problems = run(
        [str(ROOT / "cases" / f"{name}.yaml")], [], PolicySettings(), crd_paths=[str(CRDS)], field_validation="Warn", kubernetes_version="1.28"
    )
    assert problems == []
    [result] = results
    assert sorted(f.message for f in result.warnings if f.rule == "schema") == sorted(warn["warnings"])
    if warn["code"] in (200, 201):
        assert result.reason not in API_SERVER_STEPS
    else:
        assert (result.code, result.reason) == (warn["code"], "validation")
        ours = sorted(f"{f.field}: {f.message}" for f in result.errors if f.rule in ("schema", "cel", "decode"))
        assert ours == sorted(f"{c['field']}: {c['message']}" for c in warn["causes"])
