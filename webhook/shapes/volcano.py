"""Typed views of Volcano's objects as ServingGate reads them: a HyperNode (topology.volcano.sh/
v1alpha1) with its members, a Queue (scheduling.volcano.sh/v1beta1), and the network topology
policy (`NetworkTopologySpec`) Kthena copies into the PodGroups it makes.

The fields mirror volcano-sh/apis (`pkg/apis/topology/v1alpha1/hypernode_types.go`: HyperNodeSpec,
MemberSpec, MemberSelector; `pkg/apis/scheduling/v1beta1/types.go`: QueueSpec.Parent,
QueueStatus.State, NetworkTopologySpec). Each is decoded once, where an object enters a reader,
and never raises: a field of the wrong type reads as absent or empty, or is kept as sent where a
reader names it in a note or a field error (a regex pattern, a tier). Go's optional pointer fields
(`exactMatch`, `regexMatch`, `labelMatch`, `matchLabels`, `matchExpressions`) keep apart "not
set" (absent or null) and "set to something unusable", since Volcano answers them differently.

PodGroups themselves are not read: Kthena makes them from the ModelServing, whose template the
rules judge, so the one PodGroup field read is the topology policy copied from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .values import as_dict, as_object, metadata

NODE, HYPERNODE = "Node", "HyperNode"


# ---- metav1.LabelSelector -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector as sent. `empty`: neither `matchLabels` nor `matchExpressions` holds
    anything (Volcano's test before it converts one). `match_labels` is None when it is set to
    something that is not a map; `expressions` is None when it is set to something that is not a
    list, and an entry is None when it is not an object."""

    empty: bool
    match_labels: dict[str, Any] | None
    expressions: tuple[dict[str, Any] | None, ...] | None


def label_selector(value: dict[str, Any]) -> LabelSelector:
    """The view of a label selector object."""
    labels, expressions = value.get("matchLabels"), value.get("matchExpressions")
    empty = not labels and not expressions
    match_labels = {} if labels is None else as_object(labels)
    if expressions is None:
        return LabelSelector(empty, match_labels, ())
    if not isinstance(expressions, list):
        return LabelSelector(empty, match_labels, None)
    return LabelSelector(empty, match_labels, tuple(as_object(e) for e in expressions))


# ---- HyperNode ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberSelector:
    """A HyperNode member's `selector` (MemberSelector). `exact`: None when `exactMatch` is not
    set, else its `name`, "" when it has none (or one that is not a string). `has_regex` says
    `regexMatch` is set; `pattern` is its `pattern` as sent (None when missing). `has_label` says
    `labelMatch` is set; `label` is None when it is not an object."""

    exact: str | None = None
    has_regex: bool = False
    pattern: Any = None
    has_label: bool = False
    label: LabelSelector | None = None


def member_selector(value: Any) -> MemberSelector | None:
    """The view of a member's selector; None when it is not an object."""
    selector = as_object(value)
    if selector is None:
        return None
    exact, regex, label = selector.get("exactMatch"), selector.get("regexMatch"), selector.get("labelMatch")
    name = as_dict(exact).get("name")
    label_object = as_object(label)
    return MemberSelector(
        exact=None if exact is None else (name if isinstance(name, str) else ""),
        has_regex=regex is not None,
        pattern=as_dict(regex).get("pattern"),
        has_label=label is not None,
        label=None if label_object is None else label_selector(label_object),
    )


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of `spec.members`: its place (for a note), its `type` as sent (None when the
    entry is not an object) and its selector (None when that is not an object)."""

    index: int
    type: Any
    selector: MemberSelector | None


@dataclass(frozen=True, slots=True)
class HyperNode:
    """A HyperNode: `name` ("" when it has none), `tier` (None unless a whole number), `tier_name`
    ("" unless a string) and its members in order."""

    name: str
    tier: int | None
    tier_name: str
    members: tuple[Member, ...]


def hypernode(obj: Any) -> HyperNode:
    """The view of a whole HyperNode or of its projection (policies/projections.py)."""
    name = metadata(obj).get("name")
    spec = as_dict(as_dict(obj).get("spec"))
    return hypernode_spec(spec, name if isinstance(name, str) else "")


def hypernode_spec(spec: Any, name: str = "") -> HyperNode:
    """The view of a HyperNode's `spec` alone."""
    spec = as_dict(spec)
    tier, tier_name, members = spec.get("tier"), spec.get("tierName"), spec.get("members")
    entries = tuple(
        Member(i, entry.get("type"), member_selector(entry.get("selector"))) if (entry := as_object(raw)) is not None else Member(i, None, None)
        for i, raw in enumerate(members if isinstance(members, list) else ())
    )
    whole = isinstance(tier, int) and not isinstance(tier, bool)
    return HyperNode(name, tier if whole else None, tier_name if isinstance(tier_name, str) else "", entries)


# ---- Queue --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Queue:
    """A Queue as the rules read it: `name` ("" when it has none), `parent` (`spec.parent` when a
    non-empty string, else "": the root queue's child) and `state` (`status.state` as text, ""
    when unset)."""

    name: str
    parent: str
    state: str


def queue(obj: Any) -> Queue:
    """The view of a whole Queue or of its projection."""
    name = metadata(obj).get("name")
    parent = as_dict(as_dict(obj).get("spec")).get("parent")
    state = as_dict(as_dict(obj).get("status")).get("state")
    return Queue(name if isinstance(name, str) else "", parent if isinstance(parent, str) else "", str(state or ""))


# ---- the network topology of a PodGroup ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopologyPolicy:
    """A NetworkTopologySpec as sent (`policy`, for a field error's value), read: `hard` unless
    `mode` is set to anything else (the CRD's default is hard); `tier_allowed` as sent (None when
    unset: any other value counts as set, as Volcano's webhook counts a pointer); `tier_name` when
    a non-empty string, else ""."""

    policy: dict[str, Any]
    hard: bool
    tier_allowed: Any
    tier_name: str


def topology_policy(value: Any) -> TopologyPolicy | None:
    """The view of a network topology policy; None when it is not an object."""
    policy = as_object(value)
    if policy is None:
        return None
    tier_name = policy.get("highestTierName")
    return TopologyPolicy(policy, (policy.get("mode") or "hard") == "hard", policy.get("highestTierAllowed"), tier_name if isinstance(tier_name, str) else "")


GROUP_POLICY, ROLE_POLICY = "groupPolicy", "rolePolicy"


def topology_policies(template: Any) -> dict[str, TopologyPolicy]:
    """The policies of a ModelServing template's `networkTopology` that are objects, by field, in
    this order: `groupPolicy` (Kthena copies it into each ServingGroup's PodGroup) and `rolePolicy`
    (into each of its `subGroupPolicy` entries)."""
    topology = as_dict(as_dict(template).get("networkTopology"))
    return {field: view for field in (GROUP_POLICY, ROLE_POLICY) if (view := topology_policy(topology.get(field))) is not None}
