"""Installs that survive customisation: another namespace set once, metrics Services and the
ServiceMonitor component, the webhook's priority and its quota, and docs/install.md's NetworkPolicy."""

from __future__ import annotations

import re

import kubernetes_validate
import pytest
import yaml
from deploy.rendering import CERT_MANAGER, COMPONENTS, MANIFESTS, REPO

from webhook.certs.issuing import service_sans
from webhook.config import parse_args
from webhook.deploy import configurations
from webhook.scalein.settings import ReconcileSettings
from webhook.servesettings import ServeSettings

NS, OTHER = "servinggate-system", "ai-platform"
FOLLOW = MANIFESTS / "follow-namespace"
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
EVERY_COMPONENT = [COMPONENTS / "cel-fallback-v1", COMPONENTS / "servicemonitor"]


def find(docs, kind, name):
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, f"{kind} {name}: {len(hits)} objects"
    return hits[0]


def container(deployment):
    [c] = deployment["spec"]["template"]["spec"]["containers"]
    return c


def env_from_own_namespace(c, name):
    env = {e["name"]: e for e in c.get("env", ())}
    return env[name].get("valueFrom") == {"fieldRef": {"fieldPath": "metadata.namespace"}}


def excluded_namespaces(selector: dict) -> set[str]:
    [expression] = selector["matchExpressions"]
    assert (expression["key"], expression["operator"]) == ("kubernetes.io/metadata.name", "NotIn")
    return set(expression["values"])


# ---- the namespace, set once -------------------------------------------------------------------


@pytest.mark.parametrize("variant", [MANIFESTS, CERT_MANAGER], ids=["self-managed", "cert-manager"])
def test_another_namespace_reaches_every_reference(variant, render_overlay):
    docs = render_overlay([variant], components=EVERY_COMPONENT, transformers=[FOLLOW], namespace=OTHER)
    assert NS not in yaml.safe_dump_all(docs), "a reference to the default namespace was left behind"

    find(docs, "Namespace", OTHER)
    for doc in docs:
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"]["namespace"] == OTHER, doc["metadata"]["name"]
        for subject in doc.get("subjects") or ():
            assert subject["namespace"] == OTHER
    # The webhooks: where the API server calls them, and the namespace they leave alone.
    excluded = excluded_namespaces(configurations.namespace_selector(OTHER))
    assert excluded == {"kube-system", "kube-node-lease", OTHER}
    hooks = [h for d in docs if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]]
    assert hooks
    for hook in hooks:
        assert hook["clientConfig"]["service"]["namespace"] == OTHER
        assert excluded_namespaces(hook["namespaceSelector"]) == excluded
    bindings = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert bindings and all(excluded_namespaces(b["spec"]["matchResources"]["namespaceSelector"]) == excluded for b in bindings)
    # The webhook's own setting (certificate SANs, its Secret, caBundle) and the reconciler's
    # Lease come from the pod's namespace, so they follow without a replacement.
    webhook = container(find(docs, "Deployment", "servinggate-webhook"))
    settings = parse_args(ServeSettings, webhook["args"][1:], "serve", "")
    assert not any(a.startswith("--service-namespace") for a in webhook["args"])
    assert env_from_own_namespace(webhook, "SERVINGGATE_SERVICE_NAMESPACE")
    reconciler = container(find(docs, "Deployment", "servinggate-reconciler"))
    assert env_from_own_namespace(reconciler, "SERVINGGATE_LEASE_NAMESPACE")
    lease_role = find(docs, "Role", "servinggate-reconciler-lease")
    assert lease_role["metadata"]["namespace"] == OTHER
    if variant == CERT_MANAGER:
        assert settings.certs.cert_management == "files"
        cert = find(docs, "Certificate", "servinggate-webhook")
        assert set(cert["spec"]["dnsNames"]) == set(service_sans(settings.certs.service_name, OTHER))
        for config in (d for d in docs if d["kind"].endswith("WebhookConfiguration")):
            assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{OTHER}/{cert['metadata']['name']}"
    else:
        assert settings.certs.cert_management == "self"


def test_without_the_transformer_the_embedded_namespace_stays_behind(render_overlay):
    """What the issue saw: `namespace:` alone moves the objects but not the names that embed the
    namespace, so TLS fails and the webhook would judge its own namespace."""
    docs = render_overlay([CERT_MANAGER], namespace=OTHER)
    cert = find(docs, "Certificate", "servinggate-webhook")
    assert f"servinggate-webhook.{NS}.svc" in cert["spec"]["dnsNames"]
    hook = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")["webhooks"][0]
    assert NS in hook["namespaceSelector"]["matchExpressions"][0]["values"]
    assert OTHER not in hook["namespaceSelector"]["matchExpressions"][0]["values"]


def test_the_default_install_is_unchanged_by_the_transformer(render_overlay):
    from deploy.rendering import kubectl_kustomize

    assert render_overlay([MANIFESTS], transformers=[FOLLOW]) == kubectl_kustomize(MANIFESTS)


