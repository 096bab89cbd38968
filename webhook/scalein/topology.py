"""Which tier-1 HyperNode holds each node: Volcano's network topology, reduced to what scale-in
ranks by. Pure: HyperNode objects and node labels in, a node -> HyperNode map and notes out.

A HyperNode (topology.volcano.sh/v1alpha1) has a `tier` and `members`, each of `type` Node or
HyperNode. Members are resolved by the resolver the will-it-run rules use too
(webhook/hypernodes.py, a port of volcano `pkg/util/hypernode/member_selector.go` GetMembers):
the union over Node members; an exact name as given; an unanchored RE2 pattern; a label selector
with neither matchLabels nor matchExpressions, a pattern that does not compile and an unknown
operator select nothing; HyperNode members are named by exact name only.

A node's HyperNode is the smallest one holding it: the lowest tier among the HyperNodes whose
Node members select it. The cluster's word on topology can be wrong, and then a pod ranks by its
node alone rather than by a guess; each case is a note (logged once by the caller):

- a HyperNode whose Node members select no node, or name a node that does not exist, or a member
  that cannot be resolved (a bad pattern, a refused label selector, an unknown member type);
- HyperNodes in a cycle of HyperNode members (Volcano refuses to build them);
- a node held by two HyperNodes of its lowest tier.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import hypernodes
from ..shapes import volcano
from ..shapes.volcano import MemberSelector

GROUP, VERSION, PLURAL, KIND = "topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode"


@dataclass(frozen=True, slots=True)
class HyperNodeView:
    """One HyperNode, projected: its tier, its Node member selectors, the HyperNodes it names, and
    the members that could not be read."""

    name: str
    tier: int
    nodes: tuple[MemberSelector, ...]  # selectors of Node members
    children: tuple[str, ...]  # HyperNode members, by exact name
    problems: tuple[str, ...] = ()


def hypernode_view(obj: Mapping[str, Any]) -> HyperNodeView | None:
    """The projection of a HyperNode object; None when it has no name. A tier that is not a
    whole number counts as 0 (the API server would not have stored it)."""
    hn = volcano.hypernode(obj)
    if not hn.name:
        return None
    read = hypernodes.members_of(hn)
    return HyperNodeView(hn.name, hn.tier if hn.tier is not None else 0, read.nodes, read.children, read.problems)


def select(selector: MemberSelector, names: Mapping[str, Mapping[str, str]]) -> tuple[set[str], list[str], str]:
    """The names among `names` (name -> labels) that one Node member's selector picks, the exact
    names it gives that are not there, and why it selects nothing when it is at fault."""
    got = hypernodes.node_members(selector, names)
    return {n for n in got.names if n in names}, sorted(n for n in got.names if n not in names), got.problem


@dataclass
class Topology:
    """Each usable node's HyperNode, each HyperNode's usable nodes, and what was wrong."""

    leaf_of: dict[str, str] = field(default_factory=dict)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _in_cycles(hypernodes: Mapping[str, HyperNodeView]) -> set[str]:
    """HyperNodes that reach themselves through HyperNode members."""
    edges = {n: {c for c in hn.children if c in hypernodes} for n, hn in hypernodes.items()}
    cyclic: set[str] = set()
    for start in edges:
        seen, stack = set(), list(edges[start])
        while stack:
            n = stack.pop()
            if n == start:
                cyclic.add(start)
                break
            if n not in seen:
                seen.add(n)
                stack.extend(edges.get(n, ()))
    return cyclic


def resolve(hypernodes: Mapping[str, HyperNodeView], nodes: Mapping[str, Mapping[str, str]]) -> Topology:
    """Map each node (name -> labels) to its tier-1 HyperNode; see the module doc for the rules."""
    top = Topology()
    if not hypernodes:
        return top
    cyclic = _in_cycles(hypernodes)
    for name in sorted(cyclic):
        top.notes.append(f"HyperNode {name} is in a cycle of HyperNode members: its nodes rank by node alone")
    holders: dict[str, list[HyperNodeView]] = {}
    for hn in hypernodes.values():
        for problem in hn.problems:
            top.notes.append(f"HyperNode {hn.name}: {problem}: it is skipped")
        if not hn.nodes or hn.name in cyclic:
            continue
        picked: set[str] = set()
        for i, selector in enumerate(hn.nodes):
            got, missing, problem = select(selector, nodes)
            picked |= got
            if problem:
                top.notes.append(f"HyperNode {hn.name}: Node member {i + 1}: {problem}: it selects nothing")
            for name in missing:
                top.notes.append(f"HyperNode {hn.name} names node {name}, which does not exist")
        if not picked:
            top.notes.append(f"HyperNode {hn.name}: its members select no node")
        for node in picked:
            holders.setdefault(node, []).append(hn)
    members: dict[str, list[str]] = {}
    for node, held in holders.items():
        low = min(hn.tier for hn in held)
        smallest = [hn.name for hn in held if hn.tier == low]
        if len(smallest) > 1:
            top.notes.append(f"node {node} is in HyperNodes {', '.join(sorted(smallest))} of tier {low}: it ranks by node alone")
            continue
        top.leaf_of[node] = smallest[0]
        members.setdefault(smallest[0], []).append(node)
    top.members = {hn: tuple(sorted(ns)) for hn, ns in members.items()}
    return top
