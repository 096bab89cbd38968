"""`python -m webhook plan`: which pods a scale-in would remove, and what that frees.

Offline and read-only: it scores a `{"nodes": NodeList, "pods": PodList}` snapshot with the same
code as the reconciler, then orders each workload's pods the way its controller does (reference:
ReplicaSet `ActivePodsWithRanks`, CloneSet's sorter, Kthena's summed Role/ServingGroup cost)."""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gc
import html
import re
import sys
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import config
from . import scoring
from .cluster import Cluster, PodView, WorkloadTypes
from .settings import RECORD_KEY, ReconcileSettings, ScoringSettings

MS_GROUP = "modelserving.volcano.sh/group-name"
MS_ROLE = "modelserving.volcano.sh/role"
MS_ROLE_ID = "modelserving.volcano.sh/role-id"
PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


class SnapshotError(ValueError):
    """The snapshot file is unusable."""


def load_snapshot(path: str) -> tuple[list[dict], list[dict]]:
    try:
        with open(path, "rb") as fh:
            data = orjson.loads(fh.read())
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise SnapshotError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict) or not isinstance(data.get("pods"), dict):
        raise SnapshotError(f'{path}: must be {{"nodes": NodeList, "pods": PodList}} as `kubectl get -o json` prints them')
    return list(data["nodes"].get("items") or []), list(data["pods"].get("items") or [])


# ---- ranking ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 16)
def _epoch(ts: str) -> float:
    if not ts:
        return float("inf")  # a zero time counts as the newest
    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")


def _ordinal(name: str) -> int:
    m = _ORDINAL.match(name)
    return int(m.group(2)) if m else -1


@dataclass
class Entry:
    """One pod in a plan: its cost now, the cost the reconciler leaves, and why."""

    pod: PodView
    current: str | None
    planned: int  # what the controller will rank by
    action: str  # none | write | overwrite | foreign | unscored


@dataclass
class Unit:
    """What a controller removes as one: a pod, a Kthena Role replica, or a ServingGroup."""

    name: str
    entries: list[Entry]
    cost: int
    running: bool
    ordinal: int
    roles: list["Unit"] = field(default_factory=list)


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
    """Kthena: not-running first, then lower summed cost, then higher ordinal."""
    return (1 if u.running else 0, u.cost, -u.ordinal)


def _active(p: PodView) -> bool:
    return p.holds  # the controllers skip terminated and terminating pods too


def build_plan(cluster: Cluster) -> list[Workload]:
    desired = cluster.desired_all()
    s = cluster.settings
    owners: dict[tuple[str, str, str, str], list[Entry]] = defaultdict(list)
    for key, pod in cluster.pods.items():
        if not _active(pod) or not cluster.types.scored(pod.owner):
            continue
        current = pod.annotation(s.score_annotation_key)
        if key in desired:
            d = scoring.decide(current, pod.annotation(RECORD_KEY), desired[key], s.scale_in_priority)
            planned = scoring.ranking_cost(d.value)
            action = d.action
        else:
            planned, action = scoring.ranking_cost(current), "unscored"
        api_version, kind, name = pod.owner  # type: ignore[misc]
        owners[(scoring.group_of(api_version), kind, pod.namespace, name)].append(Entry(pod, current, planned, action))

    workloads = []
    for (group, kind, ns, name), entries in sorted(owners.items(), key=lambda kv: (kv[0][2], kv[0][3], kv[0][1])):
        if (group, kind) == scoring.MODELSERVING:
            workloads.append(_modelserving(ns, name, entries))
            continue
        per_node: dict[str, int] = defaultdict(int)
        for e in entries:
            if e.pod.node:
                per_node[e.pod.node] += 1
        ordered = sorted(entries, key=lambda e: pod_key(e, per_node.get(e.pod.node, 0)))
        label = f"{kind} {name}"
        if (group, kind) == scoring.REPLICASET:
            h = ordered[0].pod.labels.get("pod-template-hash", "")
            if h and name.endswith("-" + h):
                label = f"Deployment {name[: -len(h) - 1]} (ReplicaSet {name})"
        units = [Unit(e.pod.name, [e], e.planned, e.pod.phase == "Running" and e.pod.ready, -1) for e in ordered]
        workloads.append(Workload(kind, ns, name, label, units))
    return workloads


