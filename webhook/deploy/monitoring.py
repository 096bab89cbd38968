"""The alerts (a Prometheus Operator PrometheusRule) and the Grafana dashboard we ship, written by
`python -m webhook manifests` into the kustomize components `components/prometheus-rules` and
`components/grafana-dashboard`, and into the chart (templates/generated-monitoring.yaml, values
`prometheusRule` and `grafanaDashboard`). This module is their one source; docs/operations.md
says what each alert means and what to do.

What they are built from:
- the webhook entries' names (configurations.py), for the API server's own metrics of our
  webhooks (`apiserver_admission_webhook_*`, label `name`);
- the webhooks' `timeoutSeconds`: the latency alert counts reviews slower than the largest bucket
  of our latency histogram at or below half the timeout (the histogram stops at 2.5 s, so a
  quantile could never reach a 5 s timeout);
- the auditor's interval (`audit --every`): an audit is stale after three intervals.

The chart turns the last two into template actions, so they follow `validating.timeoutSeconds`,
`mutating.timeoutSeconds` and `audit.every`. Every metric named here is checked against the
product's registries, every expression parsed and every alert run on synthetic series by
`promtool test rules` (tests/deploy/test_monitoring.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..policies.registry import Rule
from .configurations import LABELS, NAMESPACE, TIMEOUTS, configurations
from .yamlfile import HEADER, dump

# fmt: off
# The module is tables (alerts and panels, one call each, arguments grouped as they read): the
# formatter would put every argument on a line of its own and hide the table.
RULES_COMPONENT = Path("components") / "prometheus-rules"
DASHBOARD_COMPONENT = Path("components") / "grafana-dashboard"
RULE_NAME = "servinggate"
DASHBOARD_NAME = "servinggate-dashboard"
DASHBOARD_FILE = "servinggate.json"
# The label Grafana's dashboard sidecar (kube-prometheus-stack, the grafana chart) looks for.
SIDECAR_LABEL = {"grafana_dashboard": "1"}

# The upper bounds of servinggate_admission_request_duration_seconds (webhook/serving/metrics.py,
# which this layer may not import; a test keeps the two equal), as Prometheus writes `le`.
LATENCY_BUCKETS = ("0.0005", "0.001", "0.002", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5")
# The auditor's interval in the kustomize base (auditor-deployment.yaml; a test compares).
AUDIT_EVERY = "10m"
STALE_INTERVALS = 3
# The Services the ServiceMonitor scrapes; the Prometheus Operator names the job after them.
WEBHOOK_JOB = "servinggate-webhook-metrics"
RECONCILER_JOB = "servinggate-reconciler-metrics"
WEBHOOK_DEPLOYMENT = "servinggate-webhook"

ENDPOINTS = {"validate": "validating", "mutate": "mutating"}  # our endpoint label -> chart values group


@dataclass(frozen=True)
class Knobs:
    """What depends on the install: the `le` bucket of each endpoint's latency alert, and the
    seconds after which an audit is stale. Plain values for kustomize, markers for the chart."""

    le: dict[str, str]
    audit_stale: str


def latency_bucket(timeout_seconds: float) -> str:
    """The largest latency bucket at or below half the webhook's timeout."""
    fitting = [b for b in LATENCY_BUCKETS if float(b) <= timeout_seconds / 2]
    return fitting[-1] if fitting else LATENCY_BUCKETS[0]


def duration_seconds(text: str) -> int:
    """`10m`, `1h30m`, `90s` (the chart schema's pattern for audit.every) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+)([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration of h, m and s: {text!r}")
    return sum(int(n) * units[u] for n, u in parts)


def default_knobs() -> Knobs:
    return Knobs(le={e: latency_bucket(TIMEOUTS[e]) for e in ENDPOINTS},
                 audit_stale=str(STALE_INTERVALS * duration_seconds(AUDIT_EVERY)))


def webhook_names(rules: list[Rule]) -> list[str]:
    return sorted(h["name"] for doc in configurations(rules) for h in doc["webhooks"])


def names_regex(rules: list[Rule]) -> str:
    r"""Our webhook entries' names as a PromQL regex inside a double-quoted string, where a dot is
    written `\\.`: PromQL reads the string's escapes first, then RE2 its own."""
    return "|".join(n.replace(".", "\\\\.") for n in webhook_names(rules))


