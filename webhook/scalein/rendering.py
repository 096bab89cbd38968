"""`plan`'s output: the ranked workloads (ranking.py) as text for people, JSON for tools, and an
SVG map of the accelerator nodes before and after the scale-in."""

from __future__ import annotations

import html
import zlib
from typing import Any

from .cluster import Cluster
from .ranking import Entry, Unit, Workload
from .settings import ScoringSettings


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
                for role in g.roles:
                    out.append(f"       role {role.name}: sum {role.cost}")
                    for e in role.entries:
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
