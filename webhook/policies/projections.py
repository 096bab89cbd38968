"""What the rules read of the objects they look up, and nothing more.

Every gunicorn worker of every replica keeps the looked-up objects in memory (store.py), and
`audit` keeps them while it judges a cluster, so they are kept as projections: the fields listed
here, not whole objects with their pod templates (a Kthena ModelServing is mostly its entry and
worker templates). A rule that starts reading another field of a looked-up object must add it
here; tests/policies/test_projections.py proves the rules answer the same on a projection as on
the whole object.

A shape is a dict (keep these keys, each projected by its own shape), a one-item list (a list
whose items all have that shape), or True (keep the value whole). A value whose type does not
fit its shape is kept whole: the rules have their own answer for a malformed field, and the API
server's schema makes one rare.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from ..admission.review import plural_of
from ..kthena import AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, MODELSERVING_API_VERSION, MODELSERVING_KIND

Shape = dict[str, Any] | list[Any] | bool

_IDENTITY: dict[str, Any] = {"apiVersion": True, "kind": True, "metadata": {"name": True, "namespace": True, "generateName": True}}

# pods.*: spec.schedulerName; autoscaler role bounds: role names and gangPolicy.minRoleReplicas;
# modelservings.scale: the replica-dependent rules (generated names, rolling update).
MODELSERVING_SHAPE: dict[str, Any] = {
    **_IDENTITY,
    "spec": {
        "replicas": True,
        "schedulerName": True,
        "rolloutStrategy": {"type": True, "rollingUpdateConfiguration": {"maxUnavailable": True, "maxSurge": True, "partition": True}},
        "template": {
            "roles": [{"name": True, "replicas": True, "workerReplicas": True}],
            "gangPolicy": {"minRoleReplicas": True},
        },
    },
}
# autoscalingpolicybindings.references only asks whether the policy exists.
AUTOSCALINGPOLICY_SHAPE: dict[str, Any] = dict(_IDENTITY)


@dataclass(frozen=True, slots=True)
class LookedUp:
    """A kind the rules look up: how the API names it, and what of it they read."""

    api_version: str
    kind: str
    shape: dict[str, Any]

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def plural(self) -> str:
        return plural_of(self.kind)


LOOKED_UP: tuple[LookedUp, ...] = (
    LookedUp(MODELSERVING_API_VERSION, MODELSERVING_KIND, MODELSERVING_SHAPE),
    LookedUp(AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, AUTOSCALINGPOLICY_SHAPE),
)


def looked_up(group: str, kind: str) -> LookedUp | None:
    for entry in LOOKED_UP:
        if entry.group == group and entry.kind == kind:
            return entry
    return None


def keep(value: Any, shape: Shape) -> Any:
    """`value` cut down to `shape`. Strings are interned: a thousand ModelServings repeat the same
    keys, role names and scheduler names, and each copy would cost its own memory."""
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return value
        return {sys.intern(k): keep(value[k], sub) for k, sub in shape.items() if k in value}
    if isinstance(shape, list):
        if not isinstance(value, list):
            return value
        return [keep(item, shape[0]) for item in value]
    if isinstance(value, str):
        return sys.intern(value)
    return value


def project(entry: LookedUp, obj: dict[str, Any]) -> dict[str, Any]:
    """The projection of a looked-up object. Values kept whole (minRoleReplicas) are shared with
    `obj`, which callers decode for this and then drop; the rules only read them."""
    projected: dict[str, Any] = keep(obj, entry.shape)
    return projected
