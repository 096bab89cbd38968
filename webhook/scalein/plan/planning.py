"""`python -m webhook plan`: which pods a scale-in would remove, and what that frees.

Read-only: it scores the nodes and pods of a cluster, read live (`--kubeconfig`, the in-cluster
service account, `$KUBECONFIG`, `~/.kube/config`) or from a snapshot file, with the same code as
the reconciler, then orders each workload's pods the way its controller does (reference:
ReplicaSet `ActivePodsWithRanks`, CloneSet's sorter, Kthena's summed Role/ServingGroup cost).

A snapshot is JSON or YAML: `{"nodes": NodeList, "pods": PodList}` (optionally with
`"hypernodes": HyperNodeList`, `"events": EventList` and `"modelservings": ModelServingList`), or
the `List` that `kubectl get nodes,pods,hypernodes,events,modelservings -A -o yaml > snapshot.yaml`
prints (the items together). HyperNodes (Volcano's network topology) decide the compaction scope;
Events tell which pods the reconciler leaves alone because another writer contests their cost;
ModelServings give the `partition` and role counts Kthena's scale-down reads (without them a
ModelServing's groups rank by their pods alone, unprotected)."""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ... import config
from ...config import DataFileError, read_data_file
from ...errors import OperatorError
from ...kthena import MODELSERVING_GROUP, MODELSERVING_KIND, MODELSERVING_VERSION
from ...shapes import as_dict, as_list, only_objects
from .. import topology
from ..cluster import Cluster, WorkloadTypes
from ..settings import PlanSettings, ReconcileSettings, ScoringSettings
from .ranking import Workload, build_plan, contested_pods, hypernode_usage, node_usage
from .rendering import to_json, to_svg, to_text

__all__ = ["SnapshotError", "build_plan", "load_snapshot", "main", "make_cluster", "node_usage"]


class SnapshotError(OperatorError, ValueError):
    """The snapshot file is unusable (the operator's to fix: exit 2, one line)."""


SNAPSHOT_FORMS = (
    '{"nodes": NodeList, "pods": PodList[, "hypernodes": HyperNodeList, "events": EventList, "modelservings": ModelServingList]}, '
    "or the List `kubectl get nodes,pods,hypernodes,events,modelservings -A -o yaml` prints"
)


@dataclass
class Snapshot:
    """What `plan` reads: nodes and pods, and (optional) HyperNodes, Events and ModelServings."""

    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    hypernodes: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    modelservings: list[dict[str, Any]] = field(default_factory=list)


def _items(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return list(only_objects(as_list(as_dict(data.get(key)).get("items"))))


def load_snapshot(path: str) -> Snapshot:
    """The items of a snapshot file (JSON or YAML, either form of SNAPSHOT_FORMS)."""
    try:
        data = read_data_file(path)
    except DataFileError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("nodes"), dict) and isinstance(data.get("pods"), dict):
        return Snapshot(_items(data, "nodes"), _items(data, "pods"), _items(data, "hypernodes"), _items(data, "events"), _items(data, "modelservings"))
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        items = list(only_objects(data["items"]))
        nodes = [i for i in items if i.get("kind") == "Node"]
        pods = [i for i in items if i.get("kind") == "Pod"]
        if nodes or pods:
            return Snapshot(
                nodes,
                pods,
                [i for i in items if i.get("kind") == topology.KIND],
                [i for i in items if i.get("kind") == "Event"],
                [i for i in items if i.get("kind") == MODELSERVING_KIND],
            )
    raise SnapshotError(f"{path}: must be {SNAPSHOT_FORMS}")


def read_live(kubeconfig: str) -> Snapshot:
    """Nodes and pods from the API server, a page of 500 at a time; a refused or failed request is
    one line naming what to grant or fix (exit 2), as for every command. HyperNodes, the
    contested-cost Events and ModelServings are optional: a cluster without the CRD, or a reader
    not allowed to list them, plans without them (as the reconciler does)."""
    from kubernetes import client as kube_client
    from kubernetes.client.exceptions import ApiException

    from ...kube.client import load_api_client
    from ...kube.errors import ApiCall, KubeAccessError, describe_api_error
    from ...kube.responses import json_body

    api = load_api_client(kubeconfig)
    core = kube_client.CoreV1Api(api)
    custom = kube_client.CustomObjectsApi(api)
    out: dict[str, list[dict[str, Any]]] = {}
    calls: tuple[tuple[str, Any, dict[str, Any]], ...] = (
        ("nodes", core.list_node, {}),
        ("pods", core.list_pod_for_all_namespaces, {}),
        ("hypernodes", lambda **kw: custom.list_cluster_custom_object(topology.GROUP, topology.VERSION, topology.PLURAL, **kw), {}),
        ("events", core.list_event_for_all_namespaces, {"field_selector": "reason=DeletionCostContested"}),
        ("modelservings", lambda **kw: custom.list_cluster_custom_object(MODELSERVING_GROUP, MODELSERVING_VERSION, "modelservings", **kw), {}),
    )
    for resource, call, extra in calls:
        items: list[dict[str, Any]] = []
        token = None
        while True:
            try:
                kwargs: dict[str, Any] = {"limit": 500, "_preload_content": False, "_request_timeout": 60, **extra}
                if token:
                    kwargs["_continue"] = token
                page = json_body(call(**kwargs))
            except ApiException as exc:
                if resource in ("hypernodes", "events", "modelservings") and exc.status in (403, 404):
                    break  # optional (see above)
                raise KubeAccessError(describe_api_error(exc, ApiCall("list", resource), api.configuration.host)) from None
            except Exception as exc:  # the client raises many types; all become one line
                raise KubeAccessError(describe_api_error(exc, ApiCall("list", resource), api.configuration.host)) from None
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                break
        out[resource] = items
    return Snapshot(out["nodes"], out["pods"], out["hypernodes"], out["events"], out["modelservings"])


