"""Pods and the pod templates of workloads, validated as the API server of the minor `check`
judges by (`PodOptions`, from `options_for`) validates them. What that server drops first (a field
whose feature gate is off, `dropDisabledFields`) is handed back for a warning; fields its schema
does not know never get this far (the schema step refuses or drops them).

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
from ..podvalidation import default_pod_spec, validate_pod_create, validate_pod_template_spec
from ..podvalidation.defaults import prepare_spec
from ..podvalidation.drops import Dropped
from ..podvalidation.meta import validate_annotations, validate_labels
from ..podvalidation.options import DEFAULT_OPTIONS, PodOptions
from ..shapes import as_dict
from .templates import TEMPLATE_PATHS

_NOT_SUPPORTED = "activeDeadlineSeconds in {} is not Supported"


def _go_zero(spec: Any) -> None:
    """Go decodes a null container as the zero Container, which the defaults then fill."""
    if isinstance(spec, dict):
        for key in ("containers", "initContainers", "ephemeralContainers"):
            items = spec.get(key)
            if isinstance(items, list):
                spec[key] = [{} if c is None else c for c in items]


def _tell(found: list[Dropped], spec_path: FieldPath, dropped: list[str] | None) -> None:
    if dropped is not None:
        dropped += [d.warning(FieldPath(spec_path.parts + d.path)) for d in found]


def validate_pod(obj: dict[str, Any], opts: PodOptions = DEFAULT_OPTIONS, dropped: list[str] | None = None) -> list[FieldError]:
    """ValidatePodCreate on the Pod as the API server prepares it; what it drops goes to `dropped`."""
    pod = copy.deepcopy(obj)
    if isinstance(pod, dict):
        _go_zero(pod.get("spec"))
        _tell(default_pod_spec(pod.get("spec"), opts), FieldPath.of("spec"), dropped)
    return validate_pod_create(pod, opts=opts)


def labels_struct(labels: dict[str, Any]) -> GoSyntax:
    """`%#v` of a map[string]string: keys sorted."""
    return GoSyntax("map[string]string{" + ", ".join(f"{go_quote(k)}:{go_quote(str(v))}" for k, v in sorted(labels.items())) + "}")


def _selector_errors(selector: Any, labels: dict[str, Any], path: FieldPath) -> list[FieldError]:
    selector = as_dict(selector)
    if not (selector.get("matchLabels") or selector.get("matchExpressions")) or selector_matches(selector, labels):
        return []
    return [invalid(path.child("metadata", "labels"), labels_struct(labels), "`selector` does not match template `labels`", origin=BUILTIN)]


def validate_workload(obj: dict[str, Any], group: str, kind: str, opts: PodOptions = DEFAULT_OPTIONS, dropped: list[str] | None = None) -> list[FieldError]:
    """The API server's checks of a workload's pod template (see the module doc), at its paths;
    what it drops from the template first goes to `dropped`."""
    parts = TEMPLATE_PATHS[(group, kind)]
    node: Any = obj
    for part in parts:
        node = as_dict(node).get(part)
    path = FieldPath.of(*parts)
    template = copy.deepcopy(node if node is not None else {})
    if not isinstance(template, dict):
        return validate_pod_template_spec(template, path)  # its type error
    _go_zero(template.get("spec"))
    _tell(prepare_spec(template.get("spec"), opts, pod=False), path.child("spec"), dropped)
    meta, spec = as_dict(template.get("metadata")), as_dict(template.get("spec"))
    labels = as_dict(meta.get("labels"))
    owner = as_dict(obj.get("spec"))
    errs: list[FieldError] = []
    if kind == "StatefulSet":
        errs += _selector_errors(owner.get("selector"), labels, path)
        errs += validate_labels(labels, path.child("labels")) + validate_annotations(as_dict(meta.get("annotations")), path.child("annotations"))
    elif kind in ("Job", "CronJob"):
        if kind == "Job" and owner.get("manualSelector") is True:
            errs += _selector_errors(owner.get("selector"), labels, path)
        errs += validate_pod_template_spec(template, path, opts=opts)
    else:
        errs += _selector_errors(owner.get("selector"), labels, path)
        errs += validate_pod_template_spec(template, path, opts=opts)
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
