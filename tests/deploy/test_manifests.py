"""The kustomize base and the cert-manager overlay: valid, hardened, and consistent with the
code's settings and the rule registry."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from webhook.certs.issuing import service_sans
from webhook.config import _settings_fields, env_of, load, parse_args
from webhook.deploy import configurations, generating
from webhook.scalein.settings import ReconcileSettings
from webhook.servesettings import ServeSettings

REPO = Path(__file__).resolve().parents[2]
K8S_VERSION = "1.28.0"
CERT_MANAGER_KINDS = {("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate")}
NS = "servinggate-system"


def _key(doc):
    meta = doc["metadata"]
    return (doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"])


# ---- rendering and schemas ---------------------------------------------------------------------


def test_every_object_is_valid_against_the_kubernetes_1_28_schemas(variant):
    name, docs = variant
    without_schema = set()
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            without_schema.add((doc["apiVersion"], doc["kind"]))
    # Only cert-manager's kinds have no built-in schema; they are checked in their own test.
    assert without_schema <= CERT_MANAGER_KINDS
    assert bool(without_schema) == (name == "cert-manager")


def test_the_top_level_kustomization_is_the_base(base_docs):
    top = yaml.safe_load((REPO / "manifests" / "kustomization.yaml").read_text())
    assert top["resources"] == ["base"]
    assert {d["kind"] for d in base_docs} >= {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "ConfigMap",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    }


def _renderers():
    # The test renderer always; kubectl's kustomize as well where it is installed.
    out = ["python"]
    if shutil.which("kubectl"):
        out.append("kubectl")
    return out


@pytest.mark.parametrize("renderer", _renderers())
def test_kustomize_renders_what_the_tests_check(renderer, variant, tmp_path):
    name, docs = variant
    if renderer == "python":
        rendered = docs
    else:
        target = {"base": "manifests", "cert-manager": "manifests/overlays/cert-manager"}[name]
        out = subprocess.run(["kubectl", "kustomize", target], cwd=REPO, capture_output=True, text=True, check=True).stdout
        rendered = [d for d in yaml.safe_load_all(out) if d]
    assert sorted(map(_key, rendered)) == sorted(map(_key, docs))
    by_key = {_key(d): d for d in rendered}
    for doc in docs:
        assert by_key[_key(doc)] == doc, _key(doc)


def test_everything_namespaced_lives_in_our_namespace(variant):
    _, docs = variant
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
    for doc in docs:
        if doc["kind"] in cluster_scoped:
            assert "namespace" not in doc["metadata"], _key(doc)
        else:
            assert doc["metadata"]["namespace"] == NS, _key(doc)
    for doc in docs:
        for subject in doc.get("subjects") or ():
            assert subject["namespace"] == NS


# ---- webhook configurations ----------------------------------------------------------------------


def test_the_committed_generated_files_match_the_registry():
    files = generating.outputs()
    assert Path("base") / generating.OUTPUT_FILE in files
    for relative, text in files.items():
        path = REPO / "manifests" / relative
        assert path.exists() and path.read_text() == text, f"{path} is stale; run: python -m webhook manifests"


def test_manifests_command_check_mode(tmp_path, tmp_path_factory, capsys):
    chart = ["--chart-dir", str(tmp_path_factory.mktemp("chart"))]  # the chart's files: tests/deploy/test_chart.py
    assert generating.main(["--manifests-dir", str(tmp_path), "--check", *chart]) == 1
    assert generating.main(["--manifests-dir", str(tmp_path), *chart]) == 0
    assert generating.main(["--manifests-dir", str(tmp_path), "--check", *chart]) == 0
    assert (tmp_path / "base" / generating.OUTPUT_FILE).read_text() == generating.render()
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    assert written == set(generating.outputs())
    # One stale component is enough for --check to fail.
    some_component = next(p for p in written if p.parts[0] == "components")
    (tmp_path / some_component).write_text("# edited by hand\n")
    assert generating.main(["--manifests-dir", str(tmp_path), "--check", *chart]) == 1
    assert "out of date" in capsys.readouterr().err


def _configs(docs):
    return [d for d in docs if d["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")]


def test_each_pod_population_says_why_it_fails_open_or_closed(base_docs):
    mutating = next(c for c in _configs(base_docs) if c["kind"] == "MutatingWebhookConfiguration")
    reasons = mutating["metadata"]["annotations"]
    policies = {h["name"].split(".", 1)[0]: h["failurePolicy"] for h in mutating["webhooks"]}
    assert policies == {"pods-modelserving": "Ignore", "pods-gang": "Fail"}
    for entry, policy in policies.items():
        why = reasons[f"failure-policy.servinggate.io/{entry}"]
        assert why.startswith(f"{policy}: ") and len(why) > 40


def test_every_webhook_entry_has_the_safe_settings(base_docs):
    configs = _configs(base_docs)
    assert {(c["kind"], c["metadata"]["name"]) for c in configs} == {
        ("ValidatingWebhookConfiguration", "servinggate-validating"),
        ("MutatingWebhookConfiguration", "servinggate-mutating"),
    }
    assert set(ServeSettings().certs.webhook_config_names) == {
        f"{c['kind'].removesuffix('WebhookConfiguration').lower()}/{c['metadata']['name']}" for c in configs
    }
    for config in configs:
        validating = config["kind"].startswith("Validating")
        assert config["webhooks"]
        for hook in config["webhooks"]:
            assert hook["admissionReviewVersions"] == ["v1"]
            assert hook["sideEffects"] == "None"
            assert hook["matchPolicy"] == "Equivalent"
            # Kthena's pods fail open (our mutation repairs what Kthena writes, and Kthena does
            # not retry a refused create); every other entry fails closed
            assert hook["failurePolicy"] == ("Ignore" if hook["name"] == "pods-modelserving.mutate.servinggate.io" else "Fail")
            assert hook["timeoutSeconds"] == (5 if validating else 2)
            assert hook["clientConfig"]["service"] == {
                "name": "servinggate-webhook",
                "namespace": NS,
                "path": "/validate" if validating else "/mutate",
                "port": 443,
            }
            assert "caBundle" not in hook["clientConfig"]
            assert hook["namespaceSelector"] == {
                "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-node-lease", "kube-system", NS]}]
            }
            for rule in hook["rules"]:
                assert "*" not in rule["operations"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]


def _matches(selector: dict, labels: dict) -> bool:
    for expr in selector.get("matchExpressions", ()):
        present = expr["key"] in labels
        if expr["operator"] == "Exists" and not present:
            return False
        if expr["operator"] == "DoesNotExist" and present:
            return False
        if expr["operator"] == "In" and labels.get(expr["key"]) not in expr["values"]:
            return False
        if expr["operator"] == "NotIn" and present and labels[expr["key"]] in expr["values"]:
            return False
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def test_pods_are_only_sent_with_one_of_our_labels_and_once(base_docs):
    ms, gang = "modelserving.volcano.sh/name", "servinggate.io/gang"
    for config in _configs(base_docs):
        pod_hooks = [h for h in config["webhooks"] if any("pods" in r["resources"] and r["apiGroups"] == [""] for r in h["rules"])]
        for hook in pod_hooks:
            assert all(r["resources"] == ["pods"] for r in hook["rules"]), "pod entries hold only pod rules"
            assert hook["objectSelector"]
        skip = "servinggate.io/skip"
        for labels, calls in (
            ({}, 0),
            ({"app": "x"}, 0),
            ({ms: "a"}, 1),
            ({gang: "g"}, 1),
            ({ms: "a", gang: "g"}, 1),
            ({ms: "a", skip: "true"}, 0),
            ({gang: "g", skip: "true"}, 0),
            ({ms: "a", skip: "false"}, 1),
        ):
            assert sum(_matches(h["objectSelector"], labels) for h in pod_hooks) == (calls if pod_hooks else 0), (config["kind"], labels)
    mutating = next(c for c in _configs(base_docs) if c["kind"] == "MutatingWebhookConfiguration")
    assert any(r["resources"] == ["pods"] for h in mutating["webhooks"] for r in h["rules"])


def test_rules_cover_each_registered_resource_with_exactly_its_operations(base_docs):
    rules = configurations.registry_rules()
    for action, kind in (("validate", "ValidatingWebhookConfiguration"), ("mutate", "MutatingWebhookConfiguration")):
        config = next(c for c in _configs(base_docs) if c["kind"] == kind)
        granted: dict[tuple[str, str], set[str]] = {}
        for hook in config["webhooks"]:
            seen_in_hook = set()
            for rule in hook["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        seen_in_hook.add((group, resource))
                        granted.setdefault((group, resource), set()).update(rule["operations"])
        wanted: dict[tuple[str, str], set[str]] = {}
        for rule in rules:
            if rule.action == action:
                wanted.setdefault((rule.target.group, rule.target.full_resource), set()).update(rule.target.operations)
        assert granted == wanted, action
    assert ("workload.serving.volcano.sh", "modelservings/scale") in {(r.target.group, r.target.full_resource) for r in rules if r.target.subresource}


# ---- the webhook Deployment ----------------------------------------------------------------------


def _container(deployment):
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def _assert_hardened(deployment):
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert isinstance(pod["securityContext"]["runAsUser"], int) and pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    c = _container(deployment)
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert {"cpu", "memory"} <= set(c["resources"]["requests"])
    assert "cpu" not in c["resources"].get("limits", {})
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert "/tmp" in mounts


def test_the_webhook_deployment_is_highly_available_and_hardened(base_docs):
    dep = find_(base_docs, "Deployment", "servinggate-webhook")
    _assert_hardened(dep)
    spec, pod = dep["spec"], dep["spec"]["template"]["spec"]
    assert spec["replicas"] == 3
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert any(t["topologyKey"] == "kubernetes.io/hostname" for t in pod["topologySpreadConstraints"])
    for t in pod["topologySpreadConstraints"]:
        assert t["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    pdb = find_(base_docs, "PodDisruptionBudget", "servinggate-webhook")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == spec["selector"]["matchLabels"]

    c = _container(dep)
    assert c["args"][0] == "serve"
    settings = parse_args(ServeSettings, c["args"][1:], "serve", "")
    assert settings.certs.cert_management == "self"
    port = next(p for p in c["ports"] if p["name"] == "https")
    assert port["containerPort"] == settings.listener.port == 8443
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    # The certificate folder and the metrics folder are writable volumes (read-only root).
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts[str(settings.listener.certs_dir)]]
    assert settings.listener.metrics_dir.startswith("/tmp/") and "emptyDir" in volumes[mounts["/tmp"]]
    # Shutdown: a delay before SIGTERM so the endpoint is gone first, then gunicorn's graceful
    # timeout; both fit in the grace period.
    delay_cmd = c["lifecycle"]["preStop"]["exec"]["command"]
    assert delay_cmd[0] == "python"
    delay = float(delay_cmd[-1].rsplit("(", 1)[1].rstrip(")"))
    assert delay >= 5
    assert pod["terminationGracePeriodSeconds"] > delay + settings.listener.graceful_timeout
    # Environment variables are real settings.
    known = {env_of(f) for f in _settings_fields(ServeSettings)}
    assert {e["name"] for e in c.get("env", ())} <= known
    assert pod["serviceAccountName"] == "servinggate-webhook"


def test_the_service_sends_443_to_the_webhook_port(base_docs):
    svc = find_(base_docs, "Service", "servinggate-webhook")
    dep = find_(base_docs, "Deployment", "servinggate-webhook")
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}]
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert ServeSettings().certs.service_name == svc["metadata"]["name"]
    assert ServeSettings().certs.service_namespace == svc["metadata"]["namespace"]


# ---- the reconciler -----------------------------------------------------------------------------


def test_the_reconciler_runs_two_leader_elected_replicas_from_its_configmap(base_docs, tmp_path):
    dep = find_(base_docs, "Deployment", "servinggate-reconciler")
    _assert_hardened(dep)
    assert dep["spec"]["replicas"] == 2
    c = _container(dep)
    assert c["args"] == ["reconcile"]
    env = {e["name"]: e for e in c["env"]}
    config_path = Path(env["SERVINGGATE_CONFIG"]["value"])
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == str(config_path.parent))
    volume = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    cm = find_(base_docs, "ConfigMap", volume["configMap"]["name"])
    (tmp_path / config_path.name).write_text(cm["data"][config_path.name])
    settings = load(ReconcileSettings, {}, environ={"SERVINGGATE_CONFIG": str(tmp_path / config_path.name)})
    assert settings.scoring.enable_scale_in_score is True
    assert settings.runtime.leader_elect is True
    assert settings.runtime.dry_run is False
    known = {env_of(f) for f in _settings_fields(ReconcileSettings)} | {"SERVINGGATE_CONFIG", "POD_NAME"}
    assert set(env) <= known
    port = next(p for p in c["ports"] if p["name"] == "health")
    assert port["containerPort"] == settings.runtime.health_port
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "servinggate-reconciler"


# ---- the cert-manager overlay --------------------------------------------------------------------


def test_the_cert_manager_overlay_mounts_the_issued_secret_and_turns_self_management_off(overlay_docs):
    dep = find_(overlay_docs, "Deployment", "servinggate-webhook")
    c = _container(dep)
    settings = parse_args(ServeSettings, c["args"][1:], "serve", "")
    assert settings.certs.cert_management == "files"
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    certs_mount = mounts[str(settings.listener.certs_dir)]
    assert certs_mount.get("readOnly") is True
    volume = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == certs_mount["name"])
    cert = find_(overlay_docs, "Certificate", "servinggate-webhook")
    assert volume["secret"]["secretName"] == cert["spec"]["secretName"]
    assert set(cert["spec"]["dnsNames"]) >= set(service_sans(settings.certs.service_name, settings.certs.service_namespace))
    assert "server auth" in cert["spec"]["usages"]
    issuer = find_(overlay_docs, "Issuer", cert["spec"]["issuerRef"]["name"])
    ca_secret = issuer["spec"]["ca"]["secretName"]
    ca_cert = next(d for d in overlay_docs if d["kind"] == "Certificate" and d["spec"]["secretName"] == ca_secret)
    assert ca_cert["spec"]["isCA"] is True
    self_signed = find_(overlay_docs, "Issuer", ca_cert["spec"]["issuerRef"]["name"])
    assert self_signed["spec"] == {"selfSigned": {}}
    for doc in overlay_docs:
        if doc["apiVersion"] == "cert-manager.io/v1":
            assert doc["metadata"]["namespace"] == NS
            assert doc["kind"] in ("Issuer", "Certificate")
            if doc["kind"] == "Certificate":
                assert set(doc["spec"]) <= {"secretName", "duration", "renewBefore", "dnsNames", "privateKey", "usages", "issuerRef", "isCA", "commonName"}
                assert doc["spec"]["issuerRef"]["kind"] == "Issuer"
    for config in _configs(overlay_docs):
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NS}/{cert['metadata']['name']}"
    # Without self-management the webhook may not touch Secrets or webhook configurations.
    kinds = {(d["kind"], d["metadata"]["name"]) for d in overlay_docs}
    assert ("ClusterRole", "servinggate-webhook-cabundle") not in kinds
    assert ("Role", "servinggate-webhook-certs") not in kinds


def find_(docs, kind, name):
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, f"{kind} {name}: {len(hits)} objects"
    return hits[0]


def _dockerfile_final_stage():
    """Instructions of the Dockerfile's last stage as (keyword, argument) pairs."""
    lines, joined = [], ""
    for raw in (REPO / "Dockerfile").read_text().splitlines():
        if raw.strip().startswith("#") or not raw.strip():
            continue
        joined += raw.rstrip("\\").strip() + " "
        if not raw.rstrip().endswith("\\"):
            lines.append(joined.strip())
            joined = ""
    stages = [i for i, line in enumerate(lines) if line.upper().startswith("FROM ")]
    assert len(stages) >= 2, "multi-stage build expected"
    return [tuple(line.split(None, 1)) for line in lines[stages[-1] :]]


