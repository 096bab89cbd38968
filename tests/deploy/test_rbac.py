"""RBAC grants exactly the API calls the code makes: nothing missing, nothing more.

The calls are read from the code: every method of an official client API object (`client.*Api`)
that a module under webhook/ uses, resolved to its HTTP method and path through the client's own
request builder, then to the (verb, group, resource) the API server authorizes. The custom
resources the lookups read are the ones the rules ask for (`ctx.lookups.get(api_version, kind,
...)`, evaluated in their module). The result is compared with what the manifests grant.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path

import kubernetes.client.api as client_apis

from webhook.admission.review import plural_of
from webhook.audit import reports as audit_reports
from webhook.audit.kinds import audited_kinds
from webhook.audit.settings import AuditSettings
from webhook.certs.settings import webhook_configuration
from webhook.policies.kserve import KSERVE_CONFIG_NAME
from webhook.policies.projections import KEPT
from webhook.scalein import topology as hypernode_topology
from webhook.scalein.settings import ReconcileSettings
from webhook.servesettings import ServeSettings

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "webhook"
WEBHOOK_SA, RECONCILER_SA, AUDITOR_SA = "servinggate-webhook", "servinggate-reconciler", "servinggate-auditor"
SERVE, RECONCILE, AUDIT = ServeSettings(), ReconcileSettings(), AuditSettings()
EVERYWHERE = {"base", "cert-manager"}

# Which identities run a module's calls, and in which variants the calls happen
# (the certificate keeper only runs with cert-management=self, i.e. not in the cert-manager overlay).
OWNERS = {
    "webhook/kube/lookups.py": [(WEBHOOK_SA, EVERYWHERE)],
    "webhook/kube/watching.py": [(WEBHOOK_SA, EVERYWHERE)],
    "webhook/kube/leases.py": [(RECONCILER_SA, EVERYWHERE), (AUDITOR_SA, EVERYWHERE)],
    "webhook/certs/keeper.py": [(WEBHOOK_SA, {"base"})],
    "webhook/scalein/plan/planning.py": [],  # `plan` runs with the kubeconfig of whoever runs it
    "webhook/kube/crds.py": [],  # `check --kubeconfig` lists CRDs with the kubeconfig of whoever runs it
    "webhook/scalein/": [(RECONCILER_SA, EVERYWHERE)],
    "webhook/audit/": [(AUDITOR_SA, EVERYWHERE)],
}


# The custom resources a module reads or writes through CustomObjectsApi (`{group}` in the path):
# the lookups read what the rules look up; the watcher lists what the store keeps (the looked-up
# kinds and the cluster facts); the auditor lists what the rules judge and what the store keeps,
# and writes its PolicyReports.
def _kept() -> set[tuple[str, str]]:
    """The custom kinds the ProjectionStore keeps (the core one, Node, is listed through CoreV1Api)."""
    return {(e.group, e.plural) for e in KEPT if e.group}


CUSTOM = {
    "webhook/kube/watching.py": _kept,
    "webhook/audit/listing.py": lambda: {(k.group, k.resource) for k in audited_kinds()} | _kept(),
    "webhook/audit/writing.py": lambda: {(audit_reports.GROUP, audit_reports.PLURAL)},
    "webhook/scalein/reconcile/watching.py": lambda: {(hypernode_topology.GROUP, hypernode_topology.PLURAL)},
}


def configured(kind: str) -> list[str]:
    """The names of the webhook configurations of `kind` the keeper is set to patch."""
    return [name for k, name in map(webhook_configuration, SERVE.certs.webhook_config_names) if k == kind]


# Objects the code addresses by a configured name (so the grant can name them), and where.
NAMED = {
    (WEBHOOK_SA, "", "secrets"): (SERVE.certs.service_namespace, [SERVE.certs.cert_secret_name]),
    # KServe's ConfigMap: its namespace is a setting, so the grant is cluster-wide for that name only
    (WEBHOOK_SA, "", "configmaps"): (None, [KSERVE_CONFIG_NAME]),
    (WEBHOOK_SA, "admissionregistration.k8s.io", "validatingwebhookconfigurations"): (None, configured("validating")),
    (WEBHOOK_SA, "admissionregistration.k8s.io", "mutatingwebhookconfigurations"): (None, configured("mutating")),
    (RECONCILER_SA, "coordination.k8s.io", "leases"): (RECONCILE.runtime.lease_namespace, [RECONCILE.runtime.lease_name]),
    (AUDITOR_SA, "coordination.k8s.io", "leases"): (AUDIT.auditor.lease_namespace, [AUDIT.auditor.lease_name]),
}
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _api_classes(sources: list[str]) -> dict[str, type]:
    """The official client's API classes that `sources` name. The package loads each class lazily,
    and loading all of them costs seconds, so only the names a source mentions are asked for."""
    mentioned = {m for text in sources for m in re.findall(r"\b(\w+Api)\b", text)}
    out = {}
    for name in sorted(mentioned & set(dir(client_apis))):
        cls = getattr(client_apis, name)
        if isinstance(cls, type):
            out[name] = cls
    return out


def _request_of(cls: type, method: str) -> tuple[str, str]:
    base = method.removesuffix("_with_http_info").removesuffix("_without_preload_content")
    source = inspect.getsource(getattr(cls, f"_{base}_serialize"))
    return re.search(r"method='(\w+)'", source)[1], re.search(r"resource_path='([^']+)'", source)[1]


def _api_receivers(nodes: list[ast.AST], classes: dict[str, type]) -> dict[str, type]:
    """Expressions (as source text) bound to an API object: `x = client.FooApi(...)`,
    `self.x = client.FooApi(...)`, parameters annotated `client.FooApi` and `self.x = param`."""

    def api_class(node: ast.AST | None) -> type | None:
        if node is None:
            return None
        name = ast.unparse(node).rsplit(".", 1)[-1].strip("'\"")
        return classes.get(name)

    receivers: dict[str, type] = {}
    params: dict[str, type] = {}
    for node in nodes:
        if isinstance(node, ast.arg) and api_class(node.annotation):
            params[node.arg] = api_class(node.annotation)
    for node in nodes:
        if not isinstance(node, ast.Assign):
            continue
        pairs = [(t, node.value) for t in node.targets]
        for target in node.targets:  # `self.api, self.name = api, name`
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts):
                pairs += list(zip(target.elts, node.value.elts))
        for target, value in pairs:
            cls = api_class(value.func) if isinstance(value, ast.Call) else None
            if cls is None and isinstance(value, ast.Name):
                cls = params.get(value.id)
            if cls is not None:
                receivers[ast.unparse(target)] = cls
    receivers.update(params)
    return receivers


@functools.cache
def code_calls() -> tuple[tuple[str, type, str, bool], ...]:
    """(module, API class, method, watched) for every API method a module under webhook/ uses
    (read once per test process: every variant's test asks)."""
    paths = sorted(PACKAGE.rglob("*.py"))
    sources = [path.read_text() for path in paths]
    classes = _api_classes(sources)
    found = []
    for path, source in zip(paths, sources, strict=True):
        nodes = list(ast.walk(ast.parse(source)))  # walked once, read four times
        receivers = _api_receivers(nodes, classes)
        watches = any(isinstance(n, ast.keyword) and n.arg == "watch" and ast.unparse(n.value) == "True" for n in nodes)
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name | ast.Attribute) and ast.unparse(node.value) in receivers:
                cls = receivers[ast.unparse(node.value)]
                base = node.attr.removesuffix("_with_http_info").removesuffix("_without_preload_content")
                if hasattr(cls, f"_{base}_serialize"):
                    found.append((str(path.relative_to(REPO)), cls, base, watches and base.startswith("list_")))
    return tuple(found)


