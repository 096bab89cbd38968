"""Which tier-1 HyperNode holds each node: Volcano's network topology, reduced to what scale-in
ranks by. Pure: HyperNode objects and node labels in, a node -> HyperNode map and notes out.

A HyperNode (topology.volcano.sh/v1alpha1) has a `tier` and `members`, each of `type` Node or
HyperNode, selected by exact name, by regular expression on the name, or by labels. Members are
resolved as Volcano resolves them (volcano `pkg/util/hypernode/member_selector.go` GetMembers,
v1.15): an exact name is taken as is, a pattern is an unanchored RE2 search on the name, a label
selector with neither matchLabels nor matchExpressions selects nothing, and a pattern that does
not compile selects nothing.

A node's HyperNode is the smallest one holding it: the lowest tier among the HyperNodes whose
Node members select it. The cluster's word on topology can be wrong, and then a pod ranks by its
node alone rather than by a guess; each case is a note (logged once by the caller):

- a HyperNode whose Node members select no node, or name a node that does not exist;
- HyperNodes in a cycle of HyperNode members (Volcano refuses to build them);
- a node held by two HyperNodes of its lowest tier.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..admission.selectors import selector_matches
from ..shapes import as_dict

GROUP, VERSION, PLURAL, KIND = "topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode"


@dataclass(frozen=True, slots=True)
class HyperNodeView:
    """One HyperNode, projected: its tier and its member selectors by member type."""

    name: str
    tier: int
    nodes: tuple[dict[str, Any], ...]  # selectors of Node members
    children: tuple[dict[str, Any], ...]  # selectors of HyperNode members
    labels: dict[str, str] = field(default_factory=dict)


def hypernode_view(obj: Mapping[str, Any]) -> HyperNodeView | None:
    """The projection of a HyperNode object; None when it has no name. A tier that is not a
    whole number counts as 0 (the API server would not have stored it)."""
    meta = as_dict(obj.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    spec = as_dict(obj.get("spec"))
    tier = spec.get("tier")
    nodes: list[dict[str, Any]] = []
    children: list[dict[str, Any]] = []
    members = spec.get("members")
    for member in members if isinstance(members, list) else ():
        if not isinstance(member, dict) or not isinstance(member.get("selector"), dict):
            continue
        (nodes if member.get("type") == "Node" else children if member.get("type") == "HyperNode" else []).append(member["selector"])
    labels = as_dict(meta.get("labels"))
    return HyperNodeView(name, tier if isinstance(tier, int) and not isinstance(tier, bool) else 0, tuple(nodes), tuple(children), labels)


def _pattern(raw: Any) -> re.Pattern[str] | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return re.compile(raw)
    except re.error:
        return None


def select(selector: Mapping[str, Any], names: Mapping[str, Mapping[str, str]]) -> tuple[set[str], list[str]]:
    """The names among `names` (name -> labels) that one member selector picks, and the exact
    names it gives that are not there."""
    out: set[str] = set()
    missing: list[str] = []
    exact = selector.get("exactMatch")
    if isinstance(exact, dict):
        name = exact.get("name")
        if isinstance(name, str) and name:
            if name in names:
                out.add(name)
            else:
                missing.append(name)
    regex = selector.get("regexMatch")
    if isinstance(regex, dict):
        pattern = _pattern(regex.get("pattern"))
        if pattern is not None:
            out.update(n for n in names if pattern.search(n))
    match = selector.get("labelMatch")
    if isinstance(match, dict) and (match.get("matchLabels") or match.get("matchExpressions")):
        out.update(n for n, labels in names.items() if selector_matches(match, labels))
    return out, missing


@dataclass
class Topology:
    """Each usable node's HyperNode, each HyperNode's usable nodes, and what was wrong."""

    leaf_of: dict[str, str] = field(default_factory=dict)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _in_cycles(hypernodes: Mapping[str, HyperNodeView]) -> set[str]:
    """HyperNodes that reach themselves through HyperNode members."""
    names = {n: hn.labels for n, hn in hypernodes.items()}
    edges = {n: set().union(*(select(s, names)[0] for s in hn.children)) if hn.children else set() for n, hn in hypernodes.items()}
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
        if not hn.nodes or hn.name in cyclic:
            continue
        picked: set[str] = set()
        for selector in hn.nodes:
            got, missing = select(selector, nodes)
            picked |= got
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