def _rollup(name: str, entries: list[Entry]) -> Unit:
    running = all(e.pod.phase == "Running" and e.pod.ready for e in entries)
    return Unit(name, sorted(entries, key=lambda e: e.pod.name), sum(e.planned for e in entries), running, _ordinal(name))


def _modelserving(ns: str, name: str, entries: list[Entry]) -> Workload:
    groups: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        groups[e.pod.labels.get(MS_GROUP, "?")].append(e)
    units = []
    for gname, gentries in groups.items():
        unit = _rollup(gname, gentries)
        roles: dict[str, list[Entry]] = defaultdict(list)
        for e in gentries:
            roles[e.pod.labels.get(MS_ROLE_ID, "?")].append(e)
        unit.roles = sorted((_rollup(r, es) for r, es in roles.items()), key=lambda u: (u.entries[0].pod.labels.get(MS_ROLE, ""),) + group_key(u))
        units.append(unit)
    units.sort(key=group_key)
    return Workload("ModelServing", ns, name, f"ModelServing {name}", units)


# ---- node usage before/after ------------------------------------------------------------------


def node_usage(cluster: Cluster, workloads: list[Workload], remove: int) -> list[dict[str, Any]]:
    """Per accelerator node: used/allocatable now and after each listed workload loses its first
    `remove` units; pods removed are listed by node."""
    removed: dict[str, list[PodView]] = defaultdict(list)
    for w in workloads:
        for u in w.units[:remove]:
            for e in u.entries:
                if e.pod.node:
                    removed[e.pod.node].append(e.pod)
    rows = []
    for name in sorted(cluster.nodes):
        node = cluster.nodes[name]
        if not node.total:
            continue
        used, total = cluster.usage(name)
        freed = sum(cluster.units_on(p, node) for p in removed.get(name, ()))
        rows.append({"node": name, "allocatable": total, "before": min(used, total), "after": max(min(used, total) - freed, 0),
                     "removed": sorted(p.key for p in removed.get(name, ()))})
    return rows


# ---- rendering --------------------------------------------------------------------------------


def settings_summary(s: ScoringSettings) -> dict[str, Any]:
    return {
        "enable_scale_in_score": s.enable_scale_in_score,
        "scale_in_priority": s.scale_in_priority,
        "score_annotation_key": s.score_annotation_key,
        "accelerator_resources": list(s.accelerator_resources),
        "third_party_types": list(s.third_party_types),
    }


PRIORITY_TEXT = {
    "binpack": "our cost overwrites a value someone else set",
    "wl": "a value someone else set is left alone",
}


def _entry_json(e: Entry) -> dict[str, Any]:
    return {"pod": e.pod.key, "node": e.pod.node, "phase": e.pod.phase, "ready": e.pod.ready,
            "current": e.current, "cost": e.planned, "action": e.action}


def _unit_json(u: Unit) -> dict[str, Any]:
    out: dict[str, Any] = {"name": u.name, "cost": u.cost, "running": u.running}
    if u.ordinal >= 0:
        out["ordinal"] = u.ordinal
    if u.roles:
        out["roles"] = [_unit_json(r) for r in u.roles]
    out["pods"] = [_entry_json(e) for e in u.entries]
    return out


def to_json(s: ScoringSettings, workloads: list[Workload], usage: list[dict[str, Any]], remove: int) -> dict[str, Any]:
    return {
        "settings": settings_summary(s),
        "remove": remove,
        "workloads": [
            {"kind": w.kind, "namespace": w.namespace, "name": w.name, "label": w.label,
             "unit": "ServingGroup" if w.kind == "ModelServing" else "Pod",
             "order": [_unit_json(u) for u in w.units]}
            for w in workloads
        ],
        "nodes": usage,
    }


def _bar(used: int, total: int, width: int = 16) -> str:
    if total <= width:
        return "#" * used + "." * (total - used)
    filled = round(used * width / total)
    return "#" * filled + "." * (width - filled)