@functools.cache
def looked_up_resources() -> frozenset[tuple[str, str]]:
    """(group, plural) of every object a rule asks the lookups for."""
    out = set()
    for path in sorted((PACKAGE / "policies").rglob("*.py")):
        module = importlib.import_module("webhook.policies." + path.stem)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("lookups.get"):
                scope = vars(module)
                try:
                    api_version = eval(compile(ast.Expression(node.args[0]), str(path), "eval"), scope)
                    kind = eval(compile(ast.Expression(node.args[1]), str(path), "eval"), scope)
                except NameError as exc:
                    raise AssertionError(f"{path}:{node.lineno}: use module constants for the looked-up apiVersion and kind ({exc})") from None
                out.add((api_version.rpartition("/")[0], plural_of(kind)))
    return frozenset(out)


def _owners(module: str) -> list[tuple[str, set[str]]]:
    for prefix, owners in OWNERS.items():
        if module == prefix or (prefix.endswith("/") and module.startswith(prefix)):
            return owners
    raise AssertionError(f"{module} calls the Kubernetes API but no ServiceAccount is known for it; add it to OWNERS and to the RBAC")


def needed(variant: str) -> set[tuple[str, str, str, str, str, str]]:
    """(account, scope, group, resource, verb, name) the code needs; scope is a namespace or
    "cluster"; name "*" when the object is not addressed by a configured name."""
    out = set()
    looked_up = looked_up_resources()
    for module, cls, method, watched in code_calls():
        for account, variants in _owners(module):
            if variant in variants:
                # core kinds a rule looks up are read through CoreV1Api, which the scan sees itself
                custom = CUSTOM[module]() if module in CUSTOM else {r for r in looked_up if r[0]}
                out |= _needs(account, cls, method, watched, custom, module)
    return out


