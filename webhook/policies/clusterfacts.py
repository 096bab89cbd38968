"""Cluster facts for the will-it-run rules, derived from the projections in the store.

The rules that ask whether a ModelServing could ever run, and whether an autoscaler is the only
one on its target, read whole kinds, not one object by name: node classes, Volcano queues,
HyperNode tiers, whether the PodGroup CRD has `subGroupPolicy`, and every autoscaler's scale
target. `ClusterFacts` answers these from a ProjectionStore (the webhook's watch-fed one, the one
`audit` fills, or one `check` fills from a snapshot), caching what it derives per change of the
kind it reads (`ProjectionStore.generation`), so a review reads a few dicts.

Each answer is one of: the facts; "the kind is not installed" (the check is skipped: no Volcano
queues, no KEDA, no HyperNodes); or LookupFailed when the kind is not listed yet (the rule allows
with its "not checked" warning). `NoFacts` stands for no cluster at all: loud (the webhook
without API access warns, like its lookups) or quiet (`check` on files alone says nothing about
a cluster it was not shown).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from ..hypernodes import members_of, resolve_nodes
from ..quantity import parse_quantity
from ..shapes import as_dict, only_objects, volcano
from .context import Context, LookupFailed
from .projections import HOSTNAME_LABEL, HYPERNODE, NODE, PODGROUP_CRD, PODGROUP_CRD_NAME, QUEUE, LookedUp, NodeShape
from .scalers import SCALERS, ScaleTarget, scale_targets
from .store import ProjectionStore

T = TypeVar("T")
log = logging.getLogger("servinggate.facts")


# ---- node classes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeClass:
    """Nodes of one shape: how many, their hostnames, and the shape read once (quantities parsed;
    an allocatable value that does not parse is left out, as if the node did not advertise it)."""

    shape: NodeShape
    count: int
    hostnames: frozenset[str]
    allocatable: dict[str, Decimal]
    labels: dict[str, str]

    @property
    def taints(self) -> tuple[tuple[str, str, str], ...]:
        return self.shape.taints


def node_classes_of(nodes: Iterable[dict[str, Any]]) -> tuple[NodeClass, ...]:
    """Node projections (projections.project_node) grouped by their shared shape, largest first."""
    counts: dict[NodeShape, int] = {}
    hosts: dict[NodeShape, set[str]] = {}
    for node in nodes:
        shape = node.get("shape")
        if not isinstance(shape, NodeShape):
            continue
        counts[shape] = counts.get(shape, 0) + 1
        hostname = node.get("hostname") or (node.get("metadata") or {}).get("name")
        if isinstance(hostname, str) and hostname:
            hosts.setdefault(shape, set()).add(hostname)
    classes = []
    for shape, count in counts.items():
        allocatable = {}
        for name, text in shape.allocatable:
            value = parse_quantity(text)
            if value is not None and value.is_finite():
                allocatable[name] = value
        classes.append(NodeClass(shape, count, frozenset(hosts.get(shape, ())), allocatable, dict(shape.labels)))
    return tuple(sorted(classes, key=lambda c: -c.count))


@dataclass(frozen=True, slots=True)
class HyperNodeCapacity:
    """A HyperNode with the allocatable of every node under it (through member HyperNodes too)."""

    name: str
    tier: int
    tier_name: str
    allocatable: dict[str, Decimal]


def _capacities(hypernodes: list[dict[str, Any]], nodes: list[dict[str, Any]], classes: tuple[NodeClass, ...]) -> tuple[list[HyperNodeCapacity], list[str]]:
    by_shape = {c.shape: c for c in classes}
    node_labels: dict[str, dict[str, str]] = {}
    node_shape: dict[str, NodeShape] = {}
    for n in nodes:
        shape = n.get("shape")
        if isinstance(shape, NodeShape):
            labels = dict(shape.labels)
            if n.get("hostname"):
                labels[HOSTNAME_LABEL] = n["hostname"]
            name = str(as_dict(n.get("metadata")).get("name") or "")
            node_labels[name], node_shape[name] = labels, shape
    views = {v.name: v for v in map(volcano.hypernode, hypernodes)}
    own: dict[str, set[str]] = {}
    children: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    for name, view in views.items():
        own[name], problems = resolve_nodes(view, node_labels)
        children[name] = members_of(view).children
        notes += [f"HyperNode {name}: {p}" for p in problems]
    members: dict[str, set[str]] = {}

    def resolve(name: str, seen: frozenset[str]) -> set[str]:
        if name in members:
            return members[name]
        found = set(own.get(name, ()))
        for child in children.get(name, ()):
            if child not in seen and child != name and child in views:
                found |= resolve(child, seen | {name})
        members[name] = found
        return found

    out = []
    for name, view in views.items():
        if view.tier is None:
            continue
        total: dict[str, Decimal] = {}
        for node in resolve(name, frozenset()):
            cls = by_shape.get(node_shape[node])
            for res, value in cls.allocatable.items() if cls is not None else ():
                total[res] = total.get(res, Decimal(0)) + value
        out.append(HyperNodeCapacity(name, view.tier, view.tier_name, total))
    return out, notes


ROOT_QUEUE = "root"  # Volcano's root queue: every queue without spec.parent is its child


@dataclass(frozen=True, slots=True)
class Queue:
    """A Volcano Queue as the rules read it: its state, and its child queues as Volcano sees
    them (a queue with children is not a leaf: workloads go to leaf queues). A queue without
    `spec.parent` is a child of `root` (volcano `pkg/scheduler/plugins/capacity/capacity.go`,
    updateAncestors), so `root` has children whenever any other queue exists."""

    state: str
    children: tuple[str, ...]


# ---- the facts -----------------------------------------------------------------------------------


class ClusterFacts:
    """The cluster facts of a ProjectionStore. Each method raises LookupFailed while a kind it
    reads is not listed yet; a kind that is not installed gives the "nothing to check" answer
    its method documents."""

    quiet = False

    def __init__(self, store: ProjectionStore) -> None:
        self.store = store
        self._memo: dict[str, tuple[Any, Any]] = {}
        self._noted: set[str] = set()  # HyperNode notes already logged

    def _derived(self, key: str, kinds: tuple[LookedUp, ...], make: Callable[[], T]) -> T:
        """`make()`, remembered until one of `kinds` changes (a read of a shared tuple: no lock)."""
        stamp = tuple(self.store.generation(k.api_version, k.kind) for k in kinds)
        memo = self._memo.get(key)
        if memo is not None and memo[0] == stamp:
            value: T = memo[1]
            return value
        value = make()
        self._memo[key] = (stamp, value)
        return value

    def installed(self, entry: LookedUp) -> bool:
        return self.store.installed(entry.api_version, entry.kind)

    def _items(self, entry: LookedUp) -> list[dict[str, Any]]:
        return self.store.items(entry.api_version, entry.kind)

    def node_classes(self) -> tuple[NodeClass, ...]:
        """Every node class; () when there are no Nodes to judge by."""
        return self._derived("nodes", (NODE,), lambda: node_classes_of(self._items(NODE)))

    def queues(self) -> dict[str, Queue] | None:
        """Queues by name; None when Volcano's Queue CRD is not installed."""

        def make() -> dict[str, Queue] | None:
            items = self._items(QUEUE)
            if not self.installed(QUEUE):
                return None
            views = [volcano.queue(q) for q in items]
            children: dict[str, list[str]] = {}
            for q in views:
                if q.name != ROOT_QUEUE:
                    children.setdefault(q.parent or ROOT_QUEUE, []).append(q.name)
            return {q.name: Queue(q.state, tuple(sorted(children.get(q.name, ())))) for q in views}

        return self._derived("queues", (QUEUE,), make)

    def hypernode_tiers(self) -> tuple[dict[int, list[str]], set[str], dict[int, set[str]]] | None:
        """(tier -> HyperNode names, tier names, tier -> its tier names); None when the HyperNode
        CRD is not installed."""

        def make() -> tuple[dict[int, list[str]], set[str], dict[int, set[str]]] | None:
            items = self._items(HYPERNODE)
            if not self.installed(HYPERNODE):
                return None
            tiers: dict[int, list[str]] = {}
            names: dict[int, set[str]] = {}
            for h in map(volcano.hypernode, items):
                if h.tier is not None:
                    tiers.setdefault(h.tier, []).append(h.name)
                    if h.tier_name:
                        names.setdefault(h.tier, set()).add(h.tier_name)
            return tiers, {n for ns in names.values() for n in ns}, names

        return self._derived("hypernodes", (HYPERNODE,), make)

    def cluster_totals(self) -> dict[str, Decimal]:
        """Every resource's allocatable summed over all nodes."""

        def make() -> dict[str, Decimal]:
            totals: dict[str, Decimal] = {}
            for c in self.node_classes():
                for res, value in c.allocatable.items():
                    totals[res] = totals.get(res, Decimal(0)) + value * c.count
            return totals

        return self._derived("totals", (NODE,), make)

    def by_label(self) -> dict[tuple[str, str], tuple[NodeClass, ...]]:
        """(label, value) -> the node classes that have it, in node_classes() order: a nodeSelector
        narrows the classes by a few lookups instead of a pass over all of them."""

        def make() -> dict[tuple[str, str], tuple[NodeClass, ...]]:
            index: dict[tuple[str, str], list[NodeClass]] = {}
            for c in self.node_classes():
                for pair in c.shape.labels:
                    index.setdefault(pair, []).append(c)
            return {pair: tuple(found) for pair, found in index.items()}

        return self._derived("by-label", (NODE,), make)

    def advertised(self) -> frozenset[str]:
        """Every resource name some node advertises."""
        return self._derived("advertised", (NODE,), lambda: frozenset(n for c in self.node_classes() for n in c.allocatable))

    def hypernode_most(self) -> dict[int, dict[str, Decimal]] | None:
        """tier -> resource -> the most one HyperNode of that tier or lower has; None when the
        HyperNode CRD is not installed."""

        def make() -> dict[int, dict[str, Decimal]] | None:
            capacities = self.hypernode_capacity()
            if capacities is None:
                return None
            out: dict[int, dict[str, Decimal]] = {}
            for tier in sorted({h.tier for h in capacities}):
                most: dict[str, Decimal] = {}
                for h in capacities:
                    if h.tier <= tier:
                        for res, value in h.allocatable.items():
                            if value > most.get(res, Decimal(0)):
                                most[res] = value
                out[tier] = most
            return out

        return self._derived("hypernode-most", (HYPERNODE, NODE), make)

    def hypernode_capacity(self) -> list[HyperNodeCapacity] | None:
        """Every HyperNode with what its nodes have; None when the HyperNode CRD is not installed."""

        def make() -> list[HyperNodeCapacity] | None:
            hypernodes = self._items(HYPERNODE)
            if not self.installed(HYPERNODE):
                return None
            capacities, notes = _capacities(hypernodes, self._items(NODE), self.node_classes())
            for note in notes:
                if note not in self._noted:  # once per process (the derived facts are recomputed on every change)
                    self._noted.add(note)
                    log.warning("HyperNode topology: %s", note)
            return capacities

        return self._derived("hypernode-capacity", (HYPERNODE, NODE), make)

    def podgroup_crd(self) -> bool:
        """Whether Volcano's PodGroup CRD is installed: Kthena makes PodGroups, and gives its pods
        the PodGroup annotations, only then (kthena `podgroupmanager/manager.go`, shouldCreatePodGroup)."""
        return self.subgroup_policy() is not None

    def subgroup_policy(self) -> bool | None:
        """Whether the PodGroup CRD has `spec.subGroupPolicy`; None when it is not installed."""
        items = self._items(PODGROUP_CRD)
        for crd in items:
            if as_dict(crd.get("metadata")).get("name") == PODGROUP_CRD_NAME:
                return bool(crd.get("subGroupPolicy"))
        return None

    def scale_targets(self, namespace: str) -> list[ScaleTarget]:
        """Every autoscaler's ModelServing targets in `namespace` (kinds not installed have none)."""

        def make() -> dict[str, list[ScaleTarget]]:
            out: dict[str, list[ScaleTarget]] = {}
            for entry in SCALERS:
                for obj in self._items(entry):
                    for target in scale_targets(entry.kind, obj):
                        out.setdefault(target.namespace, []).append(target)
            return out

        return self._derived("scalers", SCALERS, make).get(namespace, [])


