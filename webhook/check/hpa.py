"""HorizontalPodAutoscaler validation as kube-apiserver 1.28 runs it (pkg/apis/autoscaling/validation,
validateHorizontalPodAutoscalerSpec), with its messages: the replica bounds, the target
reference, every metric (its type, the one source that type names and that source's own fields,
the target's type and values) and the behavior's scaling rules and policies.

The API server validates its internal type, converted from autoscaling/v1 or v2; a v1 object has
no `metrics` or `behavior`, so only the bounds and the reference apply to it. HPAScaleToZero is off
in 1.28, so `minReplicas` must be at least 1 (a stored 0 stays allowed on update upstream; `check`
judges every object as a create).
"""

from __future__ import annotations

from typing import Any

from ..admission.fields import BUILTIN, FieldError, FieldPath, forbidden, invalid, not_supported, required
from ..names import is_dns1123_label
from ..podvalidation.resources import quantity_struct, resource_name_errors
from ..quantity import parse_quantity
from ..shapes import as_dict

SPEC = FieldPath.of("spec")
METRIC_SOURCE_TYPES = sorted(["Object", "Pods", "Resource", "External", "ContainerResource"])
_SOURCE_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external", "ContainerResource": "containerResource"}
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
SELECT_POLICIES = sorted(["Max", "Min", "Disabled"])
POLICY_TYPES = sorted(["Pods", "Percent"])
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _inv(path: FieldPath, value: Any, detail: str) -> FieldError:
    return invalid(path, value, detail, origin=BUILTIN)


def _req(path: FieldPath, detail: str = "") -> FieldError:
    return required(path, detail, origin=BUILTIN)


def _path_segment(value: str, path: FieldPath) -> list[FieldError]:
    """IsValidPathSegmentName."""
    problems = [f"may not be '{value}'"] if value in (".", "..") else [f"may not contain '{c}'" for c in ("/", "%") if c in value]
    return [_inv(path, value, p) for p in problems]


