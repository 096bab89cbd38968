"""`plan`'s output: the ranked workloads (ranking.py) as text for people, JSON for tools, and an
SVG map of the accelerator nodes before and after the scale-in."""

from __future__ import annotations

import html
from typing import Any

from ..cluster import Cluster
from ..settings import ScoringSettings
from .ranking import Entry, Unit, Workload


def settings_summary(s: ScoringSettings) -> dict[str, Any]:
    return {
        "enable_scale_in_score": s.enable_scale_in_score,
        "scale_in_priority": s.scale_in_priority,
        "score_annotation_key": s.score_annotation_key,
        "accelerator_resources": list(s.accelerator_resources),
        "third_party_types": list(s.third_party_types),
        "compaction_scope": s.compaction_scope,
        "contest_backoff_seconds": s.contest_backoff_seconds,
    }


PRIORITY_TEXT = {"binpack": "our cost overwrites a value someone else set", "wl": "a value someone else set is left alone"}


def _entry_json(e: Entry) -> dict[str, Any]:
    return {
        "pod": e.pod.key,
        "node": e.pod.node,
        "phase": e.pod.phase,
        "ready": e.pod.ready,
        "current": e.current,
        "cost": e.planned,
        "action": e.action,
        "remove_last": e.remove_last,
    }


def _unit_json(u: Unit) -> dict[str, Any]:
    out: dict[str, Any] = {"name": u.name, "cost": u.cost, "running": u.running}
    if u.status:  # a Kthena ServingGroup or Role replica
        out["status"], out["protected"] = u.status, u.protected
        if u.why:
            out["why"] = u.why
    if u.ordinal >= 0:
        out["ordinal"] = u.ordinal
    if u.roles:
        out["roles"] = [_unit_json(r) for r in u.roles]
    out["pods"] = [_entry_json(e) for e in u.entries]
    return out


def to_json(
    s: ScoringSettings, workloads: list[Workload], usage: list[dict[str, Any]], remove: int, hypernodes: list[dict[str, Any]] | None = None, scope: str = "node"
) -> dict[str, Any]:
    return {
        "scope": scope,
        "settings": settings_summary(s),
        "remove": remove,
        "workloads": [
            {
                "kind": w.kind,
                "namespace": w.namespace,
                "name": w.name,
                "label": w.label,
                "unit": "ServingGroup" if w.kind == "ModelServing" else "Pod",
                "order": [_unit_json(u) for u in w.units],
            }
            for w in workloads
        ],
        "nodes": usage,
        "hypernodes": hypernodes or [],
    }


def _bar(used: int, total: int, width: int = 16) -> str:
    if total <= width:
        return "#" * used + "." * (total - used)
    filled = round(used * width / total)
    return "#" * filled + "." * (width - filled)


def _marks(e: Entry) -> str:
    """`remove-last` beside a protected pod's cost, so the top value explains itself."""
    return "  remove-last" if e.remove_last else ""


def _note(e: Entry) -> str:
    if e.action == "foreign":
        return f"set by someone else, kept ({e.current})"
    if e.action == "contested":
        return f"contested: another writer keeps changing it ({e.current}); left alone for the backoff window (Event DeletionCostContested)"
    if e.action == "overwrite":
        return f"overwrites {e.current} set by someone else"
    if e.action == "write":
        return f"was {e.current if e.current is not None else 'unset'}"
    if e.action == "unscored":
        return "not scored (no accelerator on its node)"
    return "already set"


# ---- why each removed unit goes first -----------------------------------------------------------------


def _pod_facts(u: Unit, colocated: dict[str, int]) -> tuple[tuple[Any, str], ...]:
    """The controller's ranking (ranking.pod_key), each criterion with how to say it."""
    p, e = u.entries[0].pod, u.entries[0]
    here = colocated.get(p.node, 0) if p.node else 0
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(p.phase, 1)
    return (
        (1 if p.node else 0, "not scheduled on a node"),
        (phase_rank, f"{p.phase}, before Running pods"),
        (1 if p.ready else 0, "not ready, before ready pods"),
        (e.planned, f"lowest cost {e.planned}"),
        (-here, f"{here} replicas share its node, more than on the next kept pod's"),
        (p.ready_since if p.ready else "", "ready most recently"),
        (-p.restarts, f"{p.restarts} restarts"),
        (p.created, "created most recently"),
    )


