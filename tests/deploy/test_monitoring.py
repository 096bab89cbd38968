"""The alerts and the dashboard (webhook/deploy/monitoring.py): every expression parses (promtool),
every servinggate_* metric they name is one the product exports (read from its registries), each
alert fires on synthetic series and stays quiet on healthy ones (`promtool test rules` with
tests/fixtures/monitoring/), and the chart renders the component's objects, following its values.

promtool comes from Debian's `prometheus` package; `./dev test` installs it when it is missing.
Without it these tests fail: they never skip."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import prometheus_client
import pytest
import yaml
from deploy.helmchart import CHART, render
from prometheus_client.utils import floatToGoString

from webhook.audit.metrics import AuditMetrics
from webhook.deploy import monitoring
from webhook.deploy.configurations import registry_rules
from webhook.scalein.reconcile.health import Metrics as ScaleInMetrics
from webhook.serving import metrics as server_metrics

REPO = CHART.parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "monitoring"
COMPONENT_RULES = REPO / "manifests" / "components" / "prometheus-rules" / "prometheusrule.yaml"
COMPONENT_DASHBOARD = REPO / "manifests" / "components" / "grafana-dashboard" / "dashboard.yaml"
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count"), "info": ("_info",)}


# ---- helpers ------------------------------------------------------------------------------------


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool is missing: install Debian's `prometheus` package (./dev test does when it can)"
    return found


def _run(*args: str, cwd: Path) -> str:
    done = subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _yaml(path: Path) -> Any:
    return next(d for d in yaml.safe_load_all(path.read_text()) if d)


def _groups(strip_annotations: bool = False) -> list[dict]:
    groups = _yaml(COMPONENT_RULES)["spec"]["groups"]
    if strip_annotations:
        for group in groups:
            for rule in group["rules"]:
                rule.pop("annotations", None)
    return groups


def _alerts(groups: list[dict]) -> dict[str, dict]:
    return {r["alert"]: r for g in groups for r in g["rules"]}


def _dashboard() -> dict:
    return json.loads(_yaml(COMPONENT_DASHBOARD)["data"][monitoring.DASHBOARD_FILE])


def _panel_exprs(dashboard: dict) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", ())]


def _check_rules(groups: list[dict], tmp_path: Path) -> str:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    return _run("check", "rules", "rules.yaml", cwd=tmp_path)


def _test_rules(fixture: str, groups: list[dict], tmp_path: Path, *, only: str | None = None) -> str:
    """promtool's unit tests of `fixture` over `groups`; with `only`, just that alert's checks, over
    that alert's rule and the recording rules (an alert reads no other alert, so the rest cannot
    change its outcome; promtool evaluates every rule at every step, so this is much cheaper)."""
    tests = yaml.safe_load((FIXTURES / fixture).read_text())
    if only is not None:
        groups = [{**g, "rules": [r for r in g["rules"] if r.get("alert") == only or "record" in r]} for g in groups]
        groups = [g for g in groups if g["rules"]]
        cases = []
        for case in tests["tests"]:
            checks = [t for t in case.get("alert_rule_test", []) if t["alertname"] == only]
            if checks:
                cases.append({**case, "alert_rule_test": checks})
        assert cases, f"no case checks {only}"
        tests["tests"] = cases
    (tmp_path / "servinggate-rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    (tmp_path / fixture).write_text(yaml.safe_dump(tests))
    return _run("test", "rules", fixture, cwd=tmp_path)


def exported_metric_names() -> set[str]:
    """Every series name the webhook, the reconciler and the auditor can export, from their
    registries: a family's name with the suffixes of its type."""
    collectors = [v for v in vars(server_metrics).values() if isinstance(v, prometheus_client.metrics.MetricWrapperBase)]
    families = [f for c in collectors for f in c.collect()]
    for registry in (ScaleInMetrics().registry, AuditMetrics().registry):
        families += list(registry.collect())
    return {f.name + suffix for f in families for suffix in SUFFIXES[f.type]}


# ---- the alerts on synthetic series ------------------------------------------------------------


@pytest.mark.parametrize("alert", sorted(_alerts(_groups())))
def test_each_alert_fires_on_synthetic_series_and_stays_quiet_on_healthy_ones(alert, tmp_path):
    assert "SUCCESS" in _test_rules("alerts.test.yaml", _groups(strip_annotations=True), tmp_path, only=alert)


def test_the_annotations_name_what_fired(tmp_path):
    assert "SUCCESS" in _test_rules("annotations.test.yaml", _groups(), tmp_path)


