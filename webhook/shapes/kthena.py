"""Typed views of Kthena's objects: a ModelServing as its rules and the autoscaler rules read it,
and the targets of an AutoscalingPolicy (current API) or AutoscalingPolicyBinding (Kthena v0.4),
which share their target fields.

Kthena's validators count a target as set when its field is present at all (any value but null),
and read it only when it is an object; the view keeps both answers, so that a rule neither
re-derives them nor raises on a target of the wrong type (the CRD's schema makes one rare, a
fuzzed request does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from .values import as_dict, as_object, objects
from .volcano import TopologyPolicy, topology_policies

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


class ModelServing(NamedTuple):
    """The parts of a ModelServing every rule reads, extracted once and type-checked."""

    ms: dict[str, Any]
    spec: dict[str, Any]
    template: dict[str, Any]
    roles: list[tuple[int, dict[str, Any]]]  # (index, role) for every role that is an object
    strategy: dict[str, Any] | None  # spec.rolloutStrategy when it is an object
    mins: dict[str, Any]  # gangPolicy.minRoleReplicas when it is an object, else {}
    topology: dict[str, TopologyPolicy]  # template.networkTopology's policies that are objects (shapes/volcano.py)

    def role_index(self) -> dict[str, dict[str, Any]]:
        """The roles by name (later duplicates win, as in Kthena's map); a role without a string name is left out."""
        return {name: role for _, role in self.roles if isinstance(name := role.get("name"), str)}


def modelserving(ms: dict[str, Any]) -> ModelServing:
    """The view of a whole ModelServing or of its projection (webhook/policies/projections.py)."""
    spec = as_dict(ms.get("spec"))
    template = as_dict(spec.get("template"))
    gang = as_dict(template.get("gangPolicy"))
    return ModelServing(
        ms,
        spec,
        template,
        list(objects(template.get("roles"))),
        as_object(spec.get("rolloutStrategy")),
        as_dict(gang.get("minRoleReplicas")),
        topology_policies(template),
    )