def _alert(name: str, expr: str, severity: str, summary: str, description: str, for_: str = "") -> dict[str, Any]:
    alert: dict[str, Any] = {"alert": name, "expr": expr}
    if for_:
        alert["for"] = for_
    alert["labels"] = {"severity": severity}
    alert["annotations"] = {"summary": summary, "description": description}
    return alert


def _webhook_alerts(rules: list[Rule], knobs: Knobs) -> list[dict[str, Any]]:
    names = names_regex(rules)
    calls = f'apiserver_admission_webhook_rejection_count{{error_type="calling_webhook_error",name=~"{names}"}}'
    slow = " or ".join(
        f'(1 - sum by (endpoint) (rate(servinggate_admission_request_duration_seconds_bucket{{endpoint="{e}",le="{knobs.le[e]}"}}[5m]))'
        f' / sum by (endpoint) (rate(servinggate_admission_request_duration_seconds_count{{endpoint="{e}"}}[5m])))'
        for e in ENDPOINTS)
    denials = 'sum by (rule) (rate(servinggate_rule_verdicts_total{action="deny",verdict="fail"}'
    return [
        _alert("ServingGateWebhookDown", f'absent(up{{job="{WEBHOOK_JOB}"}} == 1)', "critical",
               "No ServingGate webhook replica is scraped as up",
               "With failurePolicy Fail, every write the webhooks judge is refused while no replica answers.", "3m"),
        _alert("ServingGateWebhookNoReadyReplicas", f'kube_deployment_status_replicas_available{{deployment="{WEBHOOK_DEPLOYMENT}"}} == 0',
               "critical", "The ServingGate webhook Deployment has no available replica",
               "kube-state-metrics reports no available replica of {{ $labels.namespace }}/{{ $labels.deployment }}; "
               "with failurePolicy Fail, writes in the webhooks' scope are refused.", "3m"),
        _alert("ServingGateWebhookCallsFailing", f"sum by (name) (rate({calls}[5m])) > 0", "critical",
               "The API server cannot call webhook {{ $labels.name }}",
               "The API server refused writes because calling {{ $labels.name }} failed (timeout, TLS or connection "
               "error, or a malformed answer): {{ $value | humanize }} per second.", "5m"),
        _alert("ServingGateWebhookFailingOpen", f'sum by (name) (rate(apiserver_admission_webhook_fail_open_count{{name=~"{names}"}}[5m])) > 0',
               "warning", "Calls to webhook {{ $labels.name }} fail and writes pass unchecked",
               "With failurePolicy Ignore (a chart value, or the emergency bypass), the API server let writes through "
               "unjudged because calling {{ $labels.name }} failed: {{ $value | humanize }} per second.", "5m"),
        _alert("ServingGateReviewErrors", 'sum by (endpoint) (increase(servinggate_admission_requests_total{code=~"5.."}[10m])) > 0',
               "warning", "ServingGate answered reviews with code 5xx on /{{ $labels.endpoint }}",
               "{{ $value | humanize }} reviews in 10 minutes were answered with a server error instead of a verdict."),
        _alert("ServingGateRuleErrors", "sum by (rule) (increase(servinggate_rule_errors_total[10m])) > 0", "warning",
               "Rule {{ $labels.rule }} raised instead of answering",
               "{{ $value | humanize }} reviews in 10 minutes met an error in rule {{ $labels.rule }}; the webhook log has the traceback."),
        _alert("ServingGateReviewLatencyNearTimeout", f"({slow}) > 0.01", "warning",
               "Reviews on /{{ $labels.endpoint }} approach the webhook timeout",
               "{{ $value | humanizePercentage }} of the reviews on /{{ $labels.endpoint }} took longer than half the "
               "webhook's timeoutSeconds for 10 minutes; past the timeout the API server refuses the write.", "10m"),
        _alert("ServingGateDenialSpike",
               f"{denials}[10m])) > 0.05 and {denials}[10m])) > 5 * {denials}[1d] offset 10m))", "warning",
               "Rule {{ $labels.rule }} denies far more writes than usual",
               "Rule {{ $labels.rule }} denies {{ $value | humanize }} writes per second, over five times its rate of the "
               "day before: a rollout or a change of the rule or its action is refusing writes.", "10m"),
        _alert("ServingGateLookupsFailing", "sum by (kind) (rate(servinggate_lookup_failures_total[5m])) > 0", "warning",
               "Lookups of {{ $labels.kind }} fail; the rules that need them allow with a warning",
               "The webhook cannot read {{ $labels.kind }} objects (RBAC or API server trouble); rules that depend on "
               "them do not enforce meanwhile.", "10m"),
        _alert("ServingGateLookupCacheUnsynced", "min by (kind) (servinggate_lookup_cache_synced) == 0", "warning",
               "The webhook's {{ $labels.kind }} cache is not in sync",
               "A worker has not listed {{ $labels.kind }} or its watch is failing; its rules read through GETs, "
               "which is slower and loads the API server.", "15m"),
        _alert("ServingGateCertificateExpiresSoon", "min(servinggate_certificate_expiry_timestamp_seconds) - time() < 14 * 86400",
               "warning", "The webhook's serving certificate expires in less than 14 days",
               "It expires in {{ $value | humanizeDuration }}; renewal (30 days ahead by default) has not happened."),
        _alert("ServingGateCertificateExpiresVerySoon", "min(servinggate_certificate_expiry_timestamp_seconds) - time() < 2 * 86400",
               "critical", "The webhook's serving certificate expires in less than 2 days",
               "It expires in {{ $value | humanizeDuration }}; then the API server cannot call the webhooks."),
    ]