def _needs(account: str, cls: type, method: str, watched: bool, custom: set[tuple[str, str]], module: str) -> set[tuple[str, str, str, str, str, str]]:
    """What one API method called by `module` needs when `account` runs it."""
    http, path = _request_of(cls, method)
    parts = path.strip("/").split("/")
    if parts[0] == "apis" and len(parts) == 3 and parts[1:] == ["{group}", "{version}"]:
        return {(account, "cluster", "nonResourceURL", "/apis/*", "get", "*")}
    out: set[tuple[str, str, str, str, str, str]] = set()
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0]
    named = len(rest) > 1
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    verb = VERBS.get(http) or ("get" if named else "list")
    targets = sorted(custom) if group == "{group}" else [(group, resource)]
    assert targets, f"{module}: {method} reads custom objects but no rule looks any up"
    for g, r in targets:
        scope, names = NAMED.get((account, g, r), ("cluster", ["*"]))
        scope = scope or "cluster"
        verbs = [verb, "watch"] if watched and verb == "list" else [verb]
        for v in verbs:
            for name in ["*"] if v in ("create", "list", "watch") else names:
                out.add((account, scope, g, r, v, name))
    return out


def granted(docs: list[dict]) -> set[tuple[str, str, str, str, str, str]]:
    roles = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs if d["kind"] in ("Role", "ClusterRole")}
    out = set()
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = binding["roleRef"]
        scope = binding["metadata"]["namespace"] if binding["kind"] == "RoleBinding" else "cluster"
        role = roles[(ref["kind"], binding["metadata"].get("namespace", "") if ref["kind"] == "Role" else "", ref["name"])]
        for subject in binding["subjects"]:
            assert subject["kind"] == "ServiceAccount"
            for rule in role["rules"]:
                for verb in rule["verbs"]:
                    if "nonResourceURLs" in rule:
                        out.update((subject["name"], scope, "nonResourceURL", url, verb, "*") for url in rule["nonResourceURLs"])
                        continue
                    for group in rule["apiGroups"]:
                        for resource in rule["resources"]:
                            for name in rule.get("resourceNames") or ["*"]:
                                out.add((subject["name"], scope, group, resource, verb, name))
    return out


def test_the_code_scan_finds_the_calls_we_know_of():
    calls = {(m, c.__name__, meth) for m, c, meth, _ in code_calls()}
    assert ("webhook/certs/keeper.py", "CoreV1Api", "create_namespaced_secret") in calls
    assert ("webhook/scalein/reconcile/patching.py", "CoreV1Api", "patch_namespaced_pod") in calls
    assert ("webhook/kube/lookups.py", "CustomObjectsApi", "get_namespaced_custom_object") in calls
    assert ("webhook/kube/watching.py", "CustomObjectsApi", "list_cluster_custom_object") in calls
    assert ("workload.serving.volcano.sh", "modelservings") in looked_up_resources()
    # Methods of our own objects that share a name with an API method are not API calls.
    assert not any(meth == "delete_node" for _, _, meth in calls)


def test_rbac_grants_exactly_what_the_code_calls(variant):
    name, docs = variant
    want, have = needed(name), granted(docs)
    assert not want - have, f"{name}: the code makes calls RBAC does not allow: {sorted(want - have)}"
    assert not have - want, f"{name}: RBAC allows more than the code calls: {sorted(have - want)}"


def test_no_wildcards_and_bindings_match_the_deployments(variant):
    _, docs = variant
    for doc in docs:
        for rule in doc.get("rules") or ():
            for field in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"):
                assert "*" not in rule.get(field, []), (doc["metadata"]["name"], field)
    accounts = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    used = {d["spec"]["template"]["spec"]["serviceAccountName"] for d in docs if d["kind"] == "Deployment"}
    assert used == accounts == {WEBHOOK_SA, RECONCILER_SA, AUDITOR_SA}