def _reason_pod(u: Unit, kept: Unit | None, colocated: dict[str, int]) -> str:
    if kept is None:
        return "every pod is removed"
    mine, theirs = _pod_facts(u, colocated), _pod_facts(kept, colocated)
    for (a, text), (b, _) in zip(mine, theirs):
        if text and a != b:
            if text.startswith("lowest cost"):
                return f"lowest cost {a} (next kept pod: {b})"
            if text in ("ready most recently", "created most recently"):
                return text + f" (after {kept.name})"
            return text
    return "tie on every criterion: the controller's last tie-breaker decides"


def _reason_group(u: Unit, kept: Unit | None, colocated: dict[str, int]) -> str:
    if kept is None:
        return "every ServingGroup is removed"
    if u.protected != kept.protected:
        return "not protected by the partition, before the first groups it protects"
    if u.running != kept.running:
        return f"{u.status or 'not running'}{f' ({u.why})' if u.why else ''}, before running groups"
    if u.cost != kept.cost:
        return f"lowest summed cost {u.cost} (next kept group: {kept.cost})"
    return f"same summed cost, higher ordinal ({u.ordinal} > {kept.ordinal})"


def removal_reasons(w: Workload, remove: int) -> list[str]:
    """One line per removed unit: the first ranking criterion that puts it before the first unit kept."""
    kept = w.units[remove] if remove < len(w.units) else None
    colocated: dict[str, int] = {}
    for unit in w.units:
        for e in unit.entries:
            if e.pod.node:
                colocated[e.pod.node] = colocated.get(e.pod.node, 0) + 1
    why = _reason_group if w.kind == "ModelServing" else _reason_pod
    return [why(u, kept, colocated) for u in w.units[:remove]]


