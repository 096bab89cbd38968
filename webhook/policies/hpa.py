"""HorizontalPodAutoscalers (autoscaling/v1 and v2) that scale a ModelServing.

- `horizontalpodautoscalers.modelserving-bounds`: minReplicas at least 1 (no scale to zero: no
  pods, no metrics) and maxReplicas >= minReplicas. HPAs of other targets are not judged.
"""

from __future__ import annotations

from typing import Any

from ..admission.fields import FieldError, FieldPath, invalid
from ..kthena import MODELSERVING_GROUP, MODELSERVING_KIND
from ..shapes import as_dict
from .common import is_int
from .registry import REGISTRY, CelCheck, MatchCondition, Target

SPEC = FieldPath.of("spec")
HPAS = Target(group="autoscaling", resource="horizontalpodautoscalers", versions=("v1", "v2"))
# Only HPAs that scale a ModelServing are sent (the rule ignores the others anyway). It must be
# false only where the rule finds nothing: the rule takes the group before the last "/" and also
# judges an empty group, so an apiVersion without "/" or starting with "/" is sent too.
TARGETS_MODELSERVING = MatchCondition(
    "scales-a-modelserving",
    "has(object.spec.scaleTargetRef) && object.spec.scaleTargetRef.kind == 'ModelServing' && "
    "(!has(object.spec.scaleTargetRef.apiVersion) || !object.spec.scaleTargetRef.apiVersion.contains('/') || "
    "object.spec.scaleTargetRef.apiVersion.startsWith('/') || "
    f"object.spec.scaleTargetRef.apiVersion.startsWith('{MODELSERVING_GROUP}/'))",
)

AT_LEAST_ONE = "must be at least 1 for a ModelServing target: at zero there are no pods, so no metrics to scale back up"
# The CEL fallback (see CelCheck), after the same condition; minReplicas defaults to 1.
_LOW = "(has(object.spec.minReplicas) ? object.spec.minReplicas : 1)"
BOUNDS_CEL = (
    CelCheck("!has(object.spec.minReplicas) || object.spec.minReplicas >= 1", message=AT_LEAST_ONE),
    CelCheck(
        f"!has(object.spec.maxReplicas) || object.spec.maxReplicas >= {_LOW}",
        message_expression=f"'must be greater than or equal to minReplicas (' + string({_LOW}) + ')'",
    ),
)


@REGISTRY.validates("horizontalpodautoscalers.modelserving-bounds", HPAS, match=(TARGETS_MODELSERVING,), cel=BOUNDS_CEL)
def hpa_errors(hpa: dict[str, Any]) -> list[FieldError]:
    """An HPA of a ModelServing keeps minReplicas >= 1 and maxReplicas >= minReplicas."""
    spec = as_dict(hpa.get("spec"))
    ref = as_dict(spec.get("scaleTargetRef"))
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    if ref.get("kind") != MODELSERVING_KIND or group not in ("", MODELSERVING_GROUP):
        return []
    low = spec.get("minReplicas", 1)  # the API server defaults minReplicas to 1
    high = spec.get("maxReplicas")
    errs: list[FieldError] = []
    if is_int(low) and low < 1:
        errs.append(invalid(SPEC.child("minReplicas"), low, AT_LEAST_ONE))
    if is_int(low) and is_int(high) and high < low:
        errs.append(invalid(SPEC.child("maxReplicas"), high, f"must be greater than or equal to minReplicas ({low})"))
    return errs