def _scalein_alerts() -> list[dict[str, Any]]:
    return [
        _alert("ServingGateScaleInBacklogGrowing",
               "min_over_time(servinggate_scalein_write_backlog[30m]) > 0 and deriv(servinggate_scalein_write_backlog[30m]) > 0",
               "warning", "The scale-in reconciler's write backlog keeps growing",
               "{{ $value | humanize }} pods per second more wait for a deletion-cost write and the backlog has not emptied "
               "for 30 minutes: writes are slower than pod changes (QPS cap, API server throttling)."),
        _alert("ServingGateScaleInBacklogStale", "max(servinggate_scalein_write_backlog_oldest_seconds) > 900", "warning",
               "A pod has waited over 15 minutes for its deletion-cost write",
               "The oldest pending write is {{ $value | humanizeDuration }} old; scale-in meanwhile follows stale costs.", "5m"),
        _alert("ServingGateScaleInWritesFailing", "sum by (op, code) (rate(servinggate_scalein_errors_total[10m])) > 0", "warning",
               "The scale-in reconciler's {{ $labels.op }} calls fail with code {{ $labels.code }}",
               "{{ $value | humanize }} failed API calls per second for 15 minutes (code 0: no answer).", "15m"),
        _alert("ServingGateListWatchFailing",
               f'sum by (job, resource, code) (rate(servinggate_listwatch_errors_total{{job!="{WEBHOOK_JOB}"}}[10m])) > 0', "warning",
               "{{ $labels.job }} cannot list or watch {{ $labels.resource }} (code {{ $labels.code }})",
               "{{ $value | humanize }} failed list or watch requests per second for 15 minutes (code 0: no answer); it backs off and "
               "keeps trying, working from what it read before. The webhook's own reads show in ServingGateLookupCacheUnsynced.", "15m"),
        _alert("ServingGateScaleInContested", "max(servinggate_scalein_contested_pods) > 0", "info",
               "Another controller writes the deletion cost of {{ $value }} of our pods",
               "Pods whose pod-deletion-cost another writer keeps changing are left alone for the backoff window; "
               "their scale-in order is the other writer's. The pods carry a DeletionCostContested Event.", "30m"),
    ]


def _audit_alerts(knobs: Knobs) -> list[dict[str, Any]]:
    return [
        _alert("ServingGateAuditFailing",
               'sum(increase(servinggate_audit_runs_total{outcome="failed"}[1h])) > 0 unless sum(increase(servinggate_audit_runs_total{outcome="ok"}[1h])) > 0',
               "warning", "Every audit of the last hour failed",
               "The auditor's runs fail (see its log); findings and PolicyReports are not current."),
        _alert("ServingGateAuditStale", f"time() - max(servinggate_audit_last_run_timestamp_seconds) > {knobs.audit_stale}", "warning",
               "No audit has completed for three intervals",
               "The last completed audit is {{ $value | humanizeDuration }} old: the auditor is down, has no leader, "
               "or its runs do not finish.", "15m"),
    ]