def to_text(
    s: ScoringSettings, workloads: list[Workload], usage: list[dict[str, Any]], remove: int, hypernodes: list[dict[str, Any]] | None = None, scope: str = "node"
) -> str:
    out = [
        f"settings: scale-in-priority={s.scale_in_priority} ({PRIORITY_TEXT[s.scale_in_priority]}); "
        f"score-annotation-key={s.score_annotation_key}; enable-scale-in-score={'true' if s.enable_scale_in_score else 'false'}"
        + ("" if s.enable_scale_in_score else " (the reconciler writes nothing; costs below are what it would write)"),
        f"accelerators: {', '.join(s.accelerator_resources)}",
        f"compaction scope: {scope}"
        + (f" (--compaction-scope {s.compaction_scope})" if s.compaction_scope != scope else "")
        + ("; emptiest nodes first; among equally full nodes, the emptiest tier-1 HyperNode's first" if scope == "hypernode" else "; emptiest nodes first"),
    ]
    if s.third_party_types:
        out.append(f"third-party types: {', '.join(s.third_party_types)}")
    for w in workloads:
        out.append("")
        reasons = removal_reasons(w, remove)
        if w.kind == "ModelServing":
            out.append(
                f"{w.label} ({w.namespace}): ServingGroups in removal order "
                "(Kthena: the partition's first groups last; not running first, lower summed cost, higher ordinal)"
            )
            for i, g in enumerate(w.units, 1):
                mark = f"  <- removed: {reasons[i - 1]}" if i <= remove else ""
                protected = "  (holds a remove-last pod)" if any(e.remove_last for e in g.entries) else ""
                protected += "  (protected by the partition)" if g.protected else ""
                state = g.status or ("Running" if g.running else "not running")
                out.append(f"  {i}. {g.name}  sum {g.cost}  {state}{f' ({g.why})' if g.why else ''}{protected}{mark}")
                for role in g.roles:
                    role_state = "" if role.status == "Running" else f", {role.status}" + (f" ({role.why})" if role.why else "")
                    out.append(f"       role {role.name}: sum {role.cost}{role_state}{'  (protected by the partition)' if role.protected else ''}")
                    for e in role.entries:
                        out.append(f"         {e.pod.name}  on {e.pod.node or '-'}  cost {e.planned}{_marks(e)}  ({_note(e)})")
        else:
            out.append(f"{w.label} ({w.namespace}): pods in removal order")
            for i, u in enumerate(w.units, 1):
                e = u.entries[0]
                state = f"{e.pod.phase}{', ready' if e.pod.ready else ', not ready'}"
                mark = f"  <- removed: {reasons[i - 1]}" if i <= remove else ""
                out.append(f"  {i}. {e.pod.name}  on {e.pod.node or '-'}  cost {e.planned}{_marks(e)}  [{state}]  ({_note(e)}){mark}")
    out.append("")
    out.append(f"accelerators per node, before -> after removing the first {remove} of each workload listed:")
    width = max((len(r["node"]) for r in usage), default=4)
    for r in usage:
        free_after = r["allocatable"] - r["after"]
        out.append(
            f"  {r['node'].ljust(width)}  {r['before']:>3}/{r['allocatable']:<3} [{_bar(r['before'], r['allocatable'])}]  ->  "
            f"{r['after']:>3}/{r['allocatable']:<3} [{_bar(r['after'], r['allocatable'])}]  idle {free_after}"
            + ("  (empty)" if r["after"] == 0 and r["before"] > 0 else "")
        )
    if hypernodes:
        out.append("")
        out.append(f"accelerators per HyperNode, before -> after removing the first {remove} of each workload listed:")
        width = max(len(h["hypernode"]) for h in hypernodes)
        for h in hypernodes:
            whole = h["after"] == 0 and h["before"] > 0
            out.append(
                f"  {h['hypernode'].ljust(width)}  tier {h['tier']}  {h['nodes']} nodes  {h['before']:>4}/{h['allocatable']:<4} "
                f"[{_bar(h['before'], h['allocatable'])}]  ->  {h['after']:>4}/{h['allocatable']:<4} [{_bar(h['after'], h['allocatable'])}]  "
                f"idle nodes {h['idle_nodes_before']} -> {h['idle_nodes_after']}" + ("  (empty)" if whole else "")
            )
    return "\n".join(out) + "\n"


# Workload colours: a fixed qualitative palette (Okabe-Ito, colour-blind safe, without its black),
# never white or grey, so no workload can look like an idle, removed (black cross) or freed
# (white, dashed) device. More workloads than colours reuse them in order of appearance.
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#8C6D31", "#7F3C8D", "#11A579")
IDLE, REMOVED, FREED = "#eeeeee", "#000000", "#ffffff"


