"""The ValidatingWebhookConfiguration and MutatingWebhookConfiguration, derived from the rule registry.

The registry says which (group, resource, subresource, operations) each rule needs; this module
turns that into the two configurations with the conventions every entry shares (kept in one
place, here):

- `admissionReviewVersions: [v1]`, `sideEffects: None`, `matchPolicy: Equivalent`,
  `failurePolicy: Fail` but where `FAILURE_POLICIES` says otherwise (its reason in the
  configuration's annotations), timeouts of 5 s (validation) and 2 s (mutation);
- a `namespaceSelector` that leaves out kube-system, kube-node-lease and our own namespace
  through the immutable `kubernetes.io/metadata.name` label (no self-deadlock, no way to opt out
  by relabelling a namespace);
- one entry per API family (the policies module a rule is written in: modelservings, hpa,
  kthena_autoscaling, ...), so each entry names the family it guards and nothing else;
- an entry's `matchConditions` are the conditions every rule in it declared (`match=` at
  registration): the API server sends only what they accept, so while the webhook is down only
  those writes are refused. A condition some rule of the entry lacks is left out (that rule must
  see everything). Every validating entry also carries NOT_BEING_DELETED: an update of an object
  being deleted (a finalizer's removal) is never sent, so neither we nor our outage can hold it;
- objects of a resource whose rules declare a `LabelScope` (pods: `modelserving.volcano.sh/name`
  or `servinggate.io/gang`, unless `servinggate.io/skip: "true"`) are only sent when they match
  it: the scope's `object_selectors()` give one entry per label (see policies/registry.py);
- each entry lists exactly the resources and operations its rules registered.

`python -m webhook manifests` (generating.py) writes them, with the opt-in components that go
with them (components.py; the CEL fallback policies of fallback.py share the namespace selector
and resource rules below).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..policies.pods import MUTATING_POLICY_NAME
from ..policies.registry import NOT_BEING_DELETED, MatchCondition, Rule

VALIDATING_NAME = "servinggate-validating"
MUTATING_NAME = "servinggate-mutating"
SERVICE_NAME = "servinggate-webhook"
NAMESPACE = "servinggate-system"
EXCLUDED_NAMESPACES = ("kube-system", "kube-node-lease")
TIMEOUTS = {"validate": 5, "mutate": 2}
# entry (its name before the action's domain) -> (failurePolicy, why), where it is not Fail.
FAILURE_POLICIES: dict[str, tuple[str, str]] = {
    "pods-modelserving": (
        "Ignore",
        "Kthena's controller writes the scheduler, the PodGroup annotations and the subgroup labels itself, so our "
        "mutation only repairs them; and it does not retry a refused pod create (scaleUpRoles at Kthena 3cc05728), "
        "so failing closed while the webhook is down would leave a ServingGroup without pods (docs/e2e.md)",
    )
}
# With the opt-in gang's MutatingAdmissionPolicy installed (mutationpolicy.py), its webhook entry fails open.
GANG_ENTRY = "pods-gang"
POLICY_REASON = (
    f"the MutatingAdmissionPolicy {MUTATING_POLICY_NAME} makes an opt-in gang's pod right inside the API server, "
    "so the webhook's patch over it changes nothing and has nothing left to fail closed for"
)
FAIL_REASON = "its controller (ReplicaSet, StatefulSet, Job) retries a refused create: failing closed keeps a gang from being scheduled one pod at a time"
REASON_PREFIX = "failure-policy.servinggate.io/"
PATHS = {"validate": "/validate", "mutate": "/mutate"}
DOMAIN = {"validate": "validate.servinggate.io", "mutate": "mutate.servinggate.io"}
LABELS = {"app.kubernetes.io/name": "servinggate", "app.kubernetes.io/component": "webhook"}


def family(rule: Rule) -> str:
    """The API family a rule guards: the one it declares, else the policies module it is written
    in (one module per family, see webhook/policies/__init__.py), as a DNS label."""
    return (rule.family or rule.fn.__module__.rpartition(".")[2]).replace("_", "-")


def namespace_selector(namespace: str = NAMESPACE) -> dict[str, Any]:
    """Leaves out the system namespaces and ours, by the immutable name label."""
    values = sorted(set(EXCLUDED_NAMESPACES) | {namespace})
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": values}]}


def resource_rules(rules: Iterable[Rule]) -> list[dict[str, Any]]:
    """One RuleWithOperations per (group, resource[/subresource], scope): the union of what the
    registered rules need, and nothing else."""
    merged: dict[tuple[str, str, str], tuple[set[str], set[str]]] = {}
    for rule in rules:
        t = rule.target
        ops, versions = merged.setdefault((t.group, t.full_resource, t.scope), (set(), set()))
        ops.update(t.operations)
        versions.update(t.versions)
    out = []
    for (group, resource, scope), (ops, versions) in sorted(merged.items()):
        out.append(
            {
                "apiGroups": [group],
                "apiVersions": ["*"] if "*" in versions else sorted(versions),
                "operations": sorted(ops),
                "resources": [resource],
                "scope": scope,
            }
        )
    return out


def common_conditions(rules: list[Rule]) -> list[MatchCondition]:
    """The conditions every one of `rules` declared, in the order the first declared them. The
    entry sends a request when all its conditions hold, so a condition one rule lacks would hide
    requests from that rule: only the shared ones are safe."""
    named: dict[str, str] = {}
    for rule in rules:
        for condition in rule.match:
            if named.setdefault(condition.name, condition.expression) != condition.expression:
                raise ValueError(f"matchCondition {condition.name} has two expressions (rule {rule.name}); give them different names")
    if not rules:
        return []
    return [c for c in rules[0].match if all(c in r.match for r in rules[1:])]


def match_conditions(action: str, rules: list[Rule]) -> list[dict[str, str]]:
    """The `matchConditions` of an entry (or fallback policy) for `rules`: those they all declared,
    after NOT_BEING_DELETED where they validate. [] when there are none."""
    conditions = common_conditions(rules)
    if action == "validate":
        conditions = [NOT_BEING_DELETED, *conditions]
    return [{"name": c.name, "expression": c.expression} for c in conditions]


def _entry(action: str, name: str, rules: list[Rule], service: str, namespace: str, object_selector: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": service, "namespace": namespace, "path": PATHS[action], "port": 443}},
        "failurePolicy": FAILURE_POLICIES.get(name.split(".", 1)[0], ("Fail", ""))[0],
        "matchPolicy": "Equivalent",
        "namespaceSelector": namespace_selector(namespace),
        "objectSelector": object_selector or {},
    }
    conditions = match_conditions(action, rules)
    if conditions:
        entry["matchConditions"] = conditions
    entry.update(rules=resource_rules(rules), sideEffects="None", timeoutSeconds=TIMEOUTS[action])
    if action == "mutate":
        entry["reinvocationPolicy"] = "Never"
    return entry


def webhook_entries(rules: Iterable[Rule], action: str, *, service: str = SERVICE_NAME, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The webhook entries of one configuration, for the registry's rules of `action`: one per
    family of rules without a scope, then one per label of each (resource, scope)."""
    mine = [r for r in rules if r.action == action]
    entries = []
    by_family: dict[str, list[Rule]] = {}
    for r in mine:
        if r.scope is None:
            by_family.setdefault(family(r), []).append(r)
    for name, members in sorted(by_family.items()):
        entries.append(_entry(action, f"{name}.{DOMAIN[action]}", members, service, namespace, None))
    scoped: dict[tuple[str, str, Any], list[Rule]] = {}
    for r in mine:
        if r.scope is not None:
            scoped.setdefault((r.target.group, r.target.resource, r.scope), []).append(r)
    for (_, resource, scope), narrowed in sorted(scoped.items(), key=lambda kv: kv[0][:2]):
        for short, selector in scope.object_selectors():
            entries.append(_entry(action, f"{resource}-{short}.{DOMAIN[action]}", narrowed, service, namespace, selector))
    names = [e["name"] for e in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"two {action} entries share a name: {sorted(n for n in names if names.count(n) > 1)}")
    return entries


