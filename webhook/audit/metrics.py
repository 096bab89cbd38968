"""What the auditor reports about its runs, for Prometheus (served with /healthz on the health
port by webhook/plainhttp.py, as the reconciler's are).

The findings gauge holds the last completed run's counts: a finding fixed since is gone from
it, which is what an alert on "deny findings > 0" before switching a rule to `deny` wants.
"""

from __future__ import annotations

import prometheus_client as prom

from ..kube.reflector import ReflectorMetrics
from .auditing import AuditRun


class AuditMetrics:
    def __init__(self, registry: prom.CollectorRegistry | None = None) -> None:
        self.registry = registry or prom.CollectorRegistry()
        r = self.registry
        self.findings = prom.Gauge("servinggate_audit_findings", "findings of the last completed audit, by rule and action", ["rule", "action"], registry=r)
        self.objects = prom.Gauge("servinggate_audit_objects", "objects judged by the last completed audit, by resource", ["resource"], registry=r)
        self.duration = prom.Gauge("servinggate_audit_duration_seconds", "how long the last completed audit took", registry=r)
        self.last_run = prom.Gauge("servinggate_audit_last_run_timestamp_seconds", "when the last audit completed (Unix time)", registry=r)
        self.runs = prom.Counter("servinggate_audit_runs", "audit runs, by outcome (ok, failed)", ["outcome"], registry=r)
        self.leader = prom.Gauge("servinggate_audit_leader", "1 while this replica holds the auditor's Lease (or runs without election)", registry=r)
        self.listwatch = ReflectorMetrics(r)  # the lists of each run, and the failed ones (kube/reflector.py)

    def completed(self, run: AuditRun, now: float) -> None:
        self.findings.clear()
        for (rule, action), n in sorted(run.counts().items()):
            self.findings.labels(rule, action).set(n)
        self.objects.clear()
        for resource, n in sorted(run.objects.items()):
            self.objects.labels(resource).set(n)
        self.duration.set(run.seconds)
        self.last_run.set(now)
        self.runs.labels("ok").inc()

    def failed(self) -> None:
        self.runs.labels("failed").inc()