def test_every_alert_has_a_firing_and_a_quiet_case():
    cases = yaml.safe_load((FIXTURES / "alerts.test.yaml").read_text())["tests"]
    fires, quiet = set(), set()
    for case in cases:
        for check in case["alert_rule_test"]:
            (fires if check["exp_alerts"] else quiet).add(check["alertname"])
    alerts = set(_alerts(_groups()))
    assert fires == alerts, f"without a firing case: {sorted(alerts - fires)}"
    assert quiet == alerts, f"without a quiet case: {sorted(alerts - quiet)}"


def test_a_broken_alert_fails_its_promtool_case(tmp_path):
    """The harness can fail: a threshold moved far off makes the firing case miss."""
    groups = _groups(strip_annotations=True)
    rule = _alerts(groups)["ServingGateCertificateExpiresSoon"]
    rule["expr"] = rule["expr"].replace("14 * 86400", "1 * 86400")
    with pytest.raises(AssertionError, match="ServingGateCertificateExpiresSoon"):
        _test_rules("alerts.test.yaml", groups, tmp_path, only="ServingGateCertificateExpiresSoon")


# ---- every expression parses and names exported metrics -----------------------------------------


def test_every_alert_expression_parses(tmp_path):
    out = _check_rules(_groups(), tmp_path)
    assert f"SUCCESS: {len(_alerts(_groups()))} rules found" in out


def test_every_dashboard_expression_parses(tmp_path):
    """Each panel's query as a recording rule, which promtool parses like any rule."""
    exprs = _panel_exprs(_dashboard())
    assert len(exprs) >= 20
    rules = [{"record": f"servinggate_dashboard:query_{i}", "expr": e} for i, e in enumerate(exprs)]
    assert f"SUCCESS: {len(rules)} rules found" in _check_rules([{"name": "dashboard", "rules": rules}], tmp_path)


def test_promtool_refuses_a_broken_expression(tmp_path):
    with pytest.raises(AssertionError, match="parse error"):
        _check_rules([{"name": "x", "rules": [{"alert": "X", "expr": "sum by (rule (rate(servinggate_rule_errors_total[5m]))"}]}], tmp_path)


def _named(exprs: list[str]) -> set[str]:
    return {m for e in exprs for m in re.findall(r"\bservinggate_[a-z0-9_]+\b(?!:)", e)} - {"servinggate_dashboard"}


def test_every_servinggate_metric_named_is_exported():
    exported = exported_metric_names()
    # the registries are read, not guessed: each kind of suffix is there
    assert {
        "servinggate_admission_requests_total",
        "servinggate_admission_request_duration_seconds_bucket",
        "servinggate_scalein_write_backlog",
        "servinggate_audit_runs_total",
    } <= exported
    alert_exprs = [r["expr"] for r in _alerts(_groups()).values()]
    named = _named(alert_exprs + _panel_exprs(_dashboard()))
    assert named and named <= exported, f"not exported: {sorted(named - exported)}"


def test_the_metric_check_catches_a_name_the_product_does_not_export():
    assert _named(["rate(servinggate_scalein_writes[5m])"]) - exported_metric_names() == {"servinggate_scalein_writes"}


def test_the_alerts_and_the_dashboard_cover_what_an_operator_watches():
    named = _named([r["expr"] for r in _alerts(_groups()).values()])
    for metric in (
        "servinggate_admission_requests_total",
        "servinggate_rule_errors_total",
        "servinggate_rule_verdicts_total",
        "servinggate_admission_request_duration_seconds_bucket",
        "servinggate_lookup_failures_total",
        "servinggate_lookup_cache_synced",
        "servinggate_certificate_expiry_timestamp_seconds",
        "servinggate_scalein_write_backlog",
        "servinggate_scalein_errors_total",
        "servinggate_scalein_contested_pods",
        "servinggate_audit_runs_total",
        "servinggate_audit_last_run_timestamp_seconds",
    ):
        assert metric in named, metric
    panels = _named(_panel_exprs(_dashboard()))
    for metric in (
        "servinggate_admission_requests_total",
        "servinggate_admission_request_duration_seconds_bucket",
        "servinggate_rule_verdicts_total",
        "servinggate_lookup_failures_total",
        "servinggate_scalein_writes_total",
        "servinggate_scalein_write_backlog",
        "servinggate_scalein_contested_pods",
        "servinggate_audit_findings",
    ):
        assert metric in panels, metric


def test_the_api_servers_metric_names_exactly_our_webhooks():
    expr = _alerts(_groups())["ServingGateWebhookCallsFailing"]["expr"]
    regex = re.search(r'name=~"([^"]*)"', expr)[1].replace("\\\\", "\\")
    names = monitoring.webhook_names(registry_rules())
    assert len(names) >= 2
    for name in names:
        assert re.fullmatch(regex, name)
    assert not re.fullmatch(regex, names[0].replace(".", "x"))


# ---- what the rules are derived from ------------------------------------------------------------