def to_svg(cluster: Cluster, workloads: list[Workload], usage: list[dict[str, Any]], remove: int, all_nodes: bool = False) -> str:
    """Node map, before (left) and after (right): one square per device, coloured by workload;
    removed pods carry a black cross on the left and are white, dashed, on the right. Only the
    nodes the scale-in frees devices on, unless `all_nodes`. A legend, and one line per removed
    unit with its cost and why it goes first, as text (not only in tooltips)."""
    cell, pad, label_w, per_row_cells, line_h = 10, 6, 130, 16, 13
    rows_in = [r for r in usage if all_nodes or r["removed"]]
    colours: dict[str, str] = {}

    def colour(owner: str) -> str:
        if owner not in colours:
            colours[owner] = PALETTE[len(colours) % len(PALETTE)]
        return colours[owner]

    rows = []
    for r in rows_in:
        node = cluster.nodes[r["node"]]
        cells: list[tuple[str, str, bool]] = []  # (colour, title, removed)
        removed = set(r["removed"])
        for key in sorted(cluster.by_node.get(r["node"], ())):
            p = cluster.pods[key]
            if not p.holds:
                continue
            owner = f"{p.owner[1]} {p.owner[2]}" if p.owner else f"Pod {p.name}"
            cells += [(colour(owner), f"{p.key} ({owner})", key in removed)] * cluster.units_on(p, node)
        rows.append((r, cells[: node.total]))
    lines_per_node = [max(1, -(-r["allocatable"] // per_row_cells)) for r, _ in rows]
    panel_w = label_w + per_row_cells * cell + pad
    removed_lines = [(w, u, why) for w in workloads for u, why in zip(w.units[:remove], removal_reasons(w, remove))]
    legend = [(c, name) for name, c in colours.items()] + [(IDLE, "idle device"), (REMOVED, "removed (before)"), (FREED, "freed (after)")]
    map_h = sum(n * cell + pad for n in lines_per_node) if rows else line_h
    height = 40 + map_h + pad + line_h * (len(legend) + 2 + len(removed_lines))
    texts = [f"{w.label} ({w.namespace}): {u.name}  cost {u.cost}  - {why}" for w, u, why in removed_lines] + [name for _, name in legend]
    width = max(2 * panel_w + 3 * pad, 40 + 6.1 * max((len(x) for x in texts), default=0))  # monospace 10: ~6 px a character
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" font-family="monospace" font-size="10">',
        f'<text x="{pad}" y="14">before</text><text x="{panel_w + 2 * pad}" y="14">after removing the first {remove} of each workload'
        f"{'' if all_nodes else ' (nodes where devices are freed)'}</text>",
    ]
    y = 28
    if not rows:
        svg.append(f'<text x="{pad}" y="{y + 9}">no device is freed on any node</text>')
        y += line_h
    for (r, cells), nlines in zip(rows, lines_per_node):
        for side in (0, 1):
            x0 = pad + side * (panel_w + pad)
            svg.append(f'<text x="{x0}" y="{y + 9}">{html.escape(r["node"][:20])} {r["after" if side else "before"]}/{r["allocatable"]}</text>')
            for i in range(r["allocatable"]):
                cx, cy = x0 + label_w + (i % per_row_cells) * cell, y + (i // per_row_cells) * cell
                svg.append(_device(cx, cy, cell, cells[i] if i < len(cells) else None, after=bool(side)))
        y += nlines * cell + pad
    y += pad
    for c, name in legend:
        mark = (
            _device(pad, y, cell, (c, name, False), after=False)
            if c not in (REMOVED, FREED)
            else _device(pad, y, cell, ("#999999", name, True), after=c == FREED)
        )
        svg.append(mark + f'<text x="{pad + cell + 4}" y="{y + 8}">{html.escape(name)}</text>')
        y += line_h
    y += line_h
    svg.append(f'<text x="{pad}" y="{y}">removed units, with their cost and why they go first:</text>')
    for w, u, why in removed_lines:
        y += line_h
        svg.append(f'<text x="{pad}" y="{y}">{html.escape(f"{w.label} ({w.namespace}): {u.name}  cost {u.cost}  - {why}")}</text>')
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def _device(x: int, y: int, cell: int, held: tuple[str, str, bool] | None, after: bool) -> str:
    size = cell - 1
    if held is None:
        return f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{IDLE}" stroke="#aaaaaa"><title>idle</title></rect>'
    fill, who, gone = held
    if gone and after:
        return (
            f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{FREED}" stroke="#000000" stroke-dasharray="2,1">'
            f"<title>{html.escape('freed: ' + who)}</title></rect>"
        )
    rect = f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{fill}" stroke="#555555"><title>{html.escape(("removed: " if gone else "") + who)}</title></rect>'
    if gone:
        rect += f'<path d="M{x} {y}L{x + size} {y + size}M{x + size} {y}L{x} {y + size}" stroke="{REMOVED}" stroke-width="1.5"/>'
    return rect
