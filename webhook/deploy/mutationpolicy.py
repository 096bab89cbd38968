"""The opt-in gang's pod mutation as a MutatingAdmissionPolicy: run inside the API server, so a
pod of an opt-in gang is made right even while our webhook is down (issue 46).

What it does is the part of `pods.default-scheduler` and `pods.gang-labels` that needs no lookup,
for pods that opt in with `servinggate.io/gang` (and no Kthena `modelserving.volcano.sh/name`
label), built from the same constants and settings as the webhook's patch so the two cannot drift:

1. an empty or `default-scheduler` `spec.schedulerName` becomes the gang scheduler
   (`PolicySettings.scheduler_name`); another explicit scheduler is kept;
2. then, on a pod the gang scheduler schedules, the PodGroup annotation (`scheduling.k8s.io/
   group-name`, the gang label's value) and the task spec (`volcano.sh/task-spec`, the subgroup
   label's value), each only when its label is a non-empty string.

The scope is the webhook's: the same skipped namespaces (by the immutable name label) and the
same object selector (`servinggate.io/skip: "true"` opts out). What needs a lookup stays in the
webhook: whether the PodGroup CRD exists (the policy assumes it does, as the webhook does when it
cannot tell), and every Kthena pod (its owner's scheduler decides). The policy is idempotent: on a
pod it already mutated (or the webhook did) both mutations change nothing.

Two API versions, one shape: `v1` for Kubernetes 1.36+ (GA, on by default) and `v1beta1` for 1.34
and 1.35, whose API servers serve it only with the MutatingAdmissionPolicy gate on and
`--runtime-config=admissionregistration.k8s.io/v1beta1=true` (both off by default). The fields
used here are the same in both (k8s.io/api admissionregistration v1beta1 and v1 at v0.37).
"""

from __future__ import annotations

import json
from typing import Any

from ..kthena import ANNOTATION_GROUP, ANNOTATION_TASK, LABEL_NAME
from ..policies.pods import GANG_LABEL, MUTATING_POLICY_GROUP, MUTATING_POLICY_NAME, MUTATING_POLICY_VERSIONS, SKIP_LABEL, SUBGROUP_LABEL
from ..policies.settings import PolicySettings
from .configurations import NAMESPACE, namespace_selector

GROUP, NAME, API_VERSIONS = MUTATING_POLICY_GROUP, MUTATING_POLICY_NAME, MUTATING_POLICY_VERSIONS
LABELS = {"app.kubernetes.io/name": "servinggate", "app.kubernetes.io/component": "mutating-policy"}


def _cel(text: str) -> str:
    """A CEL string literal (JSON's escapes are CEL's for these characters)."""
    return json.dumps(text)


def _label(key: str) -> str:
    """The label's value when it is a non-empty string, as a CEL optional."""
    value = f"object.metadata.?labels[?{_cel(key)}].orValue('')"
    return f"({value} != '' ? optional.of({value}) : optional.none())"


def scheduler_mutation(scheduler: str) -> dict[str, Any]:
    """`pods.default-scheduler` without the owner lookup: an empty or default scheduler becomes ours."""
    expression = (
        "!has(object.spec.schedulerName) || object.spec.schedulerName in ['', 'default-scheduler'] ? "
        f"Object{{spec: Object.spec{{schedulerName: {_cel(scheduler)}}}}} : Object{{}}"
    )
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def annotations_mutation(scheduler: str) -> dict[str, Any]:
    """`pods.gang-labels` for an opt-in pod: the PodGroup annotation and the task spec from its
    labels, on a pod the gang scheduler schedules (after the mutation before it)."""
    group, task = _label(GANG_LABEL), _label(SUBGROUP_LABEL)
    expression = (
        f"has(object.spec.schedulerName) && object.spec.schedulerName == {_cel(scheduler)} && ({group}.hasValue() || {task}.hasValue()) ? "
        f"Object{{metadata: Object.metadata{{annotations: {{?{_cel(ANNOTATION_GROUP)}: {group}, ?{_cel(ANNOTATION_TASK)}: {task}}}}}}} : Object{{}}"
    )
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def policy_and_binding(settings: PolicySettings | None = None, namespace: str = NAMESPACE, version: str = "v1") -> list[dict[str, Any]]:
    """The policy and its binding at `version` (one of API_VERSIONS)."""
    if version not in API_VERSIONS:
        raise ValueError(f"MutatingAdmissionPolicy {version!r}: the versions are {', '.join(API_VERSIONS)}")
    api_version = f"{GROUP}/{version}"
    settings = settings or PolicySettings()
    scheduler = settings.scheduler_name
    match = {
        "namespaceSelector": namespace_selector(namespace),
        "objectSelector": {
            "matchExpressions": [
                {"key": GANG_LABEL, "operator": "Exists"},
                {"key": LABEL_NAME, "operator": "DoesNotExist"},
                {"key": SKIP_LABEL, "operator": "NotIn", "values": ["true"]},
            ]
        },
    }
    skipped = sorted(settings.skip_namespaces)
    conditions = [{"name": "not-a-skipped-namespace", "expression": f"!(request.namespace in {json.dumps(skipped)})"}] if skipped else []
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "reinvocationPolicy": "IfNeeded",
        "matchConstraints": {
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
            "matchPolicy": "Equivalent",
        },
        "mutations": [scheduler_mutation(scheduler), annotations_mutation(scheduler)],
    }
    if conditions:
        spec["matchConditions"] = conditions
    policy = {"apiVersion": api_version, "kind": "MutatingAdmissionPolicy", "metadata": {"name": NAME, "labels": dict(LABELS)}, "spec": spec}
    binding = {
        "apiVersion": api_version,
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": NAME, "labels": dict(LABELS)},
        "spec": {"policyName": NAME, "matchResources": match},
    }
    return [policy, binding]