def validate_reference(ref: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """ValidateCrossVersionObjectReference: kind and name set, each a valid path segment."""
    errs: list[FieldError] = []
    for key in ("kind", "name"):
        value = ref.get(key)
        if not value:
            errs.append(_req(path.child(key)))
        elif isinstance(value, str):
            errs += _path_segment(value, path.child(key))
    return errs


def validate_hpa(obj: dict[str, Any]) -> list[FieldError]:
    """validateHorizontalPodAutoscalerSpec on a defaulted object, in the API server's order."""
    spec = as_dict(obj.get("spec"))
    errs: list[FieldError] = []
    low, high = _int(spec.get("minReplicas")), _int(spec.get("maxReplicas")) or 0
    if low is not None and low < 1:
        errs.append(_inv(SPEC.child("minReplicas"), low, "must be greater than or equal to 1"))
    if high < 1:
        errs.append(_inv(SPEC.child("maxReplicas"), high, "must be greater than 0"))
    if low is not None and high < low:
        errs.append(_inv(SPEC.child("maxReplicas"), high, "must be greater than or equal to `minReplicas`"))
    errs += validate_reference(as_dict(spec.get("scaleTargetRef")), SPEC.child("scaleTargetRef"))
    errs += _metrics(spec.get("metrics"), SPEC.child("metrics"), low)
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for key in ("scaleUp", "scaleDown"):
            if isinstance(behavior.get(key), dict):
                errs += _scaling_rules(behavior[key], SPEC.child("behavior", key))
    return errs


def _metrics(metrics: Any, path: FieldPath, low: int | None) -> list[FieldError]:
    errs: list[FieldError] = []
    kinds: set[Any] = set()
    for i, metric in enumerate(metrics if isinstance(metrics, list) else []):
        metric = as_dict(metric)
        errs += _metric(metric, path.index(i))
        kinds.add(metric.get("type"))
    if low == 0 and not kinds & {"Object", "External"}:
        errs.append(forbidden(path, "must specify at least one Object or External metric to support scaling to zero replicas", origin=BUILTIN))
    return errs


def _metric(metric: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """validateMetricSpec: the type, the sources present (the first one's own fields), the source
    the type names, and every other source forbidden. An unknown type is reported twice, as upstream does."""
    errs: list[FieldError] = []
    raw_type = metric.get("type")
    kind: str = raw_type if isinstance(raw_type, str) else ""
    unsupported = not_supported(path.child("type"), kind, METRIC_SOURCE_TYPES, origin=BUILTIN)
    if not kind:
        errs.append(_req(path.child("type"), "must specify a metric source type"))
    if kind not in _SOURCE_FIELDS:
        errs.append(unsupported)
    present = [f for f in ("object", "external", "pods", "resource", "containerResource") if metric.get(f) is not None]
    if present:
        errs += _SOURCES[present[0]](as_dict(metric.get(present[0])), path.child(present[0]))
    expected = _SOURCE_FIELDS.get(kind, "")
    if expected and metric.get(expected) is None:
        errs.append(_req(path.child(expected), "must populate information for the given metric source"))
    if not expected:
        errs.append(unsupported)
    if len(present) != 1:
        errs += [forbidden(path.child(f), "must populate the given metric source only", origin=BUILTIN) for f in sorted(present) if f != expected]
    return errs


def _identifier(metric: Any, path: FieldPath) -> list[FieldError]:
    name = as_dict(metric).get("name")
    if not name:
        return [_req(path.child("name"), "must specify a metric name")]
    return _path_segment(name, path.child("name")) if isinstance(name, str) else []


def _quantity(target: dict[str, Any], key: str) -> tuple[Any, Any]:
    raw = target.get(key)
    return raw, (parse_quantity(raw) if raw is not None else None)


def _target(target: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """validateMetricTarget."""
    errs: list[FieldError] = []
    kind = target.get("type") if isinstance(target.get("type"), str) else ""
    if not kind:
        errs.append(_req(path.child("type"), "must specify a metric target type"))
    if kind not in TARGET_TYPES:
        errs.append(_inv(path.child("type"), kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        raw, amount = _quantity(target, key)
        if amount is not None and amount <= 0:
            errs.append(_inv(path.child(key), quantity_struct(raw, amount), "must be positive"))
    utilization = _int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        errs.append(_inv(path.child("averageUtilization"), utilization, "must be greater than 0"))
    return errs


def _object(src: dict[str, Any], path: FieldPath) -> list[FieldError]:
    target = as_dict(src.get("target"))
    errs = validate_reference(as_dict(src.get("describedObject")), path.child("describedObject"))
    errs += _identifier(src.get("metric"), path.child("metric")) + _target(target, path.child("target"))
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(_req(path.child("target", "averageValue"), "must set either a target value or averageValue"))
    return errs


def _external(src: dict[str, Any], path: FieldPath) -> list[FieldError]:
    target = as_dict(src.get("target"))
    errs = _identifier(src.get("metric"), path.child("metric")) + _target(target, path.child("target"))
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(_req(path.child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
    if target.get("value") is not None and target.get("averageValue") is not None:
        errs.append(forbidden(path.child("target", "value"), "may not set both a target value for metric and a per-pod target", origin=BUILTIN))
    return errs


def _pods(src: dict[str, Any], path: FieldPath) -> list[FieldError]:
    target = as_dict(src.get("target"))
    errs = _identifier(src.get("metric"), path.child("metric")) + _target(target, path.child("target"))
    if target.get("averageValue") is None:
        errs.append(_req(path.child("target", "averageValue"), "must specify a positive target averageValue"))
    return errs


def _resource(src: dict[str, Any], path: FieldPath, container: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    name = src.get("name")
    if not name:
        errs.append(_req(path.child("name"), "must specify a resource name"))
    elif container and isinstance(name, str):
        errs += resource_name_errors(name, path.child("name"))  # ValidateContainerResourceName
    if container:
        owner = src.get("container")
        if not owner:
            errs.append(_req(path.child("container"), "must specify a container"))
        elif isinstance(owner, str):
            errs += [_inv(path.child("container"), owner, m) for m in is_dns1123_label(owner)]
    target = as_dict(src.get("target"))
    errs += _target(target, path.child("target"))
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(_req(path.child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(forbidden(path.child("target", "averageValue"), "may not set both a target raw value and a target utilization", origin=BUILTIN))
    return errs


_SOURCES = {
    "object": _object,
    "external": _external,
    "pods": _pods,
    "resource": _resource,
    "containerResource": lambda src, path: _resource(src, path, container=True),
}


def _scaling_rules(rules: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """validateScalingRules and validateScalingPolicy."""
    errs: list[FieldError] = []
    window = _int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        errs.append(_inv(path.child("stabilizationWindowSeconds"), window, "must be greater than or equal to zero"))
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(_inv(path.child("stabilizationWindowSeconds"), window, f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        errs.append(not_supported(path.child("selectPolicy"), select, SELECT_POLICIES, origin=BUILTIN))
    raw_policies = rules.get("policies")
    policies: list[Any] = raw_policies if isinstance(raw_policies, list) else []
    if not policies:
        errs.append(_req(path.child("policies"), "must specify at least one Policy"))
    for i, raw in enumerate(policies):
        policy, at = as_dict(raw), path.child("policies").index(i)
        if policy.get("type") not in POLICY_TYPES:
            errs.append(not_supported(at.child("type"), policy.get("type") or "", POLICY_TYPES, origin=BUILTIN))
        value, period = _int(policy.get("value")) or 0, _int(policy.get("periodSeconds")) or 0
        if value <= 0:
            errs.append(_inv(at.child("value"), value, "must be greater than zero"))
        if period <= 0:
            errs.append(_inv(at.child("periodSeconds"), period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errs.append(_inv(at.child("periodSeconds"), period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return errs