def _note(e: Entry) -> str:
    if e.action == "foreign":
        return f"set by someone else, kept ({e.current})"
    if e.action == "overwrite":
        return f"overwrites {e.current} set by someone else"
    if e.action == "write":
        return f"was {e.current if e.current is not None else 'unset'}"
    if e.action == "unscored":
        return "not scored (no accelerator on its node)"
    return "already set"


def to_text(s: ScoringSettings, workloads: list[Workload], usage: list[dict[str, Any]], remove: int) -> str:
    out = [
        f"settings: scale-in-priority={s.scale_in_priority} ({PRIORITY_TEXT[s.scale_in_priority]}); "
        f"score-annotation-key={s.score_annotation_key}; enable-scale-in-score={'true' if s.enable_scale_in_score else 'false'}"
        + ("" if s.enable_scale_in_score else " (the reconciler writes nothing; costs below are what it would write)"),
        f"accelerators: {', '.join(s.accelerator_resources)}",
    ]
    if s.third_party_types:
        out.append(f"third-party types: {', '.join(s.third_party_types)}")
    for w in workloads:
        out.append("")
        if w.kind == "ModelServing":
            out.append(f"{w.label} ({w.namespace}): ServingGroups in removal order (Kthena: not running first, lower summed cost, higher ordinal)")
            for i, g in enumerate(w.units, 1):
                mark = "  <- removed" if i <= remove else ""
                out.append(f"  {i}. {g.name}  sum {g.cost}  {'Running' if g.running else 'not running'}{mark}")
                for r in g.roles:
                    out.append(f"       role {r.name}: sum {r.cost}")
                    for e in r.entries:
                        out.append(f"         {e.pod.name}  on {e.pod.node or '-'}  cost {e.planned}  ({_note(e)})")
        else:
            out.append(f"{w.label} ({w.namespace}): pods in removal order")
            for i, u in enumerate(w.units, 1):
                e = u.entries[0]
                state = f"{e.pod.phase}{', ready' if e.pod.ready else ', not ready'}"
                mark = "  <- removed" if i <= remove else ""
                out.append(f"  {i}. {e.pod.name}  on {e.pod.node or '-'}  cost {e.planned}  [{state}]  ({_note(e)}){mark}")
    out.append("")
    out.append(f"accelerators per node, before -> after removing the first {remove} of each workload listed:")
    width = max((len(r["node"]) for r in usage), default=4)
    for r in usage:
        free_after = r["allocatable"] - r["after"]
        out.append(f"  {r['node'].ljust(width)}  {r['before']:>3}/{r['allocatable']:<3} [{_bar(r['before'], r['allocatable'])}]  ->  "
                   f"{r['after']:>3}/{r['allocatable']:<3} [{_bar(r['after'], r['allocatable'])}]  idle {free_after}"
                   + ("  (empty)" if r["after"] == 0 and r["before"] > 0 else ""))
    return "\n".join(out) + "\n"


def _color(name: str) -> str:
    h = zlib.crc32(name.encode()) % 360
    return f"hsl({h},55%,55%)"