def rule_groups(rules: list[Rule], knobs: Knobs) -> list[dict[str, Any]]:
    """The alert groups (PrometheusRule spec.groups, a plain Prometheus rule file's groups)."""
    return [
        {"name": "servinggate-webhook", "rules": _webhook_alerts(rules, knobs)},
        {"name": "servinggate-scalein", "rules": _scalein_alerts()},
        {"name": "servinggate-audit", "rules": _audit_alerts(knobs)},
    ]


def prometheus_rule(rules: list[Rule], knobs: Knobs) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "namespace": NAMESPACE, "labels": {**LABELS, "app.kubernetes.io/component": "metrics"}},
        "spec": {"groups": rule_groups(rules, knobs)},
    }


# ---- the dashboard --------------------------------------------------------------------------------

_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def _panel(title: str, targets: list[tuple[str, str]], unit: str = "short", kind: str = "timeseries", width: int = 12) -> dict[str, Any]:
    return {
        "type": kind, "title": title, "datasource": _DATASOURCE,
        "gridPos": {"h": 8, "w": width, "x": 0, "y": 0},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"datasource": _DATASOURCE, "expr": expr, "legendFormat": legend, "refId": chr(ord("A") + i)}
                    for i, (expr, legend) in enumerate(targets)],
    }


def _row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "gridPos": {"h": 1, "w": 24, "x": 0, "y": 0}, "panels": []}