def configurations(rules: Iterable[Rule], *, service: str = SERVICE_NAME, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    rules = list(rules)
    docs = []
    for kind, name, action in (("ValidatingWebhookConfiguration", VALIDATING_NAME, "validate"), ("MutatingWebhookConfiguration", MUTATING_NAME, "mutate")):
        entries = webhook_entries(rules, action, service=service, namespace=namespace)
        metadata: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
        reasons = failure_reasons(entries)
        if reasons:
            metadata["annotations"] = reasons
        docs.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": metadata, "webhooks": entries})
    return docs


def failure_reasons(entries: list[dict[str, Any]]) -> dict[str, str]:
    """Why each entry fails open or closed, for the entries of a resource that has both (pods):
    `failure-policy.servinggate.io/<entry>: "<policy>: <why>"`."""
    mixed = {e["name"].split(".", 1)[0].split("-", 1)[0] for e in entries if e["name"].split(".", 1)[0] in FAILURE_POLICIES}
    out = {}
    for e in entries:
        short = e["name"].split(".", 1)[0]
        if short.split("-", 1)[0] in mixed:
            why = FAILURE_POLICIES[short][1] if short in FAILURE_POLICIES else FAIL_REASON
            out[REASON_PREFIX + e["name"].split(".", 1)[0]] = f"{e['failurePolicy']}: {why}"
    return out


def registry_rules() -> list[Rule]:
    import webhook.policies  # noqa: F401  (registers every rule)
    from webhook.policies.registry import REGISTRY

    return REGISTRY.rules()
