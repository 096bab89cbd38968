"""Scale-in convergence benchmark: how soon the costs that matter are written on a fresh cluster,
and how long a pod event waits meanwhile (prints figures; not a test; about 15 minutes, 15.5 on
the 2-core development VM, most of it the synchronous reconciler's drain).

The cluster of benchmarks/scalein.py (5,000 nodes x 8 NPUs, 40,000 NPU pods of which 36,000 are
bound and need a cost, 110,000 CPU pods) is served by the fake API server (tests/fakes/apiserver.py:
real HTTP, list+watch, guarded JSON Patch) in a process of its own, each pod PATCH taking
--write-latency-ms as a busy control plane's round trip would. `python -m webhook reconcile`
runs against it as a subprocess, as deployed, at --scoring-qps 100. Once the first cost is
written, a new 1-NPU pod is placed every --event-interval seconds while the backlog drains, each
on another of the fullest nodes that still fit it (where Volcano's binpack puts it). From the API server's record of every patch it applied:

- the time until the 10% cheapest pods (the ones a scale-in removes first; pods on nodes an event
  touched left out) hold their final cost, also as a share of the whole drain (target: 10%);
- event-to-write latency: pod placed -> its cost applied, p50 / p99 / max (target: p99 < 2 s);
- time to converge: reconciler started -> every pod holds its final cost;
- the reconciler's peak RSS (VmHWM), and for this revision its own view (/metrics and the
  convergence log line).

The same run measures the reconciler as it was before the write queue, on an identical fresh
cluster: the parent of the commit that added webhook/scalein/reconcile/writequeue.py, exported with
`git archive` (or --baseline-rev). Figures are printed side by side.

    .venv/bin/python benchmarks/scalein_convergence.py [--nodes 5000] [--npu-pods 40000] [--other-pods 110000]
        [--qps 100] [--write-latency-ms 10] [--event-interval 1] [--only new|baseline]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(HERE)]

from fakes.apiserver import FakeAPI  # noqa: E402
from scalein import NPU, make_snapshot  # noqa: E402  (benchmarks/scalein.py: the same synthetic cluster)
from support import (
    free_port,  # noqa: E402
    processes,  # noqa: E402
)
from support.procfs import status_kib  # noqa: E402

from webhook.scalein.plan import planning  # noqa: E402
from webhook.scalein.settings import COST_KEY, ScoringSettings  # noqa: E402

# ---- the fake API server, in a process of its own -------------------------------------------------


def cost_in(ops: list[dict]) -> str | None:
    for op in ops:
        if op.get("op") == "add" and op.get("path") == "/metadata/annotations":
            return op["value"].get(COST_KEY)
        if op.get("op") == "add" and str(op.get("path", "")).endswith("pod-deletion-cost"):
            return op["value"]
    return None


def fake_server(conn: Any, snapshot: dict, latency: float, kubeconfig: str) -> None:
    """Serve `snapshot` and answer the benchmark's commands over `conn` until told to stop."""
    api = FakeAPI(snapshot["nodes"]["items"], snapshot["pods"]["items"]).start()
    api.write_latency = latency
    api.write_kubeconfig(Path(kubeconfig))
    expected: dict[str, str] = {}
    conn.send(api.url)
    while True:
        cmd, arg = conn.recv()
        if cmd == "add":
            placed = time.monotonic()
            api.add_pod(arg)
            conn.send(placed)
        elif cmd == "count":
            conn.send(len(api.patches))
        elif cmd == "expect":
            expected = arg
            conn.send(None)
        elif cmd == "matched":
            with api.lock:
                conn.send(sum(1 for k, v in expected.items() if ((api.pods.get(k) or {}).get("metadata", {}).get("annotations") or {}).get(COST_KEY) == v))
        elif cmd == "log":
            with api.lock:
                conn.send([(t, key, cost_in(ops)) for t, (key, ops) in zip(api.patch_times, api.patches)])
        elif cmd == "stop":
            api.close()
            conn.send(None)
            return