# ---- metrics ------------------------------------------------------------------------------------

WEBHOOK_METRICS_PORT = 9090  # what serve's plain-HTTP --metrics-port listens on (webhook/server)


def _pod_labels(deployment):
    return deployment["spec"]["template"]["metadata"]["labels"]


def _selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_metrics_services_reach_the_metrics_ports(render_overlay):
    docs = render_overlay([MANIFESTS])
    webhook = find(docs, "Deployment", "servinggate-webhook")
    reconciler = find(docs, "Deployment", "servinggate-reconciler")
    auditor = find(docs, "Deployment", "servinggate-auditor")
    ports = {d["metadata"]["name"]: {p["name"]: p["containerPort"] for p in container(d)["ports"]} for d in (webhook, reconciler, auditor)}
    # The webhook's metrics are on their own plain-HTTP port; the default of the setting when
    # the server has it (until then: the port the server must listen on).
    assert ports["servinggate-webhook"]["metrics"] == ServeSettings().listener.metrics_port == WEBHOOK_METRICS_PORT
    assert ports["servinggate-reconciler"]["health"] == ReconcileSettings().runtime.health_port
    assert "--health-port=8081" in container(auditor)["args"] and ports["servinggate-auditor"]["health"] == 8081
    for name, deployment in (
        ("servinggate-webhook-metrics", webhook),
        ("servinggate-reconciler-metrics", reconciler),
        ("servinggate-auditor-metrics", auditor),
    ):
        svc = find(docs, "Service", name)
        assert svc["metadata"]["labels"]["servinggate.io/metrics"] == "true"
        assert svc["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
        [port] = svc["spec"]["ports"]
        assert port["name"] == "metrics" and port["targetPort"] in ports[deployment["metadata"]["name"]]
    # The admission Service still exposes only the HTTPS admission port.
    assert [p["name"] for p in find(docs, "Service", "servinggate-webhook")["spec"]["ports"]] == ["https"]


def test_the_service_monitor_scrapes_every_metrics_service(render_overlay):
    docs = render_overlay([MANIFESTS], components=[COMPONENTS / "servicemonitor"])
    [monitor] = [d for d in docs if d["kind"] == "ServiceMonitor"]
    assert monitor["metadata"]["namespace"] == NS and "namespaceSelector" not in monitor["spec"]
    scraped = [d for d in docs if d["kind"] == "Service" and _selects(monitor["spec"]["selector"]["matchLabels"], d["metadata"]["labels"])]
    assert {s["metadata"]["name"] for s in scraped} == {"servinggate-webhook-metrics", "servinggate-reconciler-metrics", "servinggate-auditor-metrics"}
    for endpoint in monitor["spec"]["endpoints"]:
        for svc in scraped:
            assert endpoint["port"] in {p["name"] for p in svc["spec"]["ports"]}


# ---- priority and its quota ----------------------------------------------------------------------


def test_the_webhook_is_critical_and_its_namespace_has_the_quota_for_it(render_overlay):
    docs = render_overlay([MANIFESTS])
    webhook = find(docs, "Deployment", "servinggate-webhook")
    priority = webhook["spec"]["template"]["spec"]["priorityClassName"]
    assert priority == "system-cluster-critical"
    quotas = [d for d in docs if d["kind"] == "ResourceQuota" and d["metadata"]["namespace"] == webhook["metadata"]["namespace"]]
    matching = [q for q in quotas if {"scopeName": "PriorityClass", "operator": "In", "values": [priority]} in q["spec"]["scopeSelector"]["matchExpressions"]]
    assert len(matching) == 1
    # Room for a rolling update (replicas + surge), twice over for pods still terminating.
    rollout = webhook["spec"]["replicas"] + webhook["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    assert int(matching[0]["spec"]["hard"]["pods"]) >= 2 * rollout
    assert set(matching[0]["spec"]["hard"]) == {"pods"}
    # The reconciler is not critical: it does not count against that quota.
    assert "priorityClassName" not in find(docs, "Deployment", "servinggate-reconciler")["spec"]["template"]["spec"]


# ---- the NetworkPolicy example in docs/install.md --------------------------------------------------


def documented_network_policy() -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "install.md").read_text(), re.S)
    [policy] = [yaml.safe_load(b) for b in blocks if "kind: NetworkPolicy" in b]
    return policy


def _allows(rule: dict, port_names: set, numbers: set) -> bool:
    return any(p.get("port") in port_names | numbers for p in rule.get("ports", ()))


