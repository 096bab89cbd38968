"""The order in which controllers remove pods on a scale-in, with the costs our scoring leaves.

Each workload's pods are ranked the way its controller ranks them (references: ReplicaSet's
`ActivePodsWithRanks`, CloneSet's sorter, Kthena's summed Role/ServingGroup cost), so `plan`
shows what a scale-in would actually remove, and `node_usage` what that frees per node. Pure: a
`Cluster` in, dataclasses out; rendering.py turns them into text, JSON or SVG."""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...kthena import LABEL_GROUP, LABEL_ROLE, LABEL_ROLE_ID, MODELSERVING
from .. import binpack, controllers, decisions, goints
from ..cluster import Cluster, PodView
from ..settings import RECORD_KEY, ScoringSettings

PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


@functools.lru_cache(maxsize=1 << 16)
def _epoch(ts: str) -> float:
    if not ts:
        return float("inf")  # a zero time counts as the newest
    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")


_INT32_MAX = 2**31 - 1
_DIGITS = re.compile(r"([0-9]+)")


CONTESTED_REASON = "DeletionCostContested"  # the Event the reconciler posts (notices.py)


def contested_pods(events: list[dict[str, Any]], window: int, now: float | None = None) -> set[str]:
    """Pods ("ns/name") the reconciler said it leaves alone: a DeletionCostContested Event on
    them, newer than `window` seconds before `now` (None: any age, for a snapshot)."""
    out = set()
    for ev in events:
        if not isinstance(ev, dict) or ev.get("reason") != CONTESTED_REASON:
            continue
        obj = ev.get("involvedObject") if isinstance(ev.get("involvedObject"), dict) else ev.get("regarding")
        if not isinstance(obj, dict) or obj.get("kind") != "Pod":
            continue
        if now is not None:
            series = ev["series"] if isinstance(ev.get("series"), dict) else {}
            stamps = [ev.get("lastTimestamp"), ev.get("eventTime"), series.get("lastObservedTime"), ev.get("firstTimestamp")]
            newest = max((_epoch(t) for t in stamps if isinstance(t, str) and t), default=float("inf"))
            if newest != float("inf") and newest + window <= now:
                continue
        out.add(f"{obj.get('namespace') or (ev.get('metadata') or {}).get('namespace') or ''}/{obj.get('name') or ''}")
    return out


def _ordinal(name: str) -> int:
    """The ordinal ending a ServingGroup or Role name (`<ms>-<g>`, `<role>-<r>`), or -1: Kthena's
    utils.GetParentNameAndOrdinal (v1.0 to 2029995c), which parses it as an int32. Ordinals
    are only compared, never counted: after a surge (kthena#1626) they need not be 0..n-1
    (kthena#1780), and Kthena still removes the higher ordinal first on a tie."""
    m = _ORDINAL.match(name)
    if not m:
        return -1
    value = int(m.group(2))
    return value if value <= _INT32_MAX else -1