def make_cluster(
    settings: ScoringSettings,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    hypernodes: list[dict[str, Any]] | None = None,
    modelservings: list[dict[str, Any]] | None = None,
) -> Cluster:
    """Offline there is no discovery: a third-party resource matches an owner kind by its plural."""
    cluster = Cluster(settings, WorkloadTypes(guess=settings.third_party()))
    cluster.replace_nodes(nodes)
    cluster.replace_hypernodes(hypernodes or [])
    cluster.replace_pods(pods)
    cluster.replace_modelservings(modelservings or [])
    return cluster


def _select(workloads: list[Workload], wanted: str | None) -> list[Workload]:
    if not wanted:
        return workloads
    ns, _, name = wanted.rpartition("/")

    def hit(w: Workload) -> bool:
        names = {w.name, w.label.split(" ")[1]}
        return name in names and (not ns or ns == w.namespace)

    return [w for w in workloads if hit(w)]


def check_remove(workloads: list[Workload], remove: int) -> None:
    """`--remove K` beyond a workload's units would silently remove all of it: refuse instead."""
    short = [w for w in workloads if len(w.units) < remove]
    if short:
        unit = lambda w: "ServingGroups" if w.kind == "ModelServing" else "pods"  # noqa: E731
        listed = "; ".join(f"{w.label} ({w.namespace}) has {len(w.units)} {unit(w)}" for w in short[:5])
        more = f" and {len(short) - 5} more" if len(short) > 5 else ""
        raise OperatorError(f"--remove {remove} is more than some workloads have: {listed}{more}; lower --remove or pick one with --workload")


def main(argv: Sequence[str]) -> int:
    """Rank the cluster's workloads, print them (text or JSON), and draw the SVG if asked."""
    parser = argparse.ArgumentParser(prog="python -m webhook plan", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--snapshot", default=None, metavar="FILE", help=f"read the cluster from FILE (JSON or YAML: {SNAPSHOT_FORMS}) instead of the API server"
    )
    parser.add_argument(
        "--kubeconfig",
        default="",
        metavar="FILE",
        help="read nodes and pods live through this kubeconfig (default without --snapshot: in-cluster, then $KUBECONFIG, then ~/.kube/config)",
    )
    parser.add_argument(
        "--remove",
        type=int,
        default=1,
        metavar="K",
        help="units each workload loses (pods; ServingGroups for a ModelServing); default 1; more than a workload has is an error",
    )
    parser.add_argument("--workload", default=None, metavar="[NS/]NAME", help="only this workload (Deployment, ReplicaSet, ModelServing or third-party name)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    parser.add_argument("--svg", default=None, metavar="FILE", help="also draw the node map before and after to FILE")
    parser.add_argument("--svg-all-nodes", action="store_true", help="draw every accelerator node, not only those the scale-in frees devices on")
    config.add_arguments(parser, PlanSettings)
    args = parser.parse_args(list(argv))
    if args.remove < 0:
        parser.error("--remove must be 0 or more")
    if args.snapshot and args.kubeconfig:
        parser.error("give --snapshot or --kubeconfig, not both")
    # the reconciler's own config file works here too: its scoring settings apply, the rest is ignored
    settings = config.load(PlanSettings, args, shared_with=ReconcileSettings).scoring
    # a short-lived process building millions of small objects: the cyclic GC would only
    # re-scan them over and over (several times slower on a large snapshot) and find nothing to free
    gc.disable()
    # SnapshotError, KubeAccessError: exit 2 with their line (webhook/__main__.py)
    snap = load_snapshot(args.snapshot) if args.snapshot else read_live(args.kubeconfig)
    cluster = make_cluster(settings, snap.nodes, snap.pods, snap.hypernodes, snap.modelservings)
    # a snapshot's Events count whatever their age (it was taken then); live ones within the window
    contested = contested_pods(snap.events, settings.contest_backoff_seconds, None if args.snapshot else time.time())
    workloads = _select(build_plan(cluster, contested), args.workload)
    if args.workload and not workloads:
        raise OperatorError(f"no scored workload named {args.workload!r} in {args.snapshot or 'the cluster'}")
    check_remove(workloads, args.remove)
    usage = node_usage(cluster, workloads, args.remove)
    per_hn = hypernode_usage(cluster, usage)
    scope = "hypernode" if cluster.by_hypernode else "node"
    if args.output == "json":
        sys.stdout.write(orjson.dumps(to_json(settings, workloads, usage, args.remove, per_hn, scope), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(to_text(settings, workloads, usage, args.remove, per_hn, scope))
    if args.svg:
        _write_svg(args.svg, to_svg(cluster, workloads, usage, args.remove, all_nodes=args.svg_all_nodes))
    return 0


def _write_svg(path: str, svg: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(svg)
    except OSError as exc:
        raise OperatorError(f"--svg {path}: cannot write: {exc.strerror or exc}; give a file in a folder that exists and can be written") from None