def to_svg(cluster: Cluster, usage: list[dict[str, Any]], remove: int) -> str:
    """Node map, before (left) and after (right): one square per device, coloured by workload;
    removed pods are outlined red on the left and gone on the right."""
    cell, pad, label_w = 10, 6, 120
    per_row_cells = 16
    rows = []
    for r in usage:
        node = cluster.nodes[r["node"]]
        cells: list[tuple[str, str, bool]] = []  # (colour, title, removed)
        removed = set(r["removed"])
        for key in sorted(cluster.by_node.get(r["node"], ())):
            p = cluster.pods[key]
            if not p.holds:
                continue
            n = cluster.units_on(p, node)
            owner = p.owner[2] if p.owner else p.name
            cells += [(_color(owner), f"{p.key} ({owner})", key in removed)] * n
        rows.append((r, cells[: node.total]))
    lines_per_node = [max(1, -(-r["allocatable"] // per_row_cells)) for r, _ in rows]
    panel_w = label_w + per_row_cells * cell + pad
    height = 40 + sum(n * cell + pad for n in lines_per_node)
    width = 2 * panel_w + 3 * pad
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="10">',
           f'<text x="{pad}" y="14">before</text><text x="{panel_w + 2 * pad}" y="14">after removing the first {remove} of each workload</text>']
    y = 28
    for (r, cells), nlines in zip(rows, lines_per_node):
        for side in (0, 1):
            x0 = pad + side * (panel_w + pad)
            svg.append(f'<text x="{x0}" y="{y + 9}">{html.escape(r["node"][:18])} {r["after" if side else "before"]}/{r["allocatable"]}</text>')
            for i in range(r["allocatable"]):
                cx = x0 + label_w + (i % per_row_cells) * cell
                cy = y + (i // per_row_cells) * cell
                fill, title, stroke = "#e6e6e6", "idle", "#999"
                if i < len(cells):
                    colour, who, gone = cells[i]
                    if side == 1 and gone:
                        fill, title = "#ffffff", f"freed: {who}"
                        stroke = "#2a2"
                    else:
                        fill, title = colour, who
                        stroke = "#d00" if gone else "#555"
                svg.append(f'<rect x="{cx}" y="{cy}" width="{cell - 1}" height="{cell - 1}" fill="{fill}" stroke="{stroke}"><title>{html.escape(title)}</title></rect>')
        y += nlines * cell + pad
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


# ---- the command ------------------------------------------------------------------------------


def make_cluster(settings: ScoringSettings, nodes: list[dict], pods: list[dict]) -> Cluster:
    """Offline there is no discovery: a third-party resource matches an owner kind by its plural."""
    cluster = Cluster(settings, WorkloadTypes(guess=settings.third_party()))
    cluster.replace_nodes(nodes)
    cluster.replace_pods(pods)
    return cluster


def _select(workloads: list[Workload], wanted: str | None) -> list[Workload]:
    if not wanted:
        return workloads
    ns, _, name = wanted.rpartition("/")
    def hit(w: Workload) -> bool:
        names = {w.name, w.label.split(" ")[1]}
        return name in names and (not ns or ns == w.namespace)
    return [w for w in workloads if hit(w)]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook plan", description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True, metavar="FILE", help='{"nodes": NodeList, "pods": PodList} as kubectl get -o json prints them')
    parser.add_argument("--remove", type=int, default=1, metavar="K", help="units each workload loses (pods; ServingGroups for a ModelServing); default 1")
    parser.add_argument("--workload", default=None, metavar="[NS/]NAME", help="only this workload (Deployment, ReplicaSet, ModelServing or third-party name)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    parser.add_argument("--svg", default=None, metavar="FILE", help="also draw the node map before and after to FILE")
    config.add_arguments(parser, ScoringSettings)
    args = parser.parse_args(list(argv))
    if args.remove < 0:
        parser.error("--remove must be 0 or more")
    # the reconciler's own config file works here too: its scoring settings apply, the rest is ignored
    settings = config.load(ScoringSettings, args, shared_with=ReconcileSettings)
    # a short-lived process building millions of small objects: the cyclic GC would only
    # re-scan them over and over (4x slower on 150,000 pods) and find nothing to free
    gc.disable()
    try:
        nodes, pods = load_snapshot(args.snapshot)
    except SnapshotError as exc:
        print(f"servinggate plan: {exc}", file=sys.stderr)
        return 2
    cluster = make_cluster(settings, nodes, pods)
    workloads = _select(build_plan(cluster), args.workload)
    if args.workload and not workloads:
        print(f"servinggate plan: no scored workload named {args.workload!r} in {args.snapshot}", file=sys.stderr)
        return 2
    usage = node_usage(cluster, workloads, args.remove)
    if args.output == "json":
        sys.stdout.write(orjson.dumps(to_json(settings, workloads, usage, args.remove), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(to_text(settings, workloads, usage, args.remove))
    if args.svg:
        with open(args.svg, "w", encoding="utf-8") as fh:
            fh.write(to_svg(cluster, usage, args.remove))
    return 0