def _natural(name: str) -> tuple:
    """A sort key that orders the numbers in pod names by value: `decode-2` before `decode-10`."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(name)))


@dataclass
class Entry:
    """One pod in a plan: its cost now, the cost the reconciler leaves, and why."""

    pod: PodView
    current: str | None
    planned: int  # what the controller will rank by
    action: str  # none | write | overwrite | foreign | contested | unscored
    remove_last: bool = False  # annotated remove-last, and scored: its cost is the top one


@dataclass
class Unit:
    """What a controller removes as one: a pod, a Kthena Role replica, or a ServingGroup."""

    name: str
    entries: list[Entry]
    cost: int
    running: bool
    ordinal: int
    roles: list[Unit] = field(default_factory=list)
    status: str = ""  # Kthena's: Running, Deleting, not running (binpack.py)
    why: str = ""  # why not Running
    protected: bool = False  # among the first `partition`: removed only after every other


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    label: str  # e.g. "Deployment deploy1"
    units: list[Unit]  # in removal order


def pod_key(e: Entry, colocated: int) -> tuple:
    """ReplicaSet/CloneSet order, smaller first: unassigned, phase, not ready, lower cost, more
    co-located replicas, newer ready time, more restarts, newer creation, then UID."""
    p = e.pod
    return (
        1 if p.node else 0,
        PHASE_RANK.get(p.phase, 1),
        1 if p.ready else 0,
        e.planned,
        -colocated,
        -_epoch(p.ready_since) if p.ready else 0.0,
        -p.restarts,
        -_epoch(p.created),
        p.uid,
    )


def group_key(u: Unit) -> tuple:
    """Kthena (binpack_scaledown.go): not Running first, then lower summed cost, then higher ordinal."""
    return (1 if u.running else 0, u.cost, -u.ordinal)


def _active(p: PodView) -> bool:
    return p.holds  # the controllers skip terminated and terminating pods too


def _entry(pod: PodView, desired: int | None, contested: set[str] | frozenset[str], s: ScoringSettings, parse: Callable[[str | None], int | None]) -> Entry:
    """One pod's entry: the cost it will carry (what the reconciler writes, or what it has) as
    `parse` (its controller's reading) ranks it."""
    current = pod.annotation(s.score_annotation_key)
    if desired is not None:
        d = decisions.decide(current, pod.annotation(RECORD_KEY), desired, s.scale_in_priority)
        planned = goints.ranking_cost(d.value, parse)
        action = d.action
        if action == decisions.OVERWRITE and pod.key in contested:
            planned, action = goints.ranking_cost(current, parse), "contested"
    else:
        planned, action = goints.ranking_cost(current, parse), "unscored"
    return Entry(pod, current, planned, action, pod.remove_last and desired is not None)


def build_plan(cluster: Cluster, contested: set[str] | frozenset[str] = frozenset()) -> list[Workload]:
    """Each scored workload's units in removal order. `contested`: pods the reconciler leaves
    alone because another writer keeps changing their cost (contested_pods)."""
    desired = cluster.desired_all()
    s = cluster.settings
    owners: dict[tuple[str, str, str, str], list[Entry]] = defaultdict(list)
    labelled: dict[tuple[str, str], list[Entry]] = defaultdict(list)  # Kthena's pod index: namespace/group-name
    for key, pod in cluster.pods.items():
        owner = pod.owner
        ms = owner is not None and (controllers.group_of(owner[0]), owner[1]) == MODELSERVING
        group = pod.labels.get(LABEL_GROUP)
        if not ms and group is None and (not _active(pod) or not pod.accel or not cluster.types.scored(owner)):
            continue
        # Kthena reads costs with strconv.Atoi, the ReplicaSet controller with its own parser
        kthena = _entry(pod, desired.get(key), contested, s, goints.kthena_cost) if ms or group is not None else None
        if group is not None and kthena is not None:
            labelled[(pod.namespace, group)].append(kthena)
        if ms and kthena is not None:
            api_version, kind, name = owner  # type: ignore[misc]
            owners[(controllers.group_of(api_version), kind, pod.namespace, name)].append(kthena)
        elif _active(pod) and pod.accel and cluster.types.scored(owner):
            api_version, kind, name = owner  # type: ignore[misc]
            owners[(controllers.group_of(api_version), kind, pod.namespace, name)].append(_entry(pod, desired.get(key), contested, s, goints.parse_cost))

    workloads = []
    for (group, kind, ns, name), entries in sorted(owners.items(), key=lambda kv: (kv[0][2], kv[0][3], kv[0][1])):
        if (group, kind) == MODELSERVING:
            workloads.append(_modelserving(ns, name, entries, labelled, cluster.modelservings.get(f"{ns}/{name}")))
            continue
        per_node: dict[str, int] = defaultdict(int)
        for e in entries:
            if e.pod.node:
                per_node[e.pod.node] += 1
        ordered = sorted(entries, key=lambda e: pod_key(e, per_node.get(e.pod.node, 0)))
        label = f"{kind} {name}"
        if (group, kind) == controllers.REPLICASET:
            h = ordered[0].pod.labels.get("pod-template-hash", "")
            if h and name.endswith("-" + h):
                label = f"Deployment {name[: -len(h) - 1]} (ReplicaSet {name})"
        units = [Unit(e.pod.name, [e], e.planned, e.pod.phase == "Running" and e.pod.ready, -1) for e in ordered]
        workloads.append(Workload(kind, ns, name, label, units))
    return workloads


def _rollup(name: str, entries: list[Entry], state: tuple[str, str]) -> Unit:
    """A ServingGroup or Role replica: its pods, Kthena's summed cost (Go int arithmetic) and state."""
    status, why = state
    cost = goints.go_sum(e.planned for e in entries)
    return Unit(name, sorted(entries, key=lambda e: _natural(e.pod.name)), cost, status == binpack.RUNNING, _ordinal(name), status=status, why=why)


def _kthena_order(units: list[Unit], partition: int) -> list[Unit]:
    """scaleDownServingGroups / scaleDownRoles: the first `partition` units in ordinal order are
    protected; the others go first, each part by (status, summed cost, higher ordinal)."""
    ordered = sorted(units, key=lambda u: (u.ordinal, u.name))
    protected = ordered[:partition] if partition > 0 else []
    for u in protected:
        u.protected = True
    return sorted(ordered[len(protected) :], key=group_key) + sorted(protected, key=group_key)


def _modelserving(ns: str, name: str, entries: list[Entry], labelled: dict[tuple[str, str], list[Entry]], spec: binpack.ServingSpec | None) -> Workload:
    """A ModelServing's ServingGroups in Kthena's removal order. A group's pods are every pod its
    index holds under the group's name (terminating, Failed and Succeeded ones too, and any pod
    carrying the label); `spec` (the ModelServing, when `plan` has it) gives `partition` and the
    role counts its Running state needs."""
    groups: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        gname = e.pod.labels.get(LABEL_GROUP)
        if gname is None:
            groups["?"].append(e)
    for gname in {e.pod.labels[LABEL_GROUP] for e in entries if LABEL_GROUP in e.pod.labels}:
        groups[gname] = labelled.get((ns, gname), [])
    units = []
    for gname, gentries in groups.items():
        unit = _rollup(gname, gentries, binpack.group_state([e.pod for e in gentries], spec))
        roles: dict[tuple[str, str], list[Entry]] = defaultdict(list)
        for e in gentries:
            role, rid = e.pod.labels.get(LABEL_ROLE, ""), e.pod.labels.get(LABEL_ROLE_ID, "")
            if role and rid:  # RoleIDIndexFunc indexes only pods with all three labels
                roles[(role, rid)].append(e)
        names = sorted({role for role, _ in roles}, key=lambda r: (list(spec.roles).index(r) if spec is not None and r in spec.roles else len(roles), r))
        for role in names:
            replicas = [_rollup(rid, es, binpack.role_state([e.pod for e in es], role, spec)) for (r, rid), es in roles.items() if r == role]
            partition = binpack.role_partition(spec, role)
            # the partition counts Deleting replicas (roleList), the ranking skips them
            protected = {u.name for u in sorted(replicas, key=lambda u: (u.ordinal, u.name))[: max(partition, 0)]}
            ranked = [u for u in replicas if u.status != binpack.DELETING]
            for u in ranked:
                u.protected = u.name in protected
            unit.roles += sorted((u for u in ranked if not u.protected), key=group_key) + sorted((u for u in ranked if u.protected), key=group_key)
        units.append(unit)
    return Workload("ModelServing", ns, name, f"ModelServing {name}", _kthena_order(units, binpack.group_partition(spec)))


# ---- node usage before/after ------------------------------------------------------------------


def node_usage(cluster: Cluster, workloads: list[Workload], remove: int) -> list[dict[str, Any]]:
    """Per accelerator node: used/allocatable now and after each listed workload loses its first
    `remove` units; pods removed are listed by node."""
    removed: dict[str, list[PodView]] = defaultdict(list)
    for w in workloads:
        for u in w.units[:remove]:
            for e in u.entries:
                if e.pod.node and e.pod.holds:  # a terminating or terminated pod frees nothing more
                    removed[e.pod.node].append(e.pod)
    rows = []
    for name in sorted(cluster.nodes):
        node = cluster.nodes[name]
        if not node.total:
            continue
        used, total = cluster.usage(name)
        freed = sum(cluster.units_on(p, node) for p in removed.get(name, ()))
        rows.append(
            {
                "node": name,
                "allocatable": total,
                "before": min(used, total),
                "after": max(min(used, total) - freed, 0),
                "removed": sorted(p.key for p in removed.get(name, ())),
            }
        )
    return rows


def hypernode_usage(cluster: Cluster, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tier-1 HyperNode (in HyperNode scope): its nodes' accelerators before and after, from
    `node_usage` rows; and how many of its nodes are, and will be, wholly idle."""
    if not cluster.by_hypernode:
        return []
    by_hn: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        hn = cluster.topology.leaf_of.get(r["node"])
        if hn is not None:
            by_hn[hn].append(r)
    out = []
    for hn in sorted(by_hn):
        rs = by_hn[hn]
        out.append(
            {
                "hypernode": hn,
                "tier": cluster.hypernodes[hn].tier,
                "nodes": len(rs),
                "allocatable": sum(r["allocatable"] for r in rs),
                "before": sum(r["before"] for r in rs),
                "after": sum(r["after"] for r in rs),
                "idle_nodes_before": sum(1 for r in rs if r["before"] == 0),
                "idle_nodes_after": sum(1 for r in rs if r["after"] == 0),
            }
        )
    return out