def _laid_out(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows span the width; other panels fill lines left to right."""
    x = y = height = 0
    for i, panel in enumerate(panels, start=1):
        pos = panel["gridPos"]
        if panel["type"] == "row" or x + pos["w"] > 24:
            x, y, height = 0, y + height, 0
        pos["x"], pos["y"] = x, y
        x, height = x + pos["w"], max(height, pos["h"])
        if panel["type"] == "row":
            x, y, height = 0, y + pos["h"], 0
        panel["id"] = i
    return panels


def dashboard(rules: list[Rule]) -> dict[str, Any]:
    names = names_regex(rules)
    latency = "servinggate_admission_request_duration_seconds_bucket"
    panels = [
        _row("Admission reviews"),
        _panel("Reviews by endpoint and verdict", [
            ("sum by (endpoint, allowed) (rate(servinggate_admission_requests_total[5m]))", "{{endpoint}} allowed={{allowed}}")], "reqps"),
        _panel("Review latency", [
            (f"histogram_quantile(0.5, sum by (endpoint, le) (rate({latency}[5m])))", "p50 {{endpoint}}"),
            (f"histogram_quantile(0.99, sum by (endpoint, le) (rate({latency}[5m])))", "p99 {{endpoint}}")], "s"),
        _panel("Denials by rule", [
            ('sum by (rule) (rate(servinggate_rule_verdicts_total{action="deny",verdict="fail"}[5m]))', "{{rule}}")], "reqps"),
        _panel("Warnings and audits by rule", [
            ('sum by (rule, action) (rate(servinggate_rule_verdicts_total{action=~"warn|audit",verdict="fail"}[5m]))', "{{rule}} {{action}}")], "reqps"),
        _panel("Errors: 5xx reviews, rule errors, refused requests", [
            ('sum by (endpoint) (rate(servinggate_admission_requests_total{code=~"5.."}[5m]))', "5xx {{endpoint}}"),
            ("sum by (rule) (rate(servinggate_rule_errors_total[5m]))", "rule {{rule}}"),
            ("sum by (code) (rate(servinggate_admission_bad_requests_total[5m]))", "refused {{code}}")], "reqps"),
        _panel("API server: calls to our webhooks that failed", [
            (f'sum by (name) (rate(apiserver_admission_webhook_rejection_count{{error_type="calling_webhook_error",name=~"{names}"}}[5m]))',
             "rejected {{name}}"),
            (f'sum by (name) (rate(apiserver_admission_webhook_fail_open_count{{name=~"{names}"}}[5m]))', "let through {{name}}")], "reqps"),
        _panel("In-flight reviews", [("sum by (endpoint) (servinggate_admission_in_flight_requests)", "{{endpoint}}")], width=8),
        _panel("Serving certificate expires in", [("min(servinggate_certificate_expiry_timestamp_seconds) - time()", "expires in")],
               "s", kind="stat", width=8),
        _panel("Webhook replicas up", [(f'sum(up{{job="{WEBHOOK_JOB}"}})', "up")], kind="stat", width=8),
        _row("Lookups"),
        _panel("Lookup failures by kind", [("sum by (kind) (rate(servinggate_lookup_failures_total[5m]))", "{{kind}}")], "reqps", width=8),
        _panel("Lookup caches synced", [("min by (kind) (servinggate_lookup_cache_synced)", "{{kind}}")], width=8),
        _panel("Lookup cache objects", [("max by (kind) (servinggate_lookup_cache_objects)", "{{kind}}")], width=8),
        _row("Scale-in reconciler"),
        _panel("Deletion-cost writes and failures", [
            ("sum by (kind) (rate(servinggate_scalein_writes_total[5m]))", "write {{kind}}"),
            ("sum by (op, code) (rate(servinggate_scalein_errors_total[5m]))", "error {{op}} {{code}}"),
            (f'sum by (resource, code) (rate(servinggate_listwatch_errors_total{{job="{RECONCILER_JOB}"}}[5m]))', "list/watch error {{resource}} {{code}}"),
            ("sum(rate(servinggate_scalein_conflicts_total[5m]))", "conflicts")], "ops"),
        _panel("Write backlog", [
            ("max(servinggate_scalein_write_backlog)", "pods waiting"),
            ("max(servinggate_scalein_write_backlog_oldest_seconds)", "oldest wait (s)")]),
        _panel("Contested pods", [("max(servinggate_scalein_contested_pods)", "contested")], width=8),
        _panel("Leader", [("max(servinggate_scalein_leader)", "leader")], kind="stat", width=8),
        _panel("Pods scored", [("max(servinggate_scalein_pods_scored)", "pods")], width=8),
        _row("Audit"),
        _panel("Findings by rule and action", [("sum by (rule, action) (servinggate_audit_findings)", "{{rule}} {{action}}")]),
        _panel("Audit runs", [
            ("sum by (outcome) (increase(servinggate_audit_runs_total[1h]))", "{{outcome}} per hour"),
            ("time() - max(servinggate_audit_last_run_timestamp_seconds)", "since last run (s)")]),
    ]
    return {
        "title": "ServingGate",
        "uid": "servinggate",
        "tags": ["servinggate"],
        "editable": True,
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}]},
        "panels": _laid_out(panels),
    }


def dashboard_json(rules: list[Rule]) -> str:
    return json.dumps(dashboard(rules), indent=2) + "\n"


def dashboard_configmap(rules: list[Rule]) -> dict[str, Any]:
    labels = {**LABELS, "app.kubernetes.io/component": "metrics", **SIDECAR_LABEL}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": DASHBOARD_NAME, "namespace": NAMESPACE, "labels": labels},
            "data": {DASHBOARD_FILE: dashboard_json(rules)}}


# ---- the files ------------------------------------------------------------------------------------

def _component(comment: str, resource: str) -> str:
    return dump([{"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component", "resources": [resource]}], HEADER + comment)


def render(rules: list[Rule]) -> dict[Path, str]:
    """The two kustomize components, by path under the manifests folder."""
    return {
        RULES_COMPONENT / "kustomization.yaml": _component(
            "# The alerts for the webhook, the scale-in reconciler and the auditor (docs/operations.md, Alerts).\n"
            "# Needs the Prometheus Operator's CRDs and a Prometheus that selects this PrometheusRule (add\n"
            "# its ruleSelector label with a patch in your overlay). Opt in under `components:`.\n", "prometheusrule.yaml"),
        RULES_COMPONENT / "prometheusrule.yaml": dump([prometheus_rule(rules, default_knobs())]),
        DASHBOARD_COMPONENT / "kustomization.yaml": _component(
            "# The Grafana dashboard as a ConfigMap labelled grafana_dashboard: \"1\", which Grafana's dashboard\n"
            "# sidecar loads (it may watch only some namespaces: see docs/operations.md). Opt in under\n"
            "# `components:`.\n", "dashboard.yaml"),
        DASHBOARD_COMPONENT / "dashboard.yaml": dump([dashboard_configmap(rules)]),
    }


# ---- the chart ------------------------------------------------------------------------------------

_CHART_MARKER = re.compile(r"@@(?P<kind>le|auditStale)(?::(?P<arg>\w+))?@@")
_PROMETHEUS_TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)

CHART_HELPERS = '''{{- define "servinggate.latencyBucket" -}}
{{- /* The largest latency bucket at or below half the timeout (monitoring.latency_bucket). */ -}}
{{- $limit := divf . 2 -}}
{{- $pick := "%(first)s" -}}
{{- range list %(buckets)s -}}
{{- if le (float64 .) $limit }}{{ $pick = . }}{{ end -}}
{{- end -}}
{{- $pick -}}
{{- end }}

{{- define "servinggate.auditStaleSeconds" -}}
{{- /* %(intervals)d audit intervals (audit.every: h, m and s) in seconds (monitoring.duration_seconds). */ -}}
{{- $seconds := 0 -}}
{{- range regexFindAll "[0-9]+[hms]" . -1 -}}
{{- $n := atoi (trimSuffix "h" (trimSuffix "m" (trimSuffix "s" .))) -}}
{{- if hasSuffix "h" . }}{{ $seconds = add $seconds (mul $n 3600) }}{{ else if hasSuffix "m" . }}{{ $seconds = add $seconds (mul $n 60) }}{{ else }}{{ $seconds = add $seconds $n }}{{ end -}}
{{- end -}}
{{- mul $seconds %(intervals)d -}}
{{- end }}
'''


def _chart_text(doc: dict[str, Any], labels_component: str) -> str:
    """One object as chart template text: Prometheus' and Grafana's own `{{ }}` escaped for Helm,
    then the knob markers, the release namespace and the chart's labels put in."""
    doc = {**doc, "metadata": {**doc["metadata"], "namespace": "@@namespace@@", "labels": "@@labels@@"}}
    text = dump([doc], "")
    text = _PROMETHEUS_TEMPLATE.sub(lambda m: '{{ "{{" }}' + m[1] + '{{ "}}" }}', text)

    def expand(match: re.Match[str]) -> str:
        if match["kind"] == "le":
            return f'{{{{ include "servinggate.latencyBucket" $.Values.{match["arg"]}.timeoutSeconds }}}}'
        return '{{ include "servinggate.auditStaleSeconds" $.Values.audit.every }}'

    text = _CHART_MARKER.sub(expand, text)
    text = text.replace("namespace: '@@namespace@@'", "namespace: {{ $.Release.Namespace }}")
    return text.replace("  labels: '@@labels@@'\n", (
        f'  labels:\n    {{{{- include "servinggate.labels" (dict "root" $ "component" "{labels_component}") | nindent 4 }}}}\n'
        "    {{- with $extra }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n"))


def chart_template(rules: list[Rule], header: str) -> str:
    knobs = Knobs(le={e: f"@@le:{group}@@" for e, group in ENDPOINTS.items()}, audit_stale="@@auditStale@@")
    helpers = CHART_HELPERS % {"first": LATENCY_BUCKETS[0], "buckets": " ".join(f'"{b}"' for b in LATENCY_BUCKETS),
                               "intervals": STALE_INTERVALS}
    rule_doc = _chart_text(prometheus_rule(rules, knobs), "metrics")
    dashboard_doc = _chart_text(dashboard_configmap(rules), "metrics")
    return (header + helpers
            + "{{- if .Values.prometheusRule.enabled }}\n{{- $extra := .Values.prometheusRule.labels }}\n---\n" + rule_doc + "{{- end }}\n"
            + "{{- if .Values.grafanaDashboard.enabled }}\n{{- $extra := .Values.grafanaDashboard.labels }}\n---\n" + dashboard_doc + "{{- end }}\n")
# fmt: on
