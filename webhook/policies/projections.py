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
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..admission.review import plural_of
from ..kthena import AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, MODELSERVING_API_VERSION, MODELSERVING_KIND
from ..shapes import as_dict, as_list, objects

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
        "template": {"roles": [{"name": True, "replicas": True, "workerReplicas": True}], "gangPolicy": {"minRoleReplicas": True}},
    },
}
# autoscalingpolicybindings.references asks whether the policy exists; the one-owner rule
# (scaletargets.py) reads what it scales.
AUTOSCALINGPOLICY_SHAPE: dict[str, Any] = {
    **_IDENTITY,
    "spec": {
        "homogeneousTarget": {"target": {"targetRef": True}},
        "heterogeneousTarget": {"params": [{"target": {"targetRef": True}}]},
        "disaggregatedTarget": {"targetRef": True, "roles": True},
    },
}


@dataclass(frozen=True, slots=True)
class LookedUp:
    """A kind the rules look up: how the API names it, and what of it they read. `projector`,
    when set, replaces the shape (a projection that is computed, not cut out); `field_selector`
    lists only some objects of the kind (one CRD, not all of them)."""

    api_version: str
    kind: str
    shape: dict[str, Any]
    projector: Callable[[dict[str, Any]], dict[str, Any]] | None = field(default=None, compare=False)
    field_selector: str = ""
    cluster_scoped: bool = False  # listed cluster-wide even when `audit` is limited to a namespace

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


# Read one object at a time by name, never listed or kept: KServe's inferenceservice-config
# (kserve.py reads its default deployment mode), one ConfigMap in a namespace that is a setting.
# Its RBAC grants `get` of that name only.
KSERVE_CONFIGMAP = LookedUp("v1", "ConfigMap", {**_IDENTITY, "data": {"deploy": True}})
FETCHED: tuple[LookedUp, ...] = (KSERVE_CONFIGMAP,)


def looked_up(group: str, kind: str) -> LookedUp | None:
    for entry in LOOKED_UP + FETCHED:
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
    if entry.projector is not None:
        return entry.projector(obj)
    projected: dict[str, Any] = keep(obj, entry.shape)
    return projected


# ---- cluster facts: what the will-it-run rules read (policies/clusterfacts.py) -------------------

HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True, weakref_slot=True)
class NodeShape:
    """What placement reads of a Node, less what is unique to it: allocatable (resource name ->
    quantity text), labels without the hostname, and taints (key, value, effect). Nodes of one
    shape form a node class; equal shapes are one shared object (`node_shape`), so 5,000 nodes of
    a few dozen shapes cost a few dozen of them."""

    allocatable: tuple[tuple[str, str], ...]
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]


_SHAPES: weakref.WeakValueDictionary[NodeShape, NodeShape] = weakref.WeakValueDictionary()


def _str_pairs(value: Any, *, drop: str = "") -> tuple[tuple[str, str], ...]:
    return tuple(sorted((sys.intern(str(k)), sys.intern(str(v))) for k, v in as_dict(value).items() if k != drop and isinstance(v, (str, int, float))))


def node_shape(allocatable: Any, labels: Any, taints: Any) -> NodeShape:
    """The shared NodeShape of these fields; odd values (a list for labels, a taint without a key)
    are dropped, not raised on: the API server's schema makes them rare, and a rule would rather
    see a node with fewer facts than none."""
    kept = []
    for _, taint in objects(taints):
        if isinstance(taint.get("key"), str):
            kept.append((sys.intern(taint["key"]), sys.intern(str(taint.get("value") or "")), sys.intern(str(taint.get("effect") or ""))))
    shape = NodeShape(_str_pairs(allocatable), _str_pairs(labels, drop=HOSTNAME_LABEL), tuple(sorted(kept)))
    shared = _SHAPES.get(shape)
    if shared is None:
        _SHAPES[shape] = shared = shape
    return shared


def project_node(obj: dict[str, Any]) -> dict[str, Any]:
    """A Node as its name, hostname label and shared NodeShape."""
    meta, spec, status = as_dict(obj.get("metadata")), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    labels = as_dict(meta.get("labels"))
    hostname = labels.get(HOSTNAME_LABEL)
    return {
        "metadata": {"name": sys.intern(str(meta.get("name") or ""))},
        "hostname": hostname if isinstance(hostname, str) else "",
        "shape": node_shape(status.get("allocatable"), labels, spec.get("taints")),
    }


PODGROUP_CRD_NAME = "podgroups.scheduling.volcano.sh"


def project_podgroup_crd(obj: dict[str, Any]) -> dict[str, Any]:
    """The PodGroup CRD as one fact: whether any of its versions has `spec.subGroupPolicy` (Kthena
    writes the role gangs there only when it has, kthena#587)."""
    meta, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    found = False
    for version in as_list(spec.get("versions")):
        props = as_dict(version)
        for key in ("schema", "openAPIV3Schema", "properties", "spec", "properties"):
            props = as_dict(props.get(key))
        if "subGroupPolicy" in props:
            found = True
    return {"metadata": {"name": str(meta.get("name") or "")}, "subGroupPolicy": found}


_SCALER: dict[str, Any] = {**_IDENTITY, "spec": {"scaleTargetRef": True}}
_IDENTITY_OWNED: dict[str, Any] = {**_IDENTITY, "metadata": {**_IDENTITY["metadata"], "ownerReferences": [{"apiVersion": True, "kind": True, "name": True}]}}

NODE = LookedUp("v1", "Node", {}, projector=project_node, cluster_scoped=True)
QUEUE = LookedUp("scheduling.volcano.sh/v1beta1", "Queue", {**_IDENTITY, "spec": {"parent": True}, "status": {"state": True}}, cluster_scoped=True)
HYPERNODE = LookedUp("topology.volcano.sh/v1alpha1", "HyperNode", {**_IDENTITY, "spec": {"tier": True, "tierName": True, "members": True}}, cluster_scoped=True)
PODGROUP_CRD = LookedUp(
    "apiextensions.k8s.io/v1",
    "CustomResourceDefinition",
    {},
    projector=project_podgroup_crd,
    field_selector=f"metadata.name={PODGROUP_CRD_NAME}",
    cluster_scoped=True,
)
HPA = LookedUp("autoscaling/v2", "HorizontalPodAutoscaler", {**_IDENTITY_OWNED, "spec": {"scaleTargetRef": True}})
SCALEDOBJECT = LookedUp("keda.sh/v1alpha1", "ScaledObject", _SCALER)
CRONHPA = LookedUp("autoscaling.alibabacloud.com/v1beta1", "CronHorizontalPodAutoscaler", _SCALER)
AUTOSCALINGPOLICY = LOOKED_UP[1]

# The kinds the cluster-fact rules read as a whole (not one object by name), each kept by the
# store beside LOOKED_UP; AutoscalingPolicy is in both.
CLUSTER_FACTS: tuple[LookedUp, ...] = (NODE, QUEUE, HYPERNODE, PODGROUP_CRD, HPA, SCALEDOBJECT, CRONHPA)
KEPT: tuple[LookedUp, ...] = LOOKED_UP + CLUSTER_FACTS


def kept(group: str, kind: str) -> LookedUp | None:
    for entry in KEPT:
        if entry.group == group and entry.kind == kind:
            return entry
    return None
