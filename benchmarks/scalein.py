"""Scale-in scoring benchmark (prints figures; not a test).

Synthetic cluster: 5,000 nodes x 8 NPUs, 40,000 NPU pods (1 NPU each; 10 % pending, the rest
bound at random where a device is free), 110,000 CPU-only pods; the nodes, in order, form
tier-1 HyperNodes of 40 (125 of them). Measures, for --scope (auto: by HyperNode, since there
are HyperNodes): cache build, a full scoring pass (costs + decisions), one pod event (cache
update + re-score of what it touched + decisions) through the reconciler's own code path, the
writes one event causes, peak memory, and `plan` run as a subprocess on the same snapshot.

Then compaction: under each scope, remove the cheapest N scored pods for several N, and count the
whole nodes and whole HyperNodes that become idle. Equal costs are taken in an order unrelated to
the topology (a hash of the node name), as a controller's own tie-breaks are; by name would
favour node scope here, where consecutive names share a HyperNode. Two fills: the one above (every pod on a random node with a
free device), and one where each HyperNode gets its own random fill between 40 % and 100 %
(workloads land HyperNode by HyperNode, as a topology-aware scheduler places gangs).

    .venv/bin/python benchmarks/scalein.py [--nodes 5000] [--npu-pods 40000] [--other-pods 110000] [--scope auto]
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib

import orjson

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from webhook.config import compose
from webhook.scalein import costs, decisions  # noqa: E402
from webhook.scalein.cluster import Cluster, WorkloadTypes  # noqa: E402
from webhook.scalein.plan import planning  # noqa: E402
from webhook.scalein.reconcile.events import Changed  # noqa: E402
from webhook.scalein.reconcile.health import Metrics  # noqa: E402
from webhook.scalein.reconcile.worker import Worker  # noqa: E402
from webhook.scalein.reconcile.writequeue import WriteQueue  # noqa: E402
from webhook.scalein.settings import COST_KEY, RECORD_KEY, ReconcileSettings, ScoringSettings  # noqa: E402

NPU = "huawei.com/Ascend910"
HN_SIZE = 40  # nodes per tier-1 HyperNode


def make_hypernodes(names: list[str]) -> list[dict]:
    return [
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": f"hn-{i // HN_SIZE:04d}"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in names[i : i + HN_SIZE]]},
        }
        for i in range(0, len(names), HN_SIZE)
    ]


def make_snapshot(n_nodes: int, n_npu: int, n_other: int, seed: int = 7, per_hypernode_fill: bool = False) -> dict:
    rnd = random.Random(seed)
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i:05d}", "labels": {"accelerator": "huawei-Ascend910"}},
            "status": {"allocatable": {"cpu": "190", "memory": "1528Gi", "pods": "110", NPU: "8"}},
        }
        for i in range(n_nodes)
    ]
    free = {n["metadata"]["name"]: 8 for n in nodes}
    names = list(free)
    pods = []
    # per_hypernode_fill: each HyperNode takes pods up to its own random share of its devices
    # (its own generator, so the placement of the other fill stays as it was)
    shares = random.Random(seed + 1)
    room = {i: int(HN_SIZE * 8 * shares.uniform(0.4, 1.0)) for i in range(0, n_nodes, HN_SIZE)}

    def base(name: str, ns: str, owner_kind: str, owner: str, api_version: str = "apps/v1") -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": f"uid-{name}",
                "resourceVersion": "1",
                "creationTimestamp": "2026-11-01T00:00:00Z",
                "labels": {"app": owner},
                "ownerReferences": [{"apiVersion": api_version, "kind": owner_kind, "name": owner, "uid": f"uid-{owner}", "controller": True}],
            },
            "spec": {"containers": [{"name": "main", "resources": {}}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T00:01:00Z"}]},
        }

    for i in range(n_npu):
        if i % 50 < 45:
            p = base(f"llm-{i // 20}-{i:06d}", f"team-{i % 40}", "ReplicaSet", f"llm-{i // 20}-abc")
        else:
            p = base(f"ms-{i // 10}-{i % 10}-decode-0-0", "serving", "ModelServing", f"ms-{i // 10}", "workload.serving.volcano.sh/v1alpha1")
            p["metadata"]["labels"].update(
                {
                    "modelserving.volcano.sh/group-name": f"ms-{i // 10}-{i % 10}",
                    "modelserving.volcano.sh/role": "decode",
                    "modelserving.volcano.sh/role-id": "decode-0",
                }
            )
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "8", NPU: "1"}, "limits": {NPU: "1"}}
        if i % 10 == 9:
            p["status"] = {"phase": "Pending"}
        else:
            for _ in range(20):
                k = rnd.randrange(n_nodes)
                n = names[k]
                hn = k - k % HN_SIZE
                if free[n] and (not per_hypernode_fill or room[hn]):
                    free[n] -= 1
                    if per_hypernode_fill:
                        room[hn] -= 1
                    p["spec"]["nodeName"] = n
                    break
            else:
                p["status"] = {"phase": "Pending"}
        pods.append(p)
    for i in range(n_other):
        p = base(f"svc-{i:06d}", f"apps-{i % 200}", "ReplicaSet", f"svc-{i // 30}-xyz")
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m", "memory": "1Gi"}}
        p["spec"]["nodeName"] = names[i % n_nodes]
        pods.append(p)
    return {
        "nodes": {"kind": "List", "apiVersion": "v1", "items": nodes},
        "pods": {"kind": "List", "apiVersion": "v1", "items": pods},
        "hypernodes": {"kind": "List", "apiVersion": "v1", "items": make_hypernodes(names)},
    }


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--npu-pods", type=int, default=40000)
    ap.add_argument("--other-pods", type=int, default=110000)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--scope", choices=("node", "hypernode", "auto"), default="auto", help="compaction scope of the timed figures")
    ap.add_argument("--only-compaction", action="store_true", help="skip the timed figures")
    ap.add_argument("--no-compaction", action="store_true", help="skip the compaction tables")
    args = ap.parse_args()
    if not args.only_compaction:
        timed(args)
    for per_hn in () if args.no_compaction else (False, True):
        snap = make_snapshot(args.nodes, args.npu_pods, 0, per_hypernode_fill=per_hn)
        compaction(snap, "each HyperNode filled to its own random share (40-100 %)" if per_hn else "every pod on a random node")


def compaction(snap: dict, fill: str, steps: tuple[int, ...] = (250, 500, 1000, 2000, 4000, 8000, 12000, 16000, 20000, 24000, 28000)) -> None:
    """Remove the cheapest N scored pods under each scope; count whole nodes and HyperNodes freed.
    A third order, not the product's, is shown for comparison: HyperNode first (its emptiness
    step and slot), then the node, the order costs.py explains it did not take."""
    nodes, pods, hns = snap["nodes"]["items"], snap["pods"]["items"], snap["hypernodes"]["items"]
    freed: dict[str, list[tuple[int, int]]] = {}
    for scope in ("node", "hypernode", "hypernode-first"):
        c = planning.make_cluster(ScoringSettings(compaction_scope="node" if scope != "hypernode" else scope), nodes, pods, hns)
        desired = c.desired_all()
        tie = {n: zlib.crc32(n.encode()) for n in c.nodes}
        if scope == "hypernode-first":
            rank = {hn: costs.hypernode_rank(*c.hypernode_usage(hn), hn) for hn in c.topology.members}
            leaf = c.topology.leaf_of
            order = sorted(desired, key=lambda k: (-rank.get(leaf.get(c.pods[k].node, ""), 0), desired[k], tie[c.pods[k].node], k))
        else:
            order = sorted(desired, key=lambda k: (desired[k], tie[c.pods[k].node], k))
        used = {n: c.usage(n)[0] for n in c.nodes}
        members = dict(c.topology.members)
        now, done, rows = dict(used), 0, []
        for n_remove in steps:
            for key in order[done:n_remove]:
                p = c.pods[key]
                now[p.node] -= c.units_on(p, c.nodes[p.node])
            done = max(done, n_remove)
            whole_nodes = sum(1 for n in used if used[n] > 0 and now[n] == 0)
            whole_hns = sum(1 for ms in members.values() if any(used[n] for n in ms) and all(now[n] == 0 for n in ms))
            rows.append((whole_nodes, whole_hns))
        freed[scope] = rows
    bound = sum(1 for p in pods if p["spec"].get("nodeName"))
    print(f"\ncompaction, {fill}: {len(nodes)} nodes x 8 NPUs, {bound} NPU pods bound, {len(hns)} HyperNodes of {HN_SIZE} nodes")
    print(
        "  remove N   whole nodes freed: node / hypernode scope (ratio)   whole HyperNodes: node / hypernode   "
        "(HyperNode-first order, not used: nodes (ratio), HyperNodes)"
    )
    for n_remove, (nn, nh), (hn_n, hn_h), (f_n, f_h) in zip(steps, freed["node"], freed["hypernode"], freed["hypernode-first"]):
        ratio = f"{hn_n / nn:.2f}" if nn else "-"
        first = f"{f_n / nn:.2f}" if nn else "-"
        print(f"  {n_remove:>8}   {nn:>6} / {hn_n:<6} ({ratio:>4})                          {nh:>4} / {hn_h:<4}           ({f_n:>5} ({first:>4}), {f_h:>3})")


def timed(args: argparse.Namespace) -> None:
    """The scoring figures: cache, full pass, one event, memory, `plan`."""
    t = time.perf_counter()
    snap = make_snapshot(args.nodes, args.npu_pods, args.other_pods)
    print(
        f"synthetic cluster: {args.nodes} nodes x 8 NPUs, {args.npu_pods} NPU pods, {args.other_pods} other pods "
        f"(generated in {time.perf_counter() - t:.1f} s; peak RSS so far {rss_mib():.0f} MiB)"
    )
    settings = compose(ReconcileSettings, enable_scale_in_score=True, health_port=0, compaction_scope=args.scope)

    # the worker alone, handed its cache and queues: no API client (writes refused as not leader)
    rec = Worker(settings, Cluster(settings.scoring, WorkloadTypes()), queue.Queue(), WriteQueue(), Metrics(), may_write=lambda: False)
    c = rec.cluster
    rss_before = rss_mib()
    t = time.perf_counter()
    c.replace_hypernodes(snap["hypernodes"]["items"])
    c.replace_nodes(snap["nodes"]["items"])
    c.replace_pods(snap["pods"]["items"])
    print(f"cache build (decode {len(c.pods)} pods once):        {time.perf_counter() - t:8.3f} s  (scope {'hypernode' if c.by_hypernode else 'node'})")

    runs = []
    for _ in range(3):
        t = time.perf_counter()
        desired = c.desired_all()
        changes = sum(1 for k, v in desired.items() if c.cost_action(k, v).action != decisions.NONE)
        runs.append(time.perf_counter() - t)
    print(f"full scoring pass ({len(desired)} costs + decisions):   {min(runs):8.3f} s  (best of 3; median {statistics.median(runs):.3f} s)")
    print(f"  pods needing a write on a fresh cluster:        {changes}")

    # converge: pretend every scored pod already carries our cost
    for k, v in desired.items():
        p = c.pods[k]
        p.annotations = {COST_KEY: str(v), RECORD_KEY: str(v)}
    raw = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in snap["pods"]["items"]}
    for k, v in desired.items():
        raw[k]["metadata"]["annotations"] = {COST_KEY: str(v), RECORD_KEY: str(v)}
    rec.synced = {"nodes": True, "pods": True, "hypernodes": True}
    rec.reconcile_nodes(set(c.by_node))

    # one pod event through the reconciler's path: apply + re-score the touched node + decisions
    rnd = random.Random(3)
    bound = [k for k in desired]
    times, writes = [], []
    for _ in range(args.events):
        key = rnd.choice(bound)
        pod = raw[key]
        if key not in c.pods:
            continue
        node = c.pods[key].node
        t = time.perf_counter()
        touched = rec.apply(Changed("DELETED", "pods", pod, 0.0))
        need = 0
        for n in touched:
            for k, v in c.desired_on(n).items():
                if c.cost_action(k, v).action != decisions.NONE:
                    need += 1
        times.append(time.perf_counter() - t)
        writes.append(need)
        # converge what the event touched, put the pod back as it was, converge again (not timed)
        for n in touched:
            for k, v in c.desired_on(n).items():
                c.pods[k].annotations = {COST_KEY: str(v), RECORD_KEY: str(v)}
        back = rec.apply(Changed("ADDED", "pods", pod, 0.0))
        for n in back | {node}:
            for k, v in c.desired_on(n).items():
                c.pods[k].annotations = {COST_KEY: str(v), RECORD_KEY: str(v)}
    times_ms = sorted(x * 1000 for x in times)
    print(
        f"one pod event (delete NPU pod, re-score its node):  median {statistics.median(times_ms):.3f} ms, "
        f"p99 {times_ms[int(len(times_ms) * 0.99) - 1]:.3f} ms, max {times_ms[-1]:.3f} ms over {len(times_ms)} events"
    )
    per_node = [len(c.by_node.get(n, ())) for n in c.by_node]
    print(
        f"writes caused by one pod event:                   mean {statistics.mean(writes):.2f}, max {max(writes)} "
        f"(only pods on that node; NPU pods per node <= 8, all pods per node ~{statistics.mean(per_node):.0f})"
    )

    # the same through Worker.reconcile_nodes (decisions and the write queue; writes refused as not leader)
    key = bound[0]
    t = time.perf_counter()
    rec.apply(Changed("MODIFIED", "pods", raw[key], 0.0))
    rec.reconcile_nodes({c.pods[key].node})
    print(f"Worker.apply + reconcile_nodes for one event:       {(time.perf_counter() - t) * 1000:8.3f} ms")
    print(f"peak RSS: {rss_mib():.0f} MiB (of which the cache and scoring add ~{rss_mib() - rss_before:.0f} MiB over the raw objects)")

    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as fh:
        fh.write(orjson.dumps(snap))
        path = fh.name
    size = os.path.getsize(path) / 2**20
    del snap, raw
    try:
        for output in ("text", "json"):
            t = time.perf_counter()
            r = subprocess.run(
                [sys.executable, "-m", "webhook", "plan", "--snapshot", path, "--remove", "1", "--output", output],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=os.path.join(os.path.dirname(__file__), ".."),
            )
            el = time.perf_counter() - t
            print(f"plan --output {output} on the snapshot ({size:.0f} MiB):   {el:8.3f} s  (exit {r.returncode})")
            if r.returncode:
                print(r.stderr.decode()[-2000:])
    finally:
        os.unlink(path)


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
