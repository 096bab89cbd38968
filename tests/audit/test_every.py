"""`audit --every`: a run per period with metrics and a log line; a failed run is counted and the
next one tried; with leader election only the leader audits."""

from __future__ import annotations

import threading

import prometheus_client as prom
import pytest
from auditobjects import modelserving

from webhook.audit.cli import Auditor, keep_auditing
from webhook.audit.metrics import AuditMetrics
from webhook.audit.settings import AuditSettings, duration
from webhook.config import compose
from webhook.kube.errors import KubeAccessError


def _value(metrics: AuditMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_durations():
    assert [duration(x) for x in ("10m", "1h30m", "90s", "600", "0")] == [600, 5400, 90, 600, 0]


def test_runs_again_after_a_failed_run_and_keeps_metrics(cluster, caplog):
    cluster.add_custom(modelserving("bad", "team-a", spaced_image=True))
    cluster.fail("GET", r"/modelservings$", 500, "InternalError", "etcd is away", times=1)
    settings = compose(AuditSettings, every=1, write_reports=True)
    metrics, stop = AuditMetrics(prom.CollectorRegistry()), threading.Event()
    runs = []
    auditor = Auditor(settings, cluster.client())
    real = auditor.run

    def counted():
        runs.append(1)
        if len(runs) == 2:
            stop.set()
        return real()

    auditor.run = counted  # type: ignore[method-assign]
    with caplog.at_level("INFO", logger="servinggate.audit"):
        assert keep_auditing(auditor, stop, metrics) == 0
    assert _value(metrics, "servinggate_audit_runs_total", outcome="failed") == 1
    assert _value(metrics, "servinggate_audit_runs_total", outcome="ok") == 1
    assert _value(metrics, "servinggate_audit_findings", rule="modelservings.kthena.images", action="deny") == 1
    assert _value(metrics, "servinggate_audit_objects", resource="modelservings") == 1
    assert _value(metrics, "servinggate_audit_duration_seconds") > 0
    assert _value(metrics, "servinggate_audit_last_run_timestamp_seconds") > 1.6e9
    lines = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    assert [m["msg"] for m in lines if m["msg"].startswith("audit run")] == ["audit run failed", "audit run"]
    assert [m["kubernetesVersion"] for m in lines if m["msg"] == "audit run"] == ["1.34"]  # the fake's /version
    assert ("team-a", "servinggate") in cluster.customs[("wgpolicyk8s.io", "policyreports")]


class _Follower:
    def __init__(self) -> None:
        self.leading = False

    def is_leader(self) -> bool:
        return self.leading

    def run(self, stop, on_change) -> None:
        stop.wait()


def test_only_the_leader_audits(cluster):
    settings = compose(AuditSettings, every=1)
    metrics, stop, elector = AuditMetrics(prom.CollectorRegistry()), threading.Event(), _Follower()
    auditor = Auditor(settings, cluster.client())
    timer = threading.Timer(1.5, stop.set)
    timer.start()
    keep_auditing(auditor, stop, metrics, elector=elector)  # type: ignore[arg-type]
    assert not cluster.calls("GET", r"/modelservings$")
    elector.leading = True
    stop.clear()
    threading.Timer(1.0, stop.set).start()
    keep_auditing(auditor, stop, metrics, elector=elector)  # type: ignore[arg-type]
    assert cluster.calls("GET", r"/modelservings$")


def test_the_version_is_read_at_start_and_again_after_a_failed_run(cluster, monkeypatch):
    from webhook.audit import auditing
    from webhook.kubeversion import KubeVersion

    judged_at = []
    real_judge = auditing.judge

    def judge(obj, kind, ctx):
        judged_at.append(ctx.kubernetes_version)
        return real_judge(obj, kind, ctx)

    monkeypatch.setattr(auditing, "judge", judge)
    cluster.add_custom(modelserving("ms", "team-a"))
    cluster.version = {"major": "1", "minor": "29", "gitVersion": "v1.29.0"}
    auditor = Auditor(AuditSettings(), cluster.client())
    auditor.run()
    cluster.version = {"major": "1", "minor": "30", "gitVersion": "v1.30.0"}
    auditor.run()  # no failure since the start: the version is not read again
    assert judged_at == [KubeVersion(1, 29), KubeVersion(1, 29)]
    cluster.fail("GET", r"/modelservings$", 500, "InternalError", "etcd is away", times=1)
    with pytest.raises(KubeAccessError):  # the failed run keep_auditing logs
        auditor.run()
    run, _ = auditor.run()
    assert judged_at[-1] == KubeVersion(1, 30) and run.kubernetes_version == KubeVersion(1, 30)
    assert len(cluster.calls("GET", "^/version/?$")) == 2


def test_a_named_version_is_never_read(cluster):
    from webhook.kubeversion import KubeVersion

    auditor = Auditor(compose(AuditSettings, kubernetes_version=KubeVersion(1, 28)), cluster.client())
    auditor.run()
    assert auditor.kubernetes.current.version == KubeVersion(1, 28) and cluster.calls("GET", "^/version/?$") == []
