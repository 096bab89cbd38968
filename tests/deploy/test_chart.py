"""charts/servinggate: lints clean and renders for the defaults and for each value, with the
properties each value promises; a default render equals the kustomize base's webhooks; the schema
refuses wrong types and unknown rule actions; the registry-derived files are current."""

from __future__ import annotations

import base64
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from deploy.helmchart import CHART, NAMESPACE, lint, render, schema_refusal

from webhook.config import compose, parse_args
from webhook.deploy import chartschema, generating
from webhook.deploy.configurations import registry_rules
from webhook.policies.settings import MUTATING_ACTIONS, VALIDATING_ACTIONS
from webhook.servesettings import ServeSettings

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
DEPLOYMENTS = ("servinggate-webhook", "servinggate-reconciler", "servinggate-auditor")
WEBHOOK_FIELDS = (
    "rules",
    "namespaceSelector",
    "objectSelector",
    "matchConditions",
    "timeoutSeconds",
    "failurePolicy",
    "clientConfig",
    "admissionReviewVersions",
    "sideEffects",
    "matchPolicy",
    "reinvocationPolicy",
)


def _serve_args(r) -> ServeSettings:
    args = r.container("servinggate-webhook")["args"]
    assert args[0] == "serve"
    return parse_args(ServeSettings, args[1:], "serve", "")


def _pod(r, name="servinggate-webhook") -> dict:
    return r.find("Deployment", name)["spec"]["template"]["spec"]


def _volume(r, name: str) -> dict:
    return next(v for v in _pod(r)["volumes"] if v["name"] == name)


# ---- each value: what it renders ------------------------------------------------------------------


def _replicas(r):
    assert r.find("Deployment", "servinggate-webhook")["spec"]["replicas"] == 5


def _image(r):
    for dep in DEPLOYMENTS:
        c = r.container(dep)
        assert (c["image"], c["imagePullPolicy"]) == ("registry.example/sg:1.2.3", "Always")
    assert r.hooks[-1]["spec"]["containers"][0]["image"] == "registry.example/sg:1.2.3"


def _pull_secrets(r):
    for dep in DEPLOYMENTS:
        assert _pod(r, dep)["imagePullSecrets"] == [{"name": "regcred"}]


