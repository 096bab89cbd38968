"""The CEL fallback: a ValidatingAdmissionPolicy and its binding for every rule that declares
`cel=` at registration (see policies/registry.py, CelCheck).

The API server evaluates these policies itself, so they hold when the webhook is bypassed
(failurePolicy patched to Ignore, configurations deleted) or unreachable with Ignore. Each
policy mirrors one rule, and is named after it (`<rule>.servinggate.io`), so a denial names the
rule that made it:

- `matchConstraints` are the rule's target (resource, versions, operations: an update rule is
  matched on UPDATE only, where `oldObject` is set);
- `matchConditions` are NOT_BEING_DELETED and the rule's own `match` conditions, as on its
  webhook entry;
- one validation per CelCheck, with the rule's detail text as `message` or `messageExpression`,
  and reason Invalid (HTTP 422, as our webhook answers);
- the binding denies (`validationActions: [Deny]`) with the webhook entries' namespaceSelector,
  so both judge the same namespaces.

Two variants, the same objects under two API versions: `admissionregistration.k8s.io/v1` for
Kubernetes 1.30+, and `v1beta1` for 1.28-1.29, where the API server must be started with
`--feature-gates=ValidatingAdmissionPolicy=true --runtime-config=admissionregistration.k8s.io/v1beta1=true`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..policies.registry import CelCheck, Rule
from .configurations import NAMESPACE, match_conditions, namespace_selector, resource_rules

API_VERSIONS = {"v1": "admissionregistration.k8s.io/v1", "v1beta1": "admissionregistration.k8s.io/v1beta1"}
LABELS = {"app.kubernetes.io/name": "servinggate", "app.kubernetes.io/component": "fallback-policy"}
RULE_ANNOTATION = "servinggate.io/rule"


def policy_name(rule: Rule) -> str:
    return f"{rule.name}.servinggate.io"


def _validation(check: CelCheck) -> dict[str, Any]:
    if bool(check.message) == bool(check.message_expression):
        raise ValueError(f"CelCheck {check.expression[:40]}...: give exactly one of message and message_expression")
    out: dict[str, Any] = {"expression": check.expression}
    if check.message:
        out["message"] = check.message
    else:
        out["messageExpression"] = check.message_expression
    out["reason"] = "Invalid"
    return out


def policy_and_binding(rule: Rule, api_version: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    if rule.action != "validate" or rule.kind == "request":
        raise ValueError(f"rule {rule.name}: only object and update rules can have a CEL fallback")
    name = policy_name(rule)
    metadata = {"name": name, "labels": dict(LABELS), "annotations": {RULE_ANNOTATION: rule.name}}
    spec: dict[str, Any] = {"failurePolicy": "Fail", "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": resource_rules([rule])}}
    spec["matchConditions"] = match_conditions("validate", [rule])
    spec["validations"] = [_validation(check) for check in rule.cel]
    policy = {"apiVersion": api_version, "kind": "ValidatingAdmissionPolicy", "metadata": metadata, "spec": spec}
    binding = {
        "apiVersion": api_version,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": dict(LABELS), "annotations": {RULE_ANNOTATION: rule.name}},
        "spec": {"policyName": name, "validationActions": ["Deny"], "matchResources": {"namespaceSelector": namespace_selector(namespace)}},
    }
    return [policy, binding]


def policies(rules: Iterable[Rule], variant: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for rule in rules:
        if rule.cel:
            docs += policy_and_binding(rule, API_VERSIONS[variant], namespace)
    return docs
