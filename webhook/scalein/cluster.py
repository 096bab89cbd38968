"""An indexed view of nodes and pods: the cache the reconciler keeps current from watches, and
the snapshot `plan` reads from a file. Each pod is reduced once to the few fields scoring needs,
so a scoring pass and a one-node recompute never re-read the raw objects."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..admission.review import plural_of
from ..kthena import LABEL_GROUP
from . import accounting, binpack, controllers, costs, decisions, topology
from .settings import RECORD_KEY, REMOVE_LAST_KEY, ScoringSettings

log = logging.getLogger("servinggate.scalein")


@dataclass(slots=True)
class PodView:
    key: str  # namespace/name
    namespace: str
    name: str
    uid: str
    resource_version: str
    node: str
    phase: str
    holds: bool  # counts toward its node's utilization
    accel: dict[str, int]  # effective accelerator requests
    owner: tuple[str, str, str] | None  # (apiVersion, kind, name) of the controller
    annotations: dict[str, str] | None
    labels: dict[str, str]
    ready: bool
    ready_since: str
    restarts: int
    created: str
    terminating: bool = False  # deletionTimestamp set
    restarted: bool = False  # some container or init container restarted (Kthena's ContainerRestarted, whatever the phase)

    def annotation(self, key: str) -> str | None:
        return self.annotations.get(key) if self.annotations else None

    @property
    def remove_last(self) -> bool:
        """Annotated `servinggate.io/remove-last: "true"`: its owner asked for it to go last."""
        return self.annotation(REMOVE_LAST_KEY) == "true"


@dataclass(slots=True)
class NodeView:
    name: str
    accel: dict[str, int]  # allocatable accelerator units by resource
    total: int
    labels: dict[str, str] = field(default_factory=dict)


def pod_view(pod: Mapping[str, Any], is_accel: accounting.AcceleratorMatcher, accel: dict[str, int] | None = None) -> PodView:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if accel is None:
        accel = accounting.effective_requests(spec, is_accel)
    ready, since = False, ""
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
            since = cond.get("lastTransitionTime") or ""
    restarts = max((cs.get("restartCount") or 0 for cs in status.get("containerStatuses") or ()), default=0)
    init_restarts = max((cs.get("restartCount") or 0 for cs in status.get("initContainerStatuses") or ()), default=0)
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    return PodView(
        key=f"{ns}/{name}",
        namespace=ns,
        name=name,
        uid=meta.get("uid") or "",
        resource_version=meta.get("resourceVersion") or "",
        node=spec.get("nodeName") or "",
        phase=status.get("phase") or "Pending",
        holds=accounting.holds_devices(pod),
        accel=accel,
        owner=controllers.controller_ref(pod),
        annotations=meta.get("annotations"),
        labels=meta.get("labels") or {},
        ready=ready,
        ready_since=since,
        restarts=restarts,
        created=meta.get("creationTimestamp") or "",
        terminating=bool(meta.get("deletionTimestamp")),
        restarted=restarts > 0 or init_restarts > 0,
    )


def node_view(node: Mapping[str, Any], is_accel: accounting.AcceleratorMatcher) -> NodeView:
    meta = node.get("metadata") or {}
    accel = accounting.node_accelerators(node, is_accel)
    return NodeView(name=meta.get("name") or "", accel=accel, total=sum(accel.values()), labels=meta.get("labels") or {})


class WorkloadTypes:
    """Which controller owners are scored: ReplicaSet, ModelServing, and third-party kinds
    resolved to (group, kind) through API discovery (or, offline, guessed from the plural)."""

    def __init__(self, third_party: Iterable[tuple[str, str]] = (), guess: Iterable[tuple[str, str, str]] = ()):
        self.kinds = set(controllers.BUILTIN_TYPES) | set(third_party)
        self.guess = {(g, r) for g, _, r in guess}
        self._seen: dict[tuple[str, str], bool] = {}

    def scored(self, owner: tuple[str, str, str] | None) -> bool:
        if owner is None:
            return False
        hit = self._seen.get(owner[:2])
        if hit is None:
            hit = self._seen[owner[:2]] = self._decide(owner)
        return hit

    def summed(self, owner: tuple[str, str, str] | None) -> bool:
        """Its controller sums its pods' costs per unit (Kthena's ModelServing)."""
        return owner is not None and (controllers.group_of(owner[0]), owner[1]) in controllers.SUMMED_TYPES

    def _decide(self, owner: tuple[str, str, str]) -> bool:
        group, kind = controllers.group_of(owner[0]), owner[1]
        if (group, kind) in self.kinds:
            return True
        if self.guess:
            if (group, plural_of(kind)) in self.guess:  # third-party types are given by resource name
                self.kinds.add((group, kind))
                return True
        return False


class Cluster:
    """Nodes, pods and HyperNodes by name, pods indexed by node. Mutators return the nodes whose
    pods must be re-scored; `desired_on` scores one node's pods.

    In HyperNode scope a node's costs also depend on its HyperNode's use (costs.hypernode_rank):
    the rank each HyperNode's costs were last computed with is kept, and a mutation that moves a
    HyperNode to another rank returns all of its nodes; otherwise only the node it touched."""

    def __init__(self, settings: ScoringSettings, types: WorkloadTypes):
        self.settings = settings
        self.types = types
        self.is_accel = accounting.AcceleratorMatcher(settings.accelerator_resources)
        self.nodes: dict[str, NodeView] = {}
        self.pods: dict[str, PodView] = {}
        self.by_node: dict[str, set[str]] = {}
        self.hypernodes: dict[str, topology.HyperNodeView] = {}
        # "namespace/name" -> what Kthena's scale-down reads of a ModelServing (`plan` only: the
        # reconciler writes costs and needs no ranking)
        self.modelservings: dict[str, binpack.ServingSpec] = {}
        self.topology = topology.Topology()
        self.notes_seen: set[str] = set()
        self._used: dict[str, int] = {}  # node -> devices in use (cache)
        self._hn_use: dict[str, tuple[int, int]] = {}  # HyperNode -> (used, total) (cache)
        self._hn_rank: dict[str, int] = {}  # HyperNode -> the rank its pods' costs were computed with

    # -- topology ------------------------------------------------------------------------------

    @property
    def by_hypernode(self) -> bool:
        """Whether HyperNodes enter the costs (--compaction-scope; auto: if any exists)."""
        scope = self.settings.compaction_scope
        return scope == "hypernode" or (scope == "auto" and bool(self.hypernodes))

    def hypernode_of(self, node: str) -> str | None:
        return self.topology.leaf_of.get(node) if self.by_hypernode else None

    def _retopologize(self) -> set[str]:
        """Resolve the HyperNodes again; every node when the result changed (rare: HyperNode
        edits, nodes added or removed or relabelled). New notes are logged once each."""
        before = (self.topology.leaf_of, self.by_hypernode)
        labels = {name: n.labels for name, n in self.nodes.items()}
        # before the nodes are listed every member would look missing: nothing to resolve yet
        self.topology = topology.resolve(self.hypernodes, labels) if self.hypernodes and self.nodes else topology.Topology()
        for note in self.topology.notes:
            if note not in self.notes_seen:
                self.notes_seen.add(note)
                log.warning({"msg": "HyperNode topology: " + note})
        if (self.topology.leaf_of, self.by_hypernode) == before:
            return set()  # the same members: the cached use and ranks still hold
        self._hn_use.clear()
        self._hn_rank.clear()
        return set(self.nodes) | set(self.by_node)

    def upsert_hypernode(self, obj: Mapping[str, Any]) -> set[str]:
        view = topology.hypernode_view(obj)
        if view is None or self.hypernodes.get(view.name) == view:
            return set()
        self.hypernodes[view.name] = view
        return self._retopologize()

    def delete_hypernode(self, name: str) -> set[str]:
        if self.hypernodes.pop(name, None) is None:
            return set()
        return self._retopologize()

    def replace_hypernodes(self, items: Iterable[Mapping[str, Any]]) -> set[str]:
        self.hypernodes = {v.name: v for v in map(topology.hypernode_view, items) if v is not None}
        return self._retopologize()

    def hypernode_usage(self, hn: str) -> tuple[int, int]:
        """(used, allocatable) accelerator units over a HyperNode's nodes."""
        hit = self._hn_use.get(hn)
        if hit is None:
            used = total = 0
            for name in self.topology.members.get(hn, ()):
                u, t = self.usage(name)
                used, total = used + min(u, t), total + t
            hit = self._hn_use[hn] = (used, total)
        return hit

    def _rank(self, hn: str) -> int:
        used, total = self.hypernode_usage(hn)
        return costs.hypernode_rank(used, total, hn, self._hn_rank.get(hn))

    def _changed(self, touched: set[str], allocatable: bool = False) -> set[str]:
        """Update the cached use of the touched nodes (and of their HyperNodes, by the difference);
        add the nodes of every HyperNode whose rank moved (their pods' costs change too).
        `allocatable`: a node's devices changed, its HyperNode's total is counted again."""
        if not touched:
            return touched
        leaf = self.topology.leaf_of
        hns = set()
        for name in touched:
            before = self._used.pop(name, None)
            hn = leaf.get(name)
            if hn is None:
                continue
            hns.add(hn)
            cached = self._hn_use.get(hn)
            if cached is None:
                continue
            if before is None or allocatable:
                del self._hn_use[hn]
                continue
            used, total = self.usage(name)
            self._hn_use[hn] = (cached[0] - min(before, total) + min(used, total), cached[1])
        if not hns or not self.by_hypernode:
            return touched
        out = set(touched)
        for hn in hns:
            if hn in self._hn_rank and self._rank(hn) != self._hn_rank[hn]:
                out.update(self.topology.members.get(hn, ()))
        return out

    # -- mutation ------------------------------------------------------------------------------

    def upsert_node(self, node: Mapping[str, Any]) -> set[str]:
        view = node_view(node, self.is_accel)
        old = self.nodes.get(view.name)
        self.nodes[view.name] = view
        if self.hypernodes and (old is None or old.labels != view.labels):
            moved = self._retopologize()
            if moved:
                return moved
        return set() if old is not None and old.accel == view.accel else self._changed({view.name}, allocatable=True)

    def delete_node(self, name: str) -> set[str]:
        if self.nodes.pop(name, None) is None:
            return set()
        if self.hypernodes:
            moved = self._retopologize()
            if moved:
                return moved
        return self._changed({name}, allocatable=True)

    def upsert_pod(self, pod: Mapping[str, Any]) -> set[str]:
        """Only pods that request an accelerator are kept, and those Kthena counts in a
        ServingGroup (its `group-name` label): the others neither take devices nor get a cost,
        and a container's requests cannot change into an accelerator later. A ServingGroup's pod
        without accelerators gets no cost either, but Kthena sums whatever cost it carries and
        reads its state (binpack_scaledown.go), so `plan` must see it."""
        accel = accounting.effective_requests(pod.get("spec") or {}, self.is_accel)
        if not accel and LABEL_GROUP not in ((pod.get("metadata") or {}).get("labels") or {}):
            meta = pod.get("metadata") or {}
            key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
            return self.delete_pod(key) if key in self.pods else set()
        return self.put_pod(pod_view(pod, self.is_accel, accel))

    def put_pod(self, view: PodView) -> set[str]:
        old = self.pods.get(view.key)
        self.pods[view.key] = view
        if not view.accel:
            return set()  # no devices, no cost: on no node's books (upsert_pod)
        touched = set()
        if old is not None and old.node and old.node != view.node:
            self.by_node.get(old.node, set()).discard(view.key)
            touched.add(old.node)
        if view.node:
            self.by_node.setdefault(view.node, set()).add(view.key)
            touched.add(view.node)
        if old is not None and old.node == view.node and old.holds == view.holds and old.accel == view.accel:
            return touched  # the node's use is unchanged (an annotation, a status): no HyperNode moves
        return self._changed(touched)

    def delete_pod(self, key: str) -> set[str]:
        old = self.pods.pop(key, None)
        if old is None or not old.node or not old.accel:
            return set()
        self.by_node.get(old.node, set()).discard(key)
        return self._changed({old.node})

    def replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        hypernodes, self.hypernodes = self.hypernodes, {}  # resolved once, below
        self.nodes, self._used, self._hn_use = {}, {}, {}
        for n in nodes:
            self.upsert_node(n)
        self.hypernodes = hypernodes
        self._retopologize()

    def replace_modelservings(self, items: Iterable[Mapping[str, Any]]) -> None:
        self.modelservings = dict(filter(None, map(binpack.serving_spec, items)))

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        self.pods, self.by_node, self._used, self._hn_use = {}, {}, {}, {}
        for p in pods:
            self.upsert_pod(p)

    # -- scoring -------------------------------------------------------------------------------

    def units_on(self, pod: PodView, node: NodeView) -> int:
        """Devices the pod holds of the kinds this node has."""
        if not pod.accel or not node.accel:
            return 0
        return sum(v for k, v in pod.accel.items() if k in node.accel)

    def usage(self, name: str) -> tuple[int, int]:
        """(used, allocatable) accelerator units on a node."""
        node = self.nodes.get(name)
        if node is None or not node.total:
            return 0, 0
        used = self._used.get(name)
        if used is None:
            used = 0
            for key in self.by_node.get(name, ()):
                pod = self.pods[key]
                if pod.holds and pod.accel:
                    used += self.units_on(pod, node)
            self._used[name] = used
        return used, node.total

    def scored(self, pod: PodView) -> bool:
        return bool(pod.accel) and pod.holds and self.types.scored(pod.owner)

    def desired_on(self, name: str) -> dict[str, int]:
        """Costs of the scored pods on one node (pod key -> cost); they depend on that node alone
        and, in HyperNode scope, on its HyperNode's rank. A remove-last pod still counts toward its
        node's use; only its own cost is the top one."""
        node = self.nodes.get(name)
        if node is None or not node.total:
            return {}
        keys = self.by_node.get(name, ())
        pods = [self.pods[k] for k in keys]
        units = {p.key: self.units_on(p, node) for p in pods if p.accel}
        used = sum(u for k, u in units.items() if self.pods[k].holds)
        self._used[name] = used
        scoped = self.by_hypernode
        hn = self.hypernode_of(name)
        rank = 0
        if hn is not None:
            rank = self._hn_rank[hn] = self._rank(hn)
        out = {}
        for p in pods:
            own = units.get(p.key, 0)
            if own and p.holds and self.types.scored(p.owner):
                if p.remove_last:
                    out[p.key] = costs.REMOVE_LAST_COST
                else:
                    c = costs.cost(used, node.total, own)
                    c = costs.in_hypernode(c, rank) if scoped else c
                    out[p.key] = costs.summed(c, scoped) if self.types.summed(p.owner) else c
        return out

    def desired_all(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name in self.by_node:
            out.update(self.desired_on(name))
        return out

    def cost_action(self, key: str, desired: int) -> decisions.CostAction:
        pod = self.pods[key]
        return decisions.decide(pod.annotation(self.settings.score_annotation_key), pod.annotation(RECORD_KEY), desired, self.settings.scale_in_priority)
