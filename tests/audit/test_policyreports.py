"""`audit --write-reports`: one PolicyReport per namespace with findings, rewritten each run,
gone when the namespace has none left; and the reports as data (pure)."""

from __future__ import annotations

import logging

from auditobjects import kubeconfig, modelserving

from webhook.__main__ import main
from webhook.audit.cli import Auditor
from webhook.audit.judging import Finding, Judged
from webhook.audit.reports import MAX_RESULTS, reports
from webhook.audit.settings import AuditSettings
from webhook.config import compose
from webhook.kubeversion import KubeVersion

REPORTS = ("wgpolicyk8s.io", "policyreports")
MS = ("workload.serving.volcano.sh", "modelservings")


def _run(api, tmp_path, *args: str) -> int:
    return main(["audit", "--kubeconfig", kubeconfig(api, tmp_path), "--write-reports", *args])


def _report(api, namespace: str) -> dict | None:
    return api.customs[REPORTS].get((namespace, "servinggate"))


def test_a_report_per_namespace_with_a_fail_result_per_broken_object(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("good", "team-a"))
    cluster.add_custom(modelserving("bad-image", "team-a", spaced_image=True))
    cluster.add_custom(modelserving("bad-image", "team-b", spaced_image=True))
    assert _run(cluster, tmp_path) == 1
    assert set(cluster.customs[REPORTS]) == {("team-a", "servinggate"), ("team-b", "servinggate")}
    report = _report(cluster, "team-a")
    assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2" and report["kind"] == "PolicyReport"
    assert report["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "servinggate"}
    assert report["summary"] == {"pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    [result] = report["results"]
    assert (result["source"], result["policy"], result["rule"], result["result"]) == (
        "servinggate",
        "modelservings.kthena.images",
        "modelservings.kthena.images",
        "fail",
    )
    assert result["resources"] == [
        {
            "apiVersion": "workload.serving.volcano.sh/v1alpha1",
            "kind": "ModelServing",
            "namespace": "team-a",
            "name": "bad-image",
            "uid": "uid-team-a-bad-image",
        }
    ]
    assert result["properties"] == {"action": "deny", "field": "spec.template.roles[0].entryTemplate.spec.containers[0].image"}
    assert result["message"].endswith("image cannot contain spaces")


def test_a_fixed_and_a_deleted_object_leave_no_stale_result(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("fixed", "team-a", spaced_image=True))
    cluster.add_custom(modelserving("stays", "team-a", upper_role=True))
    cluster.add_custom(modelserving("deleted", "team-b", spaced_image=True))
    assert _run(cluster, tmp_path) == 1
    first_version = _report(cluster, "team-a")["metadata"]["resourceVersion"]
    cluster.add_custom(modelserving("fixed", "team-a"))  # fixed in place
    cluster.delete_custom(*MS, "team-b", "deleted")
    assert _run(cluster, tmp_path) == 1
    report = _report(cluster, "team-a")
    assert {r["resources"][0]["name"] for r in report["results"]} == {"stays"}
    assert report["metadata"]["resourceVersion"] != first_version
    assert _report(cluster, "team-b") is None  # no finding left: the report is deleted
    [update] = cluster.calls("PUT", r"/policyreports/servinggate$")
    assert update.status == 200  # sent with the resourceVersion read: the fake refuses others with 409
    cluster.add_custom(modelserving("stays", "team-a"))
    assert _run(cluster, tmp_path) == 0
    assert not cluster.customs[REPORTS]


def test_reports_of_others_are_left_alone(cluster, tmp_path, capsys):
    theirs = {
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": "PolicyReport",
        "metadata": {"name": "kyverno-xyz", "namespace": "team-a", "labels": {"app.kubernetes.io/managed-by": "kyverno"}},
        "results": [],
    }
    cluster.add_custom(theirs, plural="policyreports")
    assert _run(cluster, tmp_path) == 0
    assert ("team-a", "kyverno-xyz") in cluster.customs[REPORTS]


def test_a_conflicting_update_is_read_again_and_retried(cluster, tmp_path, capsys):
    cluster.add_custom(modelserving("bad", "team-a", spaced_image=True))
    assert _run(cluster, tmp_path) == 1
    # someone else writes the report between our list and our update
    cluster.before.append(
        ("PUT", r"/policyreports/servinggate$", lambda api: api.edit_custom(*REPORTS, "team-a", "servinggate", lambda o: o.update(results=[])))
    )
    assert _run(cluster, tmp_path) == 1
    assert [c.status for c in cluster.calls("PUT", r"/policyreports/")] == [409, 200]
    assert len(_report(cluster, "team-a")["results"]) == 1


def test_without_the_crd_nothing_is_written_and_the_verdict_stands(fake_api, tmp_path, capsys):
    fake_api.add_custom(modelserving("bad", "team-a", spaced_image=True))
    assert _run(fake_api, tmp_path) == 1
    err = capsys.readouterr().err
    assert err.count("PolicyReport CRD") == 1 and "docs/audit.md" in err
    assert not fake_api.calls("POST") and not fake_api.calls("PUT")


def test_a_missing_crd_is_logged_once_across_runs_and_reports_follow_its_install(fake_api, caplog):
    """The auditor keeps running without the CRD (ServingGate does not ship it): one log line,
    no write, as with reports off; once someone installs it, the next run writes the report."""
    fake_api.add_custom(modelserving("bad", "team-a", spaced_image=True))
    auditor = Auditor(compose(AuditSettings, write_reports=True, kubernetes_version=KubeVersion(1, 28)), fake_api.client())
    with caplog.at_level(logging.WARNING, logger="servinggate.audit"):
        assert auditor.run()[1] is None
        assert auditor.run()[1] is None
    assert [r.getMessage().count("PolicyReport CRD") for r in caplog.records] == [1]
    assert not fake_api.calls("POST") and not fake_api.calls("PUT")
    fake_api.install_custom(*REPORTS)
    written = auditor.run()[1]
    assert written is not None and written.created == 1
    assert _report(fake_api, "team-a")["summary"]["fail"] == 1


def _judged(namespace: str, name: str, result: str) -> Judged:
    return Judged(
        "modelservings",
        "workload.serving.volcano.sh/v1alpha1",
        "ModelServing",
        namespace,
        name,
        f"uid-{name}",
        [Finding("modelservings.kthena.images", "deny" if result == "fail" else "warn", result, "spec.x", "bad")],
    )  # type: ignore[arg-type]


def test_a_report_lists_at_most_1000_results_fails_first_and_counts_them_all():
    judged = [_judged("ns", f"w{i:04}", "warn") for i in range(600)] + [_judged("ns", f"f{i:04}", "fail") for i in range(600)]
    report = reports(judged, 1700000000)["ns"]
    assert len(report["results"]) == MAX_RESULTS == 1000
    assert report["summary"] == {"pass": 0, "fail": 600, "warn": 600, "error": 0, "skip": 0}
    assert [r["result"] for r in report["results"][:600]] == ["fail"] * 600
    assert report["results"][0]["timestamp"] == {"seconds": 1700000000, "nanos": 0}


def test_audit_action_findings_are_warn_results_with_their_action():
    judged = [Judged("modelservings", "v", "ModelServing", "ns", "n", "", [Finding("r", "audit", "warn", None, "m")])]
    [result] = reports(judged, 0)["ns"]["results"]
    assert (result["result"], result["properties"], result["message"]) == ("warn", {"action": "audit"}, "m")
    assert "uid" not in result["resources"][0]
