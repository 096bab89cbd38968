"""`python -m webhook plan`: which pods a scale-in would remove, and what that frees.

Offline and read-only: it scores a `{"nodes": NodeList, "pods": PodList}` snapshot with the same
code as the reconciler, then orders each workload's pods the way its controller does (reference:
ReplicaSet `ActivePodsWithRanks`, CloneSet's sorter, Kthena's summed Role/ServingGroup cost)."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from .. import config
from ..errors import OperatorError
from .cluster import Cluster, WorkloadTypes
from .ranking import Workload, build_plan, node_usage
from .rendering import to_json, to_svg, to_text
from .settings import ReconcileSettings, ScoringSettings

__all__ = ["SnapshotError", "build_plan", "load_snapshot", "main", "make_cluster", "node_usage"]


class SnapshotError(OperatorError, ValueError):
    """The snapshot file is unusable (the operator's to fix: exit 2, one line)."""


def load_snapshot(path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The node and pod items of a `{"nodes": NodeList, "pods": PodList}` file."""
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


def make_cluster(settings: ScoringSettings, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Cluster:
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
    """Rank the snapshot's workloads, print them (text or JSON), and draw the SVG if asked."""
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
    nodes, pods = load_snapshot(args.snapshot)  # SnapshotError: exit 2 with its line (webhook/__main__.py)
    cluster = make_cluster(settings, nodes, pods)
    workloads = _select(build_plan(cluster), args.workload)
    if args.workload and not workloads:
        raise OperatorError(f"no scored workload named {args.workload!r} in {args.snapshot}")
    usage = node_usage(cluster, workloads, args.remove)
    if args.output == "json":
        sys.stdout.write(orjson.dumps(to_json(settings, workloads, usage, args.remove), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(to_text(settings, workloads, usage, args.remove))
    if args.svg:
        with open(args.svg, "w", encoding="utf-8") as fh:
            fh.write(to_svg(cluster, usage, args.remove))
    return 0