def test_the_latency_buckets_are_the_histograms():
    bounds = [floatToGoString(b) for b in server_metrics.LATENCY._upper_bounds if b != float("inf")]
    assert list(monitoring.LATENCY_BUCKETS) == bounds


def test_the_audit_interval_is_the_bases():
    deployment = _yaml(REPO / "manifests" / "base" / "auditor-deployment.yaml")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--every={monitoring.AUDIT_EVERY}" in args


@pytest.mark.parametrize(("timeout", "bucket"), [(5, "2.5"), (2, "1.0"), (1, "0.5"), (30, "2.5"), (0.0001, "0.0005")])
def test_the_latency_alert_counts_reviews_over_half_the_timeout(timeout, bucket):
    assert monitoring.latency_bucket(timeout) == bucket


def test_durations_read_as_the_chart_schema_writes_them():
    assert [monitoring.duration_seconds(t) for t in ("10m", "1h30m", "90s", "2h")] == [600, 5400, 90, 7200]
    for bad in ("", "10", "1d", "m10"):
        with pytest.raises(ValueError):
            monitoring.duration_seconds(bad)


def test_the_dashboard_panels_do_not_overlap():
    cells = set()
    for panel in _dashboard()["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24
        mine = {(pos["x"] + dx, pos["y"] + dy) for dx in range(pos["w"]) for dy in range(pos["h"])}
        assert not mine & cells, panel["title"]
        cells |= mine


# ---- the chart ----------------------------------------------------------------------------------


def _spec(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "metadata"}


def test_the_chart_renders_neither_by_default():
    kinds = {(d["kind"], d["metadata"]["name"]) for d in render().installed}
    assert ("PrometheusRule", monitoring.RULE_NAME) not in kinds
    assert ("ConfigMap", monitoring.DASHBOARD_NAME) not in kinds


def test_the_chart_renders_the_components_objects():
    r = render({"prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}, "grafanaDashboard": {"enabled": True}})
    rule = r.find("PrometheusRule", monitoring.RULE_NAME)
    assert _spec(rule) == _spec(_yaml(COMPONENT_RULES))
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["metadata"]["labels"]["app.kubernetes.io/name"] == "servinggate"
    dashboard = r.find("ConfigMap", monitoring.DASHBOARD_NAME)
    assert _spec(dashboard) == _spec(_yaml(COMPONENT_DASHBOARD))
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert "{{endpoint}}" in dashboard["data"][monitoring.DASHBOARD_FILE]


def test_the_chart_rules_follow_the_timeouts_and_the_audit_interval(tmp_path):
    values = {"prometheusRule": {"enabled": True}, "validating": {"timeoutSeconds": 1}, "mutating": {"timeoutSeconds": 30}, "audit": {"every": "1h30m"}}
    rule = render(values).find("PrometheusRule", monitoring.RULE_NAME)
    alerts = _alerts(rule["spec"]["groups"])
    latency = alerts["ServingGateReviewLatencyNearTimeout"]["expr"]
    assert 'endpoint="validate",le="0.5"' in latency and 'endpoint="mutate",le="2.5"' in latency
    assert alerts["ServingGateAuditStale"]["expr"].endswith(f"> {3 * 5400}")
    _check_rules(rule["spec"]["groups"], tmp_path)


@pytest.mark.parametrize("every", ["45s", "10m", "2h", "1h2m3s"])
def test_the_charts_stale_audit_threshold_is_the_packages(every):
    rule = render({"prometheusRule": {"enabled": True}, "audit": {"every": every}}).find("PrometheusRule", monitoring.RULE_NAME)
    expr = _alerts(rule["spec"]["groups"])["ServingGateAuditStale"]["expr"]
    assert expr.endswith(f"> {monitoring.STALE_INTERVALS * monitoring.duration_seconds(every)}")


@pytest.mark.parametrize("timeout", [1, 2, 3, 5, 10, 30])
def test_the_charts_latency_bucket_is_the_packages(timeout):
    rule = render({"prometheusRule": {"enabled": True}, "validating": {"timeoutSeconds": timeout}}).find("PrometheusRule", monitoring.RULE_NAME)
    expr = _alerts(rule["spec"]["groups"])["ServingGateReviewLatencyNearTimeout"]["expr"]
    assert f'endpoint="validate",le="{monitoring.latency_bucket(timeout)}"' in expr


def test_every_alert_is_explained_in_the_operations_guide():
    guide = (REPO / "docs" / "operations.md").read_text()
    rows = dict(re.findall(r"^- `(ServingGate\w+)` \((\w+)\): ", guide, re.MULTILINE))
    assert rows == {name: rule["labels"]["severity"] for name, rule in _alerts(_groups()).items()}