# ---- one reconciler against one fresh cluster ------------------------------------------------------


def scrape(port: int) -> str:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return ""


def sample(text: str, name: str) -> float | None:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def new_pod(i: int, node: str) -> dict:
    name = f"llm-new-{i:04d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "team-new",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-11-02T00:00:00Z",
            "labels": {"app": "llm-new"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-new-abc", "uid": "uid-llm-new", "controller": True}],
        },
        "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {"requests": {"cpu": "8", NPU: "1"}, "limits": {NPU: "1"}}}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-02T00:01:00Z"}]},
    }


def run_variant(
    label: str, src: Path, snapshot: dict, placements: list[tuple[str, dict]], expected: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    """Serve a fresh copy of `snapshot`, run the reconciler from `src`, place the pods of
    `placements` one per event interval once the drain has begun, and wait for `expected`."""
    ctx = mp.get_context("fork")
    conn, child_conn = ctx.Pipe()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        server = ctx.Process(target=fake_server, args=(child_conn, snapshot, args.write_latency_ms / 1000, kubeconfig), daemon=True)
        server.start()
        conn.recv()

        def call(cmd: str, arg: Any = None) -> Any:
            conn.send((cmd, arg))
            return conn.recv()

        port = free_port()
        log_path = Path(tmp) / "reconciler.log"
        env = dict(os.environ, PYTHONPATH=str(src))
        cmd = [
            sys.executable,
            "-m",
            "webhook",
            "reconcile",
            "--kubeconfig",
            kubeconfig,
            "--enable-scale-in-score",
            "true",
            "--scoring-qps",
            str(args.qps),
            "--health-host",
            "127.0.0.1",
            "--health-port",
            str(port),
            "--resync-seconds",
            "0",
        ]
        started = time.monotonic()
        with open(log_path, "wb") as log_file:
            rec = subprocess.Popen(cmd, cwd=src, env=env, stdout=subprocess.DEVNULL, stderr=log_file)
        placed: dict[str, float] = {}
        backlog_max = oldest_max = 0.0
        done_at = None
        try:
            first = None
            while first is None and time.monotonic() - started < args.timeout:
                if rec.poll() is not None:
                    raise SystemExit(f"{label}: the reconciler exited {rec.returncode}: {log_path.read_text()[-2000:]}")
                if call("count"):
                    first = time.monotonic()
                time.sleep(0.05)
            assert first is not None, f"{label}: nothing written within {args.timeout} s"
            print(
                f"  {label}: first write {first - started:.1f} s after start; placing {len(placements)} pods, one every {args.event_interval:g} s", flush=True
            )
            next_event, i, next_check, next_scrape = first + args.event_interval, 0, 0.0, 0.0
            while time.monotonic() - started < args.timeout:
                now = time.monotonic()
                if i < len(placements) and now >= next_event:
                    key, pod = placements[i]
                    placed[key] = call("add", pod)
                    i += 1
                    next_event += args.event_interval
                    if i == len(placements):
                        call("expect", expected)
                if now >= next_scrape:
                    metrics = scrape(port)
                    backlog_max = max(backlog_max, sample(metrics, "servinggate_scalein_write_backlog") or 0.0)
                    oldest_max = max(oldest_max, sample(metrics, "servinggate_scalein_write_backlog_oldest_seconds") or 0.0)
                    next_scrape = now + 5
                if i == len(placements) and now >= next_check:
                    matched = call("matched")
                    if matched == len(expected):
                        done_at = now
                        break
                    next_check = now + 1
                    if int(now - started) % 30 == 0:
                        print(f"  {label}: {now - started:.0f} s, {matched} of {len(expected)} pods hold their final cost", flush=True)
                time.sleep(0.01)
            rss = status_kib(rec.pid, "VmHWM") / 1024 or float("nan")
            metrics = scrape(port)
        finally:
            processes.stop(rec)
            log = call("log")
            call("stop")
            server.join(30)
        converged_line = next((line for line in log_path.read_text().splitlines() if "full pass converged" in line), "")
    return {
        "label": label,
        "started": started,
        "first": first,
        "done": done_at,
        "placed": placed,
        "log": log,
        "rss": rss,
        "metrics": metrics,
        "backlog_max": backlog_max,
        "oldest_max": oldest_max,
        "converged_line": converged_line,
    }


# ---- figures ---------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered))) - 1))] if ordered else float("nan")


def figures(run: dict[str, Any], initial: dict[str, int], expected: dict[str, str], touched_nodes: set[str], node_of: dict[str, str]) -> dict[str, Any]:
    log = run["log"]
    last_write: dict[str, tuple[float, str | None]] = {}
    first_write: dict[str, float] = {}
    for t, key, cost in log:
        last_write[key] = (t, cost)
        first_write.setdefault(key, t)
    held = [k for k, v in expected.items() if last_write.get(k, (0.0, None))[1] == v]
    converged = len(held) == len(expected)
    start, first = run["started"], run["first"]
    end = max(last_write[k][0] for k in held) if converged else float("nan")
    candidates = sorted((k for k in initial if node_of[k] not in touched_nodes), key=lambda k: (int(expected[k]), k))
    cheapest = candidates[: len(initial) // 10]
    t10 = max(last_write[k][0] for k in cheapest) if all(k in last_write and last_write[k][1] == expected[k] for k in cheapest) else float("nan")
    latencies = [first_write[k] - t for k, t in run["placed"].items() if k in first_write]
    return {
        "converged": converged,
        "writes": len(log),
        "held": len(held),
        "first_write_s": first - start,
        "converge_s": end - start,
        "drain_s": end - first,
        "cheapest10_s": t10 - first,
        "cheapest10_share": (t10 - first) / (end - first) if converged else float("nan"),
        "events": len(run["placed"]),
        "events_written": len(latencies),
        "event_p50": pct(latencies, 0.50),
        "event_p99": pct(latencies, 0.99),
        "event_max": max(latencies) if latencies else float("nan"),
        "rss": run["rss"],
    }


def print_table(rows: list[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> None:
    def line(name: str, fmt: Any) -> None:
        print(f"  {name:<58}" + "".join(f"{fmt(f):>22}" for _, f in rows))

    print()
    print(f"  {'':<58}" + "".join(f"{label:>22}" for label, _ in rows))
    line("pods holding their final cost / to write", lambda f: f"{f['held']} / {f['held'] if f['converged'] else '?'}")
    line("patches applied by the API server", lambda f: f"{f['writes']}")
    line("first write after start", lambda f: f"{f['first_write_s']:.1f} s")
    line("10% cheapest hold their final cost (after the first write)", lambda f: f"{f['cheapest10_s']:.1f} s")
    line("  ... as a share of the drain (target <= 10%)", lambda f: f"{100 * f['cheapest10_share']:.1f} %")
    line("write rate over the drain", lambda f: f"{f['writes'] / f['drain_s']:.1f} /s" if f["converged"] else "-")
    line("converged (start -> every final cost written)", lambda f: f"{f['converge_s']:.1f} s" if f["converged"] else "not converged")
    line(f"events written / placed (one every {args.event_interval:g} s)", lambda f: f"{f['events_written']} / {f['events']}")
    line("event -> write p50", lambda f: f"{f['event_p50']:.3f} s")
    line("event -> write p99 (target < 2 s)", lambda f: f"{f['event_p99']:.3f} s")
    line("event -> write max", lambda f: f"{f['event_max']:.3f} s")
    line("reconciler peak RSS", lambda f: f"{f['rss']:.0f} MiB")


def baseline_source(rev: str | None, into: Path) -> str:
    if rev is None:
        added = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--", "webhook/scalein/reconcile/writequeue.py"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if not added:
            raise SystemExit("no commit adds webhook/scalein/reconcile/writequeue.py here: pass --baseline-rev")
        rev = added[-1] + "^"
    archive = subprocess.run(["git", "archive", rev, "webhook"], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--npu-pods", type=int, default=40000)
    ap.add_argument("--other-pods", type=int, default=110000)
    ap.add_argument("--qps", type=int, default=100)
    ap.add_argument("--write-latency-ms", type=float, default=10.0, help="simulated API server time per pod PATCH")
    ap.add_argument("--event-interval", type=float, default=1.0, help="seconds between placed pods during the drain")
    ap.add_argument("--events", type=int, default=None, help="pods placed (default: enough to span 90%% of the expected drain)")
    ap.add_argument("--timeout", type=float, default=900.0, help="give up on one reconciler after this many seconds")
    ap.add_argument("--baseline-rev", default=None, help="revision of today's reconciler (default: before the write queue)")
    ap.add_argument("--only", choices=("new", "baseline"), default=None)
    args = ap.parse_args()

    t = time.perf_counter()
    snapshot = make_snapshot(args.nodes, args.npu_pods, args.other_pods)
    nodes, pods = snapshot["nodes"]["items"], snapshot["pods"]["items"]
    initial = planning.make_cluster(ScoringSettings(), nodes, pods).desired_all()
    node_of = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"].get("nodeName", "") for p in pods}
    free = {n["metadata"]["name"]: 8 for n in nodes}
    for p in pods:
        if "nodeName" in p["spec"] and NPU in p["spec"]["containers"][0]["resources"].get("requests", {}):
            free[p["spec"]["nodeName"]] -= 1
    count = args.events if args.events is not None else int(0.9 * len(initial) / args.qps / args.event_interval)
    # where Volcano's binpack would place a 1-NPU pod: on the fullest nodes that still fit one
    rnd = random.Random(11)
    targets = sorted((n for n, f in free.items() if f > 0), key=lambda n: (free[n], rnd.random()))[:count]
    placements = []
    for i, name in enumerate(targets):
        p = new_pod(i, name)
        key = f"team-new/{p['metadata']['name']}"
        node_of[key] = name
        placements.append((key, p))
    final = planning.make_cluster(ScoringSettings(), nodes, pods + [p for _, p in placements]).desired_all()
    expected = {k: str(v) for k, v in final.items()}
    print(
        f"fresh cluster: {args.nodes} nodes x 8 NPUs, {args.npu_pods} NPU pods ({len(initial)} need a cost), {args.other_pods} other pods; "
        f"generated in {time.perf_counter() - t:.0f} s"
    )
    print(
        f"API server: the fake one in its own process, {args.write_latency_ms:g} ms per pod PATCH; reconciler at --scoring-qps {args.qps}; "
        f"{count} new pods placed during the drain on distinct nodes ({sum(free[n] == 1 for n in targets)} of them then full)",
        flush=True,
    )

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        variants: list[tuple[str, Path]] = []
        if args.only != "baseline":
            variants.append(("write queue (this tree)", REPO))
        if args.only != "new":
            rev = baseline_source(args.baseline_rev, Path(tmp))
            variants.append((f"synchronous ({rev})", Path(tmp)))
        for label, src in variants:
            print(f"running {label} ...", flush=True)
            run = run_variant(label, src, snapshot, placements, expected, args)
            rows.append((label, figures(run, initial, expected, set(targets), node_of)))
            if run["converged_line"]:
                print(f"  {label} logged: {run['converged_line'][:300]}")
            if run["metrics"]:
                count_ = sample(run["metrics"], "servinggate_scalein_event_to_write_seconds_count")
                within = sample(run["metrics"], r'servinggate_scalein_event_to_write_seconds_bucket\{le="2.0"\}')
                if count_:
                    print(
                        f"  {label} /metrics: write backlog peaked at >= {run['backlog_max']:.0f} pods, its oldest entry at "
                        f">= {run['oldest_max']:.0f} s (sampled every 5 s); event-caused writes {count_:.0f}, "
                        f"{100 * (within or 0) / count_:.1f}% within 2 s"
                    )
    print_table(rows, args)


if __name__ == "__main__":
    main()