def _resources(r):
    assert r.container("servinggate-webhook")["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}


def _placement(r):
    for dep in DEPLOYMENTS:
        pod = _pod(r, dep)
        assert pod["nodeSelector"] == {"pool": "system"}
        assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        assert pod["affinity"]["nodeAffinity"]


def _no_priority(r):
    assert "priorityClassName" not in _pod(r)
    assert "ResourceQuota" not in r.kinds()


def _log_level(r):
    assert _serve_args(r).log.log_level == "debug"
    assert "log-level: debug" in r.find("ConfigMap", "servinggate-reconciler")["data"]["reconcile.yaml"]


def _webhook_groups(r):
    for name, hook in r.webhooks().items():
        validating = ".validate." in name
        assert (hook["failurePolicy"], hook["timeoutSeconds"]) == (("Ignore", 10) if validating else ("Ignore", 1))


def _rule_actions(r):
    assert dict(_serve_args(r).policies.rule_actions) == {"modelservings.kthena.images": "warn", "pods.gang-labels": "off"}
    # the auditor gets the same, so both call the same findings a deny
    assert [a for a in _audit_args(r) if a.startswith("--rule-actions=")] == ["--rule-actions=modelservings.kthena.images=warn,pods.gang-labels=off"]


def _excluded(r):
    for hook in r.webhooks().values():
        assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["batch", "kube-node-lease", "kube-system", NAMESPACE]
    assert _serve_args(r).policies.skip_namespaces == {"batch", "kube-node-lease", "kube-system"}


def _kserve_namespace(r):
    assert _serve_args(r).policies.kserve_namespace == "ml-serving"


def _cert_manager(r):
    assert _serve_args(r).certs.cert_management == "files"
    assert _volume(r, "certs")["secret"]["secretName"] == "servinggate-webhook-tls"
    for config in ("servinggate-validating", "servinggate-mutating"):
        kind = "ValidatingWebhookConfiguration" if "validating" in config else "MutatingWebhookConfiguration"
        assert r.find(kind, config)["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/servinggate-webhook"}
    cert = r.find("Certificate", "servinggate-webhook")
    assert f"servinggate-webhook.{NAMESPACE}.svc" in cert["spec"]["dnsNames"]
    assert "ClusterRole" in r.kinds() and not any(d["metadata"]["name"] == "servinggate-webhook-cabundle" for d in r.installed)


def _manual(r):
    assert _serve_args(r).certs.cert_management == "files"
    assert _volume(r, "certs")["secret"]["secretName"] == "my-tls"
    assert all(h["clientConfig"]["caBundle"] == CA for h in r.webhooks().values())
    assert not {"Certificate", "Issuer"} & r.kinds()
    assert not any(d["metadata"]["name"] in ("servinggate-webhook-cabundle", "servinggate-webhook-certs") for d in r.installed)


def _url(r):
    for name, hook in r.webhooks().items():
        path = "/validate" if ".validate." in name else "/mutate"
        assert hook["clientConfig"] == {"url": f"https://203.0.113.7:8443{path}", "caBundle": CA}
    assert _serve_args(r).certs.cert_management == "files"


def _service_monitor(r):
    sm = r.find("ServiceMonitor", "servinggate")
    assert sm["metadata"]["labels"]["release"] == "prometheus" and sm["spec"]["endpoints"][0]["interval"] == "15s"
    metrics = [d for d in r.installed if d["kind"] == "Service" and d["metadata"]["labels"].get("servinggate.io/metrics") == "true"]
    assert sorted(d["metadata"]["name"] for d in metrics) == [f"servinggate-{c}-metrics" for c in ("auditor", "reconciler", "webhook")]


def _client_ca(r):
    assert _serve_args(r).listener.client_ca_file == "/var/run/servinggate/client-ca/ca.crt"
    assert _volume(r, "client-ca")["secret"]["secretName"] == "apiserver-clients"
    webhook = r.container("servinggate-webhook")
    assert {"name": "client-ca", "mountPath": "/var/run/servinggate/client-ca", "readOnly": True} in webhook["volumeMounts"]
    # the kubelet presents no client certificate: every probe goes to the plain-HTTP metrics port
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert (webhook[probe]["httpGet"]["port"], webhook[probe]["httpGet"]["scheme"]) == ("metrics", "HTTP")


def _network_policy(r):
    policy = r.find("NetworkPolicy", "servinggate-webhook-ingress")
    kubernetes_validate.validate(policy, "1.28.0", strict=True)
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"] == r.find("Deployment", "servinggate-webhook")["spec"]["selector"]["matchLabels"]
    admission, metrics = spec["ingress"]
    assert admission == {"ports": [{"port": "https", "protocol": "TCP"}], "from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]}
    assert metrics["ports"] == [{"port": "metrics", "protocol": "TCP"}] and metrics["from"] == [{"namespaceSelector": {}}]


def _no_reconciler(r):
    assert not any("reconciler" in d["metadata"]["name"] for d in r.installed)


def _audit_args(r) -> list[str]:
    args = r.container("servinggate-auditor")["args"]
    assert args[0] == "audit"
    return args[1:]


def _audit(r):
    assert _audit_args(r)[:4] == ["--every=1h", "--write-reports", "--leader-elect", "--health-port=8081"]
    assert "--log-level=debug" in _audit_args(r)
    assert _pod(r, "servinggate-auditor")["priorityClassName"] == "low"
    assert r.container("servinggate-auditor")["resources"] == {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}


def _no_audit(r):
    assert not any("auditor" in d["metadata"]["name"] for d in r.installed)
    assert not any(d["metadata"]["labels"].get("app.kubernetes.io/component") == "auditor" for d in r.installed if "labels" in d["metadata"])


def _namespace(r):
    ns = r.find("Namespace", NAMESPACE)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def _no_conditions(r):
    assert not any("matchConditions" in h for h in r.webhooks().values())


def _prometheus_rule(r):
    rule = r.find("PrometheusRule", "servinggate")
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert {a["alert"] for g in rule["spec"]["groups"] for a in g["rules"]} >= {"ServingGateWebhookDown", "ServingGateAuditStale"}


def _grafana_dashboard(r):
    # labels add to the sidecar's default label (Helm merges maps of values)
    labels = r.find("ConfigMap", "servinggate-dashboard")["metadata"]["labels"]
    assert labels["team"] == "serving" and labels["grafana_dashboard"] == "1"


def _fallback(version):
    def check(r):
        policies = [d for d in r.installed if d["kind"] == "ValidatingAdmissionPolicy"]
        assert policies and {d["apiVersion"] for d in policies} == {f"admissionregistration.k8s.io/{version}"}
        # the same policies and bindings as the kustomize component, but for the chart's labels
        component = CHART.parents[1] / "manifests" / "components" / f"cel-fallback-{version}" / "policies.yaml"
        strip = lambda d: {**d, "metadata": {k: v for k, v in d["metadata"].items() if k != "labels"}}  # noqa: E731
        expected = [strip(d) for d in yaml.safe_load_all(component.read_text()) if d]
        assert [strip(d) for d in r.installed if d["kind"].startswith("ValidatingAdmissionPolicy")] == expected

    return check


VALUE_SETS = {
    "replicas": ({"replicas": 5}, _replicas),
    "image": ({"image": {"repository": "registry.example/sg", "tag": "1.2.3", "pullPolicy": "Always"}}, _image),
    "imagePullSecrets": ({"imagePullSecrets": [{"name": "regcred"}]}, _pull_secrets),
    "resources": ({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}}, _resources),
    "placement": (
        {
            "nodeSelector": {"pool": "system"},
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}]
                    }
                }
            },
        },
        _placement,
    ),
    "priorityClassName": ({"priorityClassName": ""}, _no_priority),
    "logLevel": ({"logLevel": "debug"}, _log_level),
    "validating+mutating": (
        {"validating": {"failurePolicy": "Ignore", "timeoutSeconds": 10}, "mutating": {"failurePolicy": "Ignore", "timeoutSeconds": 1}},
        _webhook_groups,
    ),
    "ruleActions": ({"ruleActions": {"modelservings.kthena.images": "warn", "pods.gang-labels": "off"}}, _rule_actions),
    "audit": (
        {
            "audit": {"every": "1h", "priorityClassName": "low", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}},
            "logLevel": "debug",
        },
        _audit,
    ),
    "audit.enabled=false": ({"audit": {"enabled": False}}, _no_audit),
    "excludedNamespaces": ({"excludedNamespaces": ["batch"]}, _excluded),
    "kserveNamespace": ({"kserveNamespace": "ml-serving"}, _kserve_namespace),
    "certificates=cert-manager": ({"certificates": {"mode": "cert-manager"}}, _cert_manager),
    "certificates=manual": ({"certificates": {"mode": "manual", "caBundle": CA, "secretName": "my-tls"}}, _manual),
    "webhook.url": ({"webhook": {"url": "https://203.0.113.7:8443/", "caBundle": CA}}, _url),
    "serviceMonitor": ({"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prometheus"}}}, _service_monitor),
    "reconciler": ({"reconciler": {"enabled": False}}, _no_reconciler),
    "clientCA": ({"clientCA": {"secretName": "apiserver-clients"}}, _client_ca),
    "networkPolicy": ({"networkPolicy": {"enabled": True, "admissionFrom": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]}}, _network_policy),
    "prometheusRule": ({"prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}}, _prometheus_rule),
    "grafanaDashboard": ({"grafanaDashboard": {"enabled": True, "labels": {"team": "serving"}}}, _grafana_dashboard),
    "namespace.create": ({"namespace": {"create": True}}, _namespace),
    "matchConditions": ({"matchConditions": {"enabled": False}}, _no_conditions),
    "celFallback=v1": ({"celFallback": "v1"}, _fallback("v1")),
    "celFallback=v1beta1": ({"celFallback": "v1beta1"}, _fallback("v1beta1")),
}


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_each_value_renders_what_it_promises(name):
    values, check = VALUE_SETS[name]
    check(render(values))


@pytest.mark.parametrize("name", ["defaults", *sorted(VALUE_SETS)])
def test_the_chart_lints_clean(name):
    values = VALUE_SETS[name][0] if name != "defaults" else {}
    # The v1beta1 fallback is for Kubernetes 1.28-1.29: lint it as that release (newer ones drop the API).
    report = lint(values, kube_version="v1.29.0" if name == "celFallback=v1beta1" else None)
    assert not report["errors"]
    assert all(m["severity"] < 2 for m in report["messages"]), report["messages"]


# ---- a default render is the kustomize base -------------------------------------------------------


def test_a_default_render_has_the_kustomize_bases_webhooks(base_docs):
    def webhooks(docs):
        return {
            (d["kind"], d["metadata"]["name"], h["name"]): {k: h.get(k) for k in WEBHOOK_FIELDS}
            for d in docs
            if d["kind"].endswith("WebhookConfiguration")
            for h in d["webhooks"]
        }

    expected, rendered = webhooks(base_docs), webhooks(render().installed)
    assert list(rendered) == list(expected)
    for key in expected:
        assert rendered[key] == expected[key], key


def test_a_default_render_installs_what_the_kustomize_base_installs(base_docs):
    """The same objects, by kind and name, but the Namespace (the chart's is opt-in); the webhook's
    arguments and the reconciler's settings are the base's."""
    r = render()
    key = lambda d: (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", ""))  # noqa: E731
    assert sorted(map(key, r.installed)) == sorted(key(d) for d in base_docs if d["kind"] != "Namespace")
    for name in DEPLOYMENTS:
        base = next(d for d in base_docs if (d["kind"], d["metadata"]["name"]) == ("Deployment", name))
        base_pod, pod = base["spec"]["template"]["spec"], r.find("Deployment", name)["spec"]["template"]["spec"]
        assert pod == base_pod, name
        assert r.find("Deployment", name)["spec"]["replicas"] == base["spec"]["replicas"], name
    for kind in ("ClusterRole", "Role", "ResourceQuota", "PodDisruptionBudget", "ConfigMap", "Service"):
        for base in (d for d in base_docs if d["kind"] == kind):
            mine = r.find(kind, base["metadata"]["name"])
            assert {k: v for k, v in mine.items() if k != "metadata"} == {k: v for k, v in base.items() if k != "metadata"}


def test_the_chart_installs_no_crd():
    """The PolicyReport CRD is wg-policy-prototypes' (Kyverno's chart installs it too, docs/audit.md):
    the chart neither holds nor installs it, whatever the values."""
    assert not (CHART / "files").exists()
    for values in ({}, *(v for v, _ in VALUE_SETS.values())):
        assert not any(d["kind"] == "CustomResourceDefinition" for d in render(values).installed + render(values).hooks)


def test_every_object_is_valid_against_the_kubernetes_1_28_schemas():
    everything = {"celFallback": "v1beta1", "namespace": {"create": True}, "excludedNamespaces": ["batch"], "ruleActions": {"pods.gang-labels": "off"}}
    for r in (render(), render(everything), render(VALUE_SETS["certificates=manual"][0])):
        for doc in r.installed + r.hooks:
            kubernetes_validate.validate(doc, "1.28.0", strict=True)


def test_everything_follows_the_release_namespace():
    values = {
        "namespace": {"create": True},
        "serviceMonitor": {"enabled": True},
        "celFallback": "v1",
        "certificates": {"mode": "cert-manager"},
        "prometheusRule": {"enabled": True},
        "grafanaDashboard": {"enabled": True},
    }
    for r in (render(namespace="team-a"), render(values, namespace="team-a")):
        assert "servinggate-system" not in r.text
        for doc in r.installed + r.hooks:
            if doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition") and not doc["kind"].endswith(
                ("WebhookConfiguration", "Policy", "PolicyBinding")
            ):
                assert doc["metadata"]["namespace"] in ("team-a", "default"), (doc["kind"], doc["metadata"]["name"])
            for subject in doc.get("subjects") or ():
                assert subject["namespace"] == "team-a"


# ---- the helm test hook ----------------------------------------------------------------------------


def test_the_test_hook_runs_smoke_with_create_only_in_the_smoke_namespace():
    r = render({"smoke": {"namespace": "tenant-x"}})
    hooks = {d["kind"]: d for d in r.hooks}
    assert set(hooks) == {"ServiceAccount", "Role", "RoleBinding", "Pod"}
    assert all(d["metadata"]["annotations"]["helm.sh/hook"] == "test" for d in r.hooks)
    pod = hooks["Pod"]
    assert pod["spec"]["containers"][0]["args"] == ["smoke", "--namespace", "tenant-x"]
    assert pod["spec"]["serviceAccountName"] == hooks["ServiceAccount"]["metadata"]["name"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    role = hooks["Role"]
    assert role["metadata"]["namespace"] == "tenant-x" and hooks["RoleBinding"]["metadata"]["namespace"] == "tenant-x"
    assert {(g, res, tuple(rule["verbs"])) for rule in role["rules"] for g in rule["apiGroups"] for res in rule["resources"]} == {
        ("workload.serving.volcano.sh", "modelservings", ("create",)),
        ("", "pods", ("create",)),
    }
    assert hooks["RoleBinding"]["subjects"] == [{"kind": "ServiceAccount", "name": "servinggate-smoke", "namespace": NAMESPACE}]
    # the hook's objects exist only while the test runs
    assert all("hook-succeeded" in d["metadata"]["annotations"]["helm.sh/hook-delete-policy"] for d in r.hooks)


# ---- the schema ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, where",
    [
        ({"replicas": "three"}, "/replicas"),
        ({"image": {"tag": 7}}, "/image/tag"),
        ({"validating": {"timeoutSeconds": 31}}, "/validating/timeoutSeconds"),
        ({"mutating": {"failurePolicy": "fail"}}, "/mutating/failurePolicy"),
        ({"certificates": {"mode": "auto"}}, "/certificates/mode"),
        ({"ruleActions": {"modelservings.kthena.images": "on"}}, "/ruleActions/modelservings.kthena.images"),
        ({"ruleActions": {"pods.gang-labels": "deny"}}, "/ruleActions/pods.gang-labels"),
        ({"ruleActions": {"no.such-rule": "off"}}, "/ruleActions"),
        ({"replica": 3}, "replica"),
        ({"excludedNamespaces": ["Not_A_Namespace"]}, "/excludedNamespaces/0"),
        ({"webhook": {"url": "http://plain"}}, "/webhook/url"),
        ({"audit": {"enabled": "yes"}}, "/audit/enabled"),
        ({"audit": {"every": "ten minutes"}}, "/audit/every"),
        ({"policyReports": {"installCRD": True}}, "policyReports"),  # the chart no longer installs the PolicyReport CRD
    ],
)
def test_the_schema_refuses_wrong_values(values, where):
    assert where in schema_refusal(values)


def test_the_schema_lists_every_rule_with_the_actions_serve_accepts():
    properties = chartschema.schema(registry_rules())["properties"]["ruleActions"]["properties"]
    assert set(properties) == {r.name for r in registry_rules()}
    for rule in registry_rules():
        allowed = VALIDATING_ACTIONS if rule.action == "validate" else MUTATING_ACTIONS
        assert properties[rule.name]["enum"] == list(allowed)
        for action in allowed:  # every action the schema allows, serve accepts
            compose(ServeSettings, rule_actions=((rule.name, action),)).policies.check()
    assert schema_refusal({"ruleActions": {r.name: ("warn" if r.action == "validate" else "off") for r in registry_rules()}}) == ""


def test_the_default_values_pass_the_schema_and_name_every_key_it_knows():
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    assert schema_refusal(defaults) == ""
    assert set(defaults) == set(chartschema.schema(registry_rules())["properties"]) - {"global"}


# ---- generated files -------------------------------------------------------------------------------


def test_the_committed_chart_files_match_the_registry():
    for relative, text in generating.chart_outputs().items():
        path = CHART / relative
        assert path.exists() and path.read_text() == text, f"{path} is stale; run: python -m webhook manifests"


def test_manifests_check_mode_covers_the_chart(tmp_path: Path, capsys):
    manifests, chart = tmp_path / "manifests", tmp_path / "chart"
    args = ["--manifests-dir", str(manifests), "--chart-dir", str(chart)]
    assert generating.main(args) == 0
    assert generating.main([*args, "--check"]) == 0
    assert {p.relative_to(chart) for p in chart.rglob("*") if p.is_file()} == set(generating.chart_outputs())
    (chart / "values.schema.json").write_text("{}\n")
    assert generating.main([*args, "--check"]) == 1
    assert "values.schema.json is out of date" in capsys.readouterr().err


MUTATING_POLICY = "servinggate/templates/generated-mutating-policy.yaml"


@pytest.mark.parametrize(("choice", "rendered"), [("auto", False), ("on", True), ("off", False)])
def test_the_mutating_policy_by_choice_and_the_clusters_api(choice, rendered):
    """`mutatingPolicy: auto` renders the policy only where the cluster serves it (helm's own
    capabilities, with no cluster, do not: 1.36+ clusters do); the file says which was chosen."""
    r = render({"mutatingPolicy": choice})
    docs = r.by_template.get(MUTATING_POLICY, [])
    assert [d["kind"] for d in docs] == (["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"] if rendered else [])
    said = "rendered at v1" if rendered else "not rendered"
    assert f"# mutatingPolicy {choice}: {said} (the cluster serves MutatingAdmissionPolicy at no version)" in r.text
    assert [d["apiVersion"] for d in docs] == (["admissionregistration.k8s.io/v1"] * 2 if rendered else [])


def test_the_charts_mutating_policy_is_the_components():
    from webhook.deploy.mutationpolicy import policy_and_binding

    policy, binding = render({"mutatingPolicy": "on", "excludedNamespaces": ["batch"]}).by_template[MUTATING_POLICY]
    ours, our_binding = policy_and_binding()
    assert policy["spec"] == ours["spec"]
    assert binding["spec"]["matchResources"]["objectSelector"] == our_binding["spec"]["matchResources"]["objectSelector"]
    assert "batch" in binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]


@pytest.mark.parametrize(("choice", "gang"), [("on", "Ignore"), ("off", "Fail"), ("auto", "Fail")])
def test_the_opt_in_gangs_entry_fails_open_where_the_policy_mutates_its_pods(choice, gang):
    """With the policy rendered the API server makes an opt-in gang's pod right itself, so the
    webhook's entry for those pods has nothing left to fail closed for; Kthena's stays Ignore."""
    hooks = render({"mutatingPolicy": choice}).webhooks()
    assert hooks["pods-gang.mutate.servinggate.io"]["failurePolicy"] == gang
    assert hooks["pods-modelserving.mutate.servinggate.io"]["failurePolicy"] == "Ignore"
    assert render({"mutatingPolicy": "off", "mutating": {"failurePolicy": "Ignore"}}).webhooks()["pods-gang.mutate.servinggate.io"]["failurePolicy"] == "Ignore"