def test_the_documented_network_policy_limits_scraping_and_never_the_admission_port(render_overlay):
    policy = documented_network_policy()
    kubernetes_validate.validate(policy, "1.28.0", strict=True)
    docs = render_overlay([MANIFESTS])
    webhook = find(docs, "Deployment", "servinggate-webhook")
    reconciler = find(docs, "Deployment", "servinggate-reconciler")
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress"]
    assert policy["metadata"]["namespace"] == NS
    for deployment in (webhook, reconciler):
        assert _selects(spec["podSelector"]["matchLabels"], _pod_labels(deployment))
    rules = spec["ingress"]
    # No rule opens every port.
    assert all(r.get("ports") for r in rules)
    # The API server reaches the admission port from wherever it is: a rule without `from`.
    admission = {"https"}, {p["containerPort"] for p in container(webhook)["ports"] if p["name"] == "https"}
    assert any(_allows(r, *admission) and not r.get("from") for r in rules)
    # The metrics ports only from named scrapers.
    metrics = {"metrics", "health"}, {WEBHOOK_METRICS_PORT, ReconcileSettings().runtime.health_port}
    assert any(_allows(r, *metrics) for r in rules)
    for rule in rules:
        if _allows(rule, *metrics):
            assert rule.get("from"), rule
            assert not _allows(rule, *admission)


def test_the_documented_overlay_with_everything_renders_as_it_says(tmp_path):
    import os

    from deploy.rendering import kubectl_kustomize

    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "install.md").read_text(), re.S)
    [text] = [b for b in blocks if b.startswith("# my-servinggate/kustomization.yaml, next to a checkout")]
    overlay = tmp_path / "my-servinggate"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(text.replace("../servinggate/", os.path.relpath(REPO, overlay) + "/"))
    docs = kubectl_kustomize(overlay)
    assert NS not in yaml.safe_dump_all(docs)
    assert find(docs, "Certificate", "servinggate-webhook")["metadata"]["namespace"] == OTHER
    assert {d["kind"] for d in docs} >= {"ValidatingAdmissionPolicy", "ServiceMonitor", "MutatingAdmissionPolicy"}
    [selector] = find(docs, "MutatingAdmissionPolicyBinding", "pods-opt-in-gang.servinggate.io")["spec"]["matchResources"]["namespaceSelector"][
        "matchExpressions"
    ]
    assert OTHER in selector["values"]
    # the policy mutates an opt-in gang's pods in the API server: the webhook's entry fails open, saying why
    mutating = find(docs, "MutatingWebhookConfiguration", "servinggate-mutating")
    assert {h["name"]: h["failurePolicy"] for h in mutating["webhooks"]}["pods-gang.mutate.servinggate.io"] == "Ignore"
    assert mutating["metadata"]["annotations"]["failure-policy.servinggate.io/pods-gang"].startswith("Ignore: the MutatingAdmissionPolicy")
    images = {c["image"] for d in docs if d["kind"] == "Deployment" for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.example.com/ml/servinggate:0.1.0"}


# ---- the client-ca and admission-networkpolicy components, and the chart values that mirror them ------


def test_the_client_ca_component_requires_client_certificates_and_moves_the_probes(render_overlay):
    from deploy.helmchart import render

    docs = render_overlay([MANIFESTS], components=[COMPONENTS / "client-ca"])
    webhook = container(find(docs, "Deployment", "servinggate-webhook"))
    settings = parse_args(ServeSettings, webhook["args"][1:], "serve", "")
    assert settings.listener.client_ca_file == "/var/run/servinggate/client-ca/ca.crt"
    pod = find(docs, "Deployment", "servinggate-webhook")["spec"]["template"]["spec"]
    assert {"name": "client-ca", "secret": {"secretName": "servinggate-client-ca", "defaultMode": 0o440}} in pod["volumes"]
    # the chart's clientCA value renders the same container, but for the Secret's name
    chart = render({"clientCA": {"secretName": "servinggate-client-ca"}}).container("servinggate-webhook")
    for key in ("startupProbe", "livenessProbe", "readinessProbe", "volumeMounts"):
        assert webhook[key] == chart[key], key
    assert webhook["args"][-1] == chart["args"][-1]


def test_the_admission_network_policy_component_is_the_charts_default(render_overlay):
    from deploy.helmchart import render

    docs = render_overlay([MANIFESTS], components=[COMPONENTS / "admission-networkpolicy"])
    policy = find(docs, "NetworkPolicy", "servinggate-webhook-ingress")
    kubernetes_validate.validate(policy, "1.28.0", strict=True)
    webhook = find(docs, "Deployment", "servinggate-webhook")
    assert _selects(policy["spec"]["podSelector"]["matchLabels"], _pod_labels(webhook))
    assert not _selects(policy["spec"]["podSelector"]["matchLabels"], _pod_labels(find(docs, "Deployment", "servinggate-reconciler")))
    ports = {p["name"] for p in container(webhook)["ports"]}
    assert {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]} == ports
    chart = render({"networkPolicy": {"enabled": True}}).find("NetworkPolicy", "servinggate-webhook-ingress")
    assert chart["spec"] == policy["spec"]