def test_the_image_runs_what_the_deployments_ask_for(base_docs):
    """The Deployments pass only arguments (`serve ...`, `reconcile`) and rely on the image's
    entry point, user and PATH; a change on one side alone breaks the pods, not the build."""
    import json

    final = _dockerfile_final_stage()
    kw = {k.upper(): v for k, v in final}
    assert json.loads(kw["ENTRYPOINT"]) == ["python", "-m", "webhook"]
    user = kw["USER"].split(":")
    assert all(part.isdigit() for part in user) and int(user[0]) != 0  # numeric, so runAsNonRoot can check it
    assert not any(k.upper() == "RUN" and ("gcc" in v or "build-essential" in v) for k, v in final)
    assert "/opt/servinggate/bin" in kw["ENV"]  # `python` of the preStop hook is the venv's
    for name in ("servinggate-webhook", "servinggate-reconciler"):
        pod = find_(base_docs, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(user[0])
        assert "command" not in _container(find_(base_docs, "Deployment", name))
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*") + 1 :][:4] == ["!pyproject.toml", "!README.md", "!webhook/", "!LICENSE"]


def test_the_license_goes_into_the_package_and_the_image():
    """Apache-2.0 (pyproject.toml) asks that its text go with every copy: setuptools puts LICENSE
    into the package's metadata, and the build stage copies it in before installing."""
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"] == {"text": "Apache-2.0"}
    assert (REPO / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    build = (REPO / "Dockerfile").read_text().split("\nFROM ")[1]
    copied = build.index("COPY README.md LICENSE ./")
    assert copied < build.index("pip install --no-deps .")


# ---- every overlay and component renders with kubectl --------------------------------------------

from deploy.rendering import COMPONENTS, kubectl_kustomize  # noqa: E402


def _component_dirs():
    return sorted(p.name for p in COMPONENTS.iterdir() if (p / "kustomization.yaml").exists())


def test_the_components_are_kustomize_components():
    assert _component_dirs()
    for name in _component_dirs():
        spec = yaml.safe_load((COMPONENTS / name / "kustomization.yaml").read_text())
        assert (spec["apiVersion"], spec["kind"]) == ("kustomize.config.k8s.io/v1alpha1", "Component"), name


@pytest.mark.parametrize("target", ["manifests", "manifests/overlays/cert-manager"])
@pytest.mark.parametrize("component", _component_dirs())
def test_kubectl_renders_each_component_over_each_variant(target, component, render_overlay):
    plain = kubectl_kustomize(REPO / target)
    with_component = render_overlay([REPO / target], components=[COMPONENTS / component])
    assert with_component != plain
    # A component adds or edits; it never drops one of the install's objects.
    assert set(map(_key, plain)) <= set(map(_key, with_component))


def test_the_image_builds_the_http_parser_the_server_requires():
    """The worker reads every request with gunicorn_h1c's H1CProtocol (a dependency), tested against
    gunicorn's parsers; the build stage has a compiler for it and fails if it does not import,
    while the final stage gets only the virtual environment."""
    text = (REPO / "Dockerfile").read_text()
    build = text[: text.rindex("\nFROM ")]
    assert "gcc" in build and 'python -c "import gunicorn_h1c"' in build
    assert any(dep.startswith("gunicorn_h1c") for dep in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    import gunicorn_h1c

    from webhook.server import http1  # the worker's one request reader

    assert http1.gunicorn_h1c.H1CProtocol is gunicorn_h1c.H1CProtocol
