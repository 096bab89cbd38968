"""Typed views of Kthena's autoscaling objects: AutoscalingPolicy (current API) and
AutoscalingPolicyBinding (Kthena v0.4), which share their target fields.

Kthena's validators count a target as set when its field is present at all (any value but null),
and read it only when it is an object; the view keeps both answers, so that a rule neither
re-derives them nor raises on a target of the wrong type (the CRD's schema makes one rare, a
fuzzed request does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .values import as_dict, as_object

HOMOGENEOUS = "homogeneousTarget"
HETEROGENEOUS = "heterogeneousTarget"
DISAGGREGATED = "disaggregatedTarget"
TARGET_FIELDS = (HOMOGENEOUS, HETEROGENEOUS, DISAGGREGATED)


@dataclass(frozen=True, slots=True)
class AutoscalingTargets:
    """The spec of an AutoscalingPolicy or AutoscalingPolicyBinding with its targets decoded once:
    each target is its object, or None when it is absent or not an object; `present` names the
    target fields set to anything but null, in `TARGET_FIELDS` order."""

    spec: dict[str, Any]
    homogeneous: dict[str, Any] | None
    heterogeneous: dict[str, Any] | None
    disaggregated: dict[str, Any] | None
    present: tuple[str, ...]


def autoscaling_targets(obj: Any) -> AutoscalingTargets:
    """The targets of a whole object or of its projection; never raises on a malformed one."""
    spec = as_dict(as_dict(obj).get("spec"))
    present = tuple(name for name in TARGET_FIELDS if spec.get(name) is not None)
    return AutoscalingTargets(spec, as_object(spec.get(HOMOGENEOUS)), as_object(spec.get(HETEROGENEOUS)), as_object(spec.get(DISAGGREGATED)), present)
