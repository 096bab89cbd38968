"""Pods and the pod templates of workloads, validated as kube-apiserver 1.28 validates them.

A Pod goes through `ValidatePodCreate` after the v1 defaults (webhook/podvalidation). A workload's
template (`TEMPLATE_PATHS`) goes through `ValidatePodTemplateSpec` plus what its kind adds about
the template, in the API server's order (pkg/apis/apps/validation, pkg/apis/batch/validation):

- ReplicaSet and Deployment (ValidatePodTemplateSpecForReplicaSet): a non-empty selector must
  match the template's labels; then the template; `restartPolicy` must be `Always`; no
  `activeDeadlineSeconds`;
- DaemonSet: the same, with its own wording for `activeDeadlineSeconds`;
- StatefulSet (ValidatePodTemplateSpecForStatefulSet): the selector match and the template's
  labels and annotations only (1.28 leaves its pod spec unvalidated, since volume mounts may name
  volumeClaimTemplates); `restartPolicy` `Always`; `activeDeadlineSeconds` forbidden;
- Job and CronJob's job template: the template; `restartPolicy` `OnFailure` or `Never` (the default
  `Always` is refused); a Job with `manualSelector: true` must match its template's labels (any
  other Job gets a generated selector that does);
- OpenKruise CloneSet: judged like a ReplicaSet, as OpenKruise's webhook validates it.

The selector match reads `matchLabels` and `matchExpressions` (In, NotIn, Exists, DoesNotExist).
"""

from __future__ import annotations

import copy
from typing import Any

from ..admission.fields import BUILTIN, FieldError, FieldPath, forbidden, invalid, not_supported
from ..admission.gofmt import GoSyntax, go_quote
from ..admission.selectors import selector_matches
from ..podvalidation import apply_template_defaults, default_pod_spec, validate_pod_create, validate_pod_template_spec
from ..podvalidation.meta import validate_annotations, validate_labels
from .templates import TEMPLATE_PATHS

_NOT_SUPPORTED = "activeDeadlineSeconds in {} is not Supported"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _go_zero(spec: Any) -> None:
    """Go decodes a null container as the zero Container, which the defaults then fill."""
    if isinstance(spec, dict):
        for key in ("containers", "initContainers", "ephemeralContainers"):
            items = spec.get(key)
            if isinstance(items, list):
                spec[key] = [{} if c is None else c for c in items]


def validate_pod(obj: dict[str, Any]) -> list[FieldError]:
    """ValidatePodCreate on the Pod as the API server defaults it."""
    pod = copy.deepcopy(obj)
    if isinstance(pod, dict):
        _go_zero(pod.get("spec"))
        default_pod_spec(pod.get("spec"))
    return validate_pod_create(pod)


def labels_struct(labels: dict[str, Any]) -> GoSyntax:
    """`%#v` of a map[string]string: keys sorted."""
    return GoSyntax("map[string]string{" + ", ".join(f"{go_quote(k)}:{go_quote(str(v))}" for k, v in sorted(labels.items())) + "}")


def _selector_errors(selector: Any, labels: dict[str, Any], path: FieldPath) -> list[FieldError]:
    selector = _dict(selector)
    if not (selector.get("matchLabels") or selector.get("matchExpressions")) or selector_matches(selector, labels):
        return []
    return [invalid(path.child("metadata", "labels"), labels_struct(labels), "`selector` does not match template `labels`", origin=BUILTIN)]


def validate_workload(obj: dict[str, Any], group: str, kind: str) -> list[FieldError]:
    """The API server's checks of a workload's pod template (see the module doc), at its paths."""
    parts = TEMPLATE_PATHS[(group, kind)]
    node: Any = obj
    for part in parts:
        node = _dict(node).get(part)
    path = FieldPath.of(*parts)
    template = apply_template_defaults(node if node is not None else {})
    if isinstance(template, dict):
        _go_zero(template.get("spec"))
        template = apply_template_defaults(template)
    if not isinstance(template, dict):
        return validate_pod_template_spec(template, path)  # its type error
    meta, spec = _dict(template.get("metadata")), _dict(template.get("spec"))
    labels = _dict(meta.get("labels"))
    owner = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    if kind == "StatefulSet":
        errs += _selector_errors(owner.get("selector"), labels, path)
        errs += validate_labels(labels, path.child("labels")) + validate_annotations(_dict(meta.get("annotations")), path.child("annotations"))
    elif kind in ("Job", "CronJob"):
        if kind == "Job" and owner.get("manualSelector") is True:
            errs += _selector_errors(owner.get("selector"), labels, path)
        errs += validate_pod_template_spec(template, path)
    else:
        errs += _selector_errors(owner.get("selector"), labels, path)
        errs += validate_pod_template_spec(template, path)
    errs += _restart_and_deadline(spec, path.child("spec"), group, kind)
    return errs


def _restart_and_deadline(spec: dict[str, Any], path: FieldPath, group: str, kind: str) -> list[FieldError]:
    policy = spec.get("restartPolicy")
    errs: list[FieldError] = []
    if kind in ("Job", "CronJob"):
        if policy not in ("OnFailure", "Never"):
            errs.append(not_supported(path.child("restartPolicy"), policy, ["OnFailure", "Never"], origin=BUILTIN))
        return errs
    if policy != "Always":
        errs.append(not_supported(path.child("restartPolicy"), policy, ["Always"], origin=BUILTIN))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is None:
        return errs
    at = path.child("activeDeadlineSeconds")
    if kind == "StatefulSet":
        errs.append(forbidden(at, _NOT_SUPPORTED.format("StatefulSet"), origin=BUILTIN))
    else:
        owner = "DaemonSet" if kind == "DaemonSet" else "ReplicaSet"  # a Deployment's is its ReplicaSet's check
        errs.append(invalid(at, deadline, _NOT_SUPPORTED.format(owner), origin=BUILTIN))
    return errs


def has_template(group: str, kind: str) -> bool:
    return (group, kind) in TEMPLATE_PATHS