def store_of_objects(objects: Iterable[dict[str, Any]]) -> ProjectionStore:
    """A store of every kept kind from a set of objects (a recorded snapshot): a kind with no
    object in it counts as not installed, so its checks are skipped rather than judged against
    nothing (a snapshot that did not record Queues refuses no queue)."""
    by_kind: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for obj in only_objects(objects):
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        by_kind.setdefault((group, str(obj.get("kind") or "")), []).append(obj)
    store = ProjectionStore()
    for entry in store.kinds:
        found = by_kind.get((entry.group, entry.kind))
        if found:
            store.replace(entry, found)
        else:
            store.mark_missing(entry)
    return store


class NoFacts(ClusterFacts):
    """No cluster to read facts from: every question raises LookupFailed(`reason`). `quiet`:
    the rules say nothing instead of warning (`check` on files, shown no cluster)."""

    def __init__(self, reason: str = "no Kubernetes API access configured", *, quiet: bool = False) -> None:
        self.reason, self.quiet = reason, quiet

    def _items(self, entry: LookedUp) -> list[dict[str, Any]]:
        raise LookupFailed(self.reason)

    def _derived(self, key: str, kinds: tuple[LookedUp, ...], make: Callable[[], T]) -> T:
        raise LookupFailed(self.reason)

    def installed(self, entry: LookedUp) -> bool:
        return False


QUIET = NoFacts("no cluster facts given", quiet=True)


def facts_of(ctx: Context) -> ClusterFacts:
    """The review's cluster facts (Context.facts), or the quiet "none" when it has none."""
    facts = ctx.facts
    return facts if isinstance(facts, ClusterFacts) else QUIET


def ask(ctx: Context, what: str, question: Callable[[ClusterFacts], T]) -> tuple[T | None, list[str]]:
    """(the answer, []) from the review's facts; (None, the "`what` not checked" warning) when
    they cannot be read yet (no warning from quiet facts)."""
    facts = facts_of(ctx)
    try:
        return question(facts), []
    except LookupFailed as exc:
        return None, not_checked(facts, what, exc)


def not_checked(facts: ClusterFacts, what: str, exc: LookupFailed) -> list[str]:
    """The warning of a check that could not read its facts, unless the facts are quiet."""
    return [] if facts.quiet else [f"servinggate: {what} not checked: {exc}"]
