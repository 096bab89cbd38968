"""Fuzz the real server over TLS and report what a malicious or broken client can do to it.

Starts `python -m webhook serve` (2 workers, lookups off), then sends N requests over keep-alive
TLS connections from several threads: the recorded reviews with 1-3 fields replaced by odd
values (wrong types, nulls, huge numbers and strings, deep nesting, unicode digits, invented
resource names) or removed, plus every minimal input in tests/fixtures/fuzz-findings.

`--mode mixed` (issue 19) adds the input classes of fuzzinputs.py to those mutated reviews:
random bytes, truncated JSON, bodies cut off mid-request (the client hangs up), wrong methods,
paths and content types, chunked bodies, bodies near and past the size limit, deep nesting, big
strings, many keys and invalid UTF-8.

Prints: requests sent, HTTP 5xx, reviews answered with code 500, transport errors, worker
restarts (worker pids that changed), and each worker's RSS read after the warm-up and every
`--sample` requests, while every client waits (no body in flight): the series, each worker's
growth to the end and to its highest reading, and whether it has plateaued (the second half of
the run adds under a quarter of the target). Targets (issues 11 and 19): 0, 0, 0, 0 restarts,
each worker's highest reading under +10%. `--only CLASS` sends one input class alone and
`--server-env` runs the server with e.g. MALLOC_ARENA_MAX=2: how the cause of a growth is found.

Usage: python benchmarks/fuzz.py [--mode reviews|mixed] [--only CLASS] [--requests 100000] [--warmup 10000]
       [--sample 5000] [--threads 4] [--seed 1] [--server-env NAME=VALUE]
       (issue 19's figure: --mode mixed --warmup 6000 --requests 66000)
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support import (
    free_port,  # noqa: E402
    processes,  # noqa: E402
)
from support.procfs import status_kib, worker_pids  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzzinputs import CLASSES, Probe, mixed_probe, send_cut  # noqa: E402

ADMISSION = REPO / "tests" / "fixtures" / "admission"
FINDINGS = REPO / "tests" / "fixtures" / "fuzz-findings"


def odd_value(rng: random.Random, depth: int = 0) -> object:
    pick = rng.randrange(16)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 2**63 - 1, -(2**63), 10**30, 1.5e308, -0.0])
    if pick == 3:
        return rng.choice(["", "1E", "1Ei", "1i", "-1", "*/²", "0 0 * * * ١", "a" * 5000, "é" * 300])
    if pick == 4:
        return "9" * rng.choice([400, 4400, 5000]) + rng.choice(["", "%", "Gi"])
    if pick == 5:
        return "1e" + "9" * rng.choice([20, 5000])
    if pick == 6:  # deep nesting, up to the parser's own limit
        levels = rng.choice([50, 99, 101, 300, 990])
        node: object = "x"
        for _ in range(levels):
            node = [node]
        return node
    if pick == 7:
        return f"invented-{rng.randrange(10**9)}"
    if pick < 12 and depth < 2:
        return [odd_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    if depth < 2:
        return {rng.choice(["a", "name", "kind", "0", ""]): odd_value(rng, depth + 1) for _ in range(rng.randrange(3))}
    return rng.random()


def paths(node: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, prefix + (i,))
    return out


def mutate(rng: random.Random, doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        where = [p for p in paths(doc) if p]
        path = rng.choice(where)
        parent: object = doc
        for key in path[:-1]:
            parent = parent[key]  # type: ignore[index]
        if isinstance(parent, dict) and rng.random() < 0.3:
            del parent[path[-1]]
        else:
            parent[path[-1]] = odd_value(rng)  # type: ignore[index]
    return doc


def encode(doc: object) -> bytes:
    sys.setrecursionlimit(10000)  # the client may build what the server must refuse
    return json.dumps(doc).encode()


# ---- the server's memory -------------------------------------------------------------------


def rss_kib(pids: list[int]) -> int:
    """The processes' resident memory together; a process that has gone counts 0."""
    total = 0
    for pid in pids:
        try:
            total += status_kib(pid, "VmRSS")
        except FileNotFoundError:
            pass
    return total


class RssSeries:
    """Each worker's RSS, read every `every` requests from the warm-up on: two readings (start and
    end) hid that one worker grew +26% while the total grew +7%, and say nothing of a plateau.
    Every client thread stops at a reading (a barrier), so that it measures what the workers keep,
    not the multi-MiB bodies in flight at that moment."""

    def __init__(self, server_pid: int, warmup: int, every: int):
        self.server_pid, self.warmup, self.every = server_pid, warmup, every
        self.points: list[tuple[int, dict[int, int]]] = []  # (requests sent, {worker pid: KiB})

    def due(self, sent: int) -> bool:
        return sent == self.warmup or (sent > self.warmup and (sent - self.warmup) % self.every == 0)

    def sample(self, sent: int) -> None:
        time.sleep(0.3)  # the last answers leave, the hung-up connections are closed
        self.points.append((sent, {pid: rss_kib([pid]) for pid in worker_pids(self.server_pid)}))
        print(
            f"  {sent:>8} requests: " + ", ".join(f"{kib / 1024:.1f}" for kib in self.points[-1][1].values()) + " MiB", file=sys.stderr, flush=True
        )  # progress; the table comes at the end

    def report(self, target: float = 10.0) -> list[str]:
        """The series (MiB), then per worker: growth from the warm-up to the end and to its highest
        reading, and over the second half (plateaued when under a quarter of the target). The
        verdict takes the highest reading: memory that comes back later was still held."""
        if not self.points:
            return ["RSS                 no reading (fewer requests than the warm-up)"]
        pids = sorted({pid for _, row in self.points for pid in row})
        lines = ["RSS per worker (MiB)", "  requests  " + "".join(f"{pid:>10}" for pid in pids)]
        for sent, row in self.points:
            lines.append(f"  {sent:>8}  " + "".join(f"{row[p] / 1024:>10.1f}" if p in row else f"{'-':>10}" for p in pids))
        worst = -100.0
        for pid in pids:
            series = [kib for _, row in self.points if pid in row for kib in [row[pid]]]
            first, last, mid, peak = series[0], series[-1], series[len(series) // 2], max(series)
            growth, late, high = (last - first) / first * 100, (last - mid) / first * 100, (peak - first) / first * 100
            worst = max(worst, high)
            flat = "plateaued" if late < target / 4 else "still growing"
            lines.append(
                f"  worker {pid:<8} {first / 1024:.1f} -> {last / 1024:.1f} MiB ({growth:+.1f}%), highest {peak / 1024:.1f} "
                f"({high:+.1f}%); second half {late:+.1f}%: {flat}"
            )
        total_first, total_last = sum(self.points[0][1].values()), sum(self.points[-1][1].values())
        lines.append(f"  all workers        {total_first / 1024:.1f} -> {total_last / 1024:.1f} MiB ({(total_last - total_first) / total_first * 100:+.1f}%)")
        lines.append(f"  worst worker       {worst:+.1f}% at its highest reading ({'under' if worst < target else 'OVER'} the {target:.0f}% target)")
        return lines


# ---- the run --------------------------------------------------------------------------------


def start_server(port: int, extra_env: list[str]) -> subprocess.Popen:
    certs = tempfile.mkdtemp(prefix="fuzz-certs-")
    env = {**os.environ, "PYTHONPATH": str(REPO), **dict(kv.split("=", 1) for kv in extra_env)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webhook",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--certs-dir",
            certs,
            "--kube-lookups",
            "off",
            "--log-level",
            "error",
            "--workers",
            "2",
            "--metrics-port",
            "0",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_ready(port: int, ctx: ssl.SSLContext) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return True
        except OSError:
            time.sleep(0.2)
    return False


def prober(args: argparse.Namespace, reviews: list, findings: list) -> Callable[[random.Random, int], Probe]:
    """What the n-th request of a client thread sends: `--only` one class, or the mode's mix."""
    only = {fn.__name__: fn for fn, _ in CLASSES}.get(args.only or "")

    def review(rng: random.Random) -> Probe:
        name, doc = rng.choice(reviews)
        path = "/mutate" if name.endswith("-mutating") else "/validate"
        return Probe("POST", path, {"Content-Type": "application/json"}, encode(mutate(rng, doc)))

    def finding(rng: random.Random) -> Probe:
        path, body = rng.choice(findings)
        return Probe("POST", path, {"Content-Type": "application/json"}, body, kind="finding")

    def probe(rng: random.Random, n: int) -> Probe:
        if only is not None:
            return only(rng, reviews)
        if args.only == "reviews":
            return review(rng)
        if args.only == "findings" or (n % 50 == 0 and findings):
            return finding(rng)
        if args.mode == "mixed" and rng.random() < 0.5:
            return mixed_probe(rng, reviews)
        return review(rng)

    return probe


def send(conn: http.client.HTTPSConnection, probe: Probe) -> tuple[bool, bool, bool]:
    """One request on a kept-alive connection: (HTTP 5xx, review code 500, connection to renew)."""
    if probe.chunked:
        conn.request(
            probe.method,
            probe.path,
            body=iter([probe.body[i : i + 65536] for i in range(0, len(probe.body), 65536)]),
            headers=probe.headers,
            encode_chunked=True,
        )
    else:
        conn.request(probe.method, probe.path, body=probe.body if probe.body or probe.method != "GET" else None, headers=probe.headers)
    resp = conn.getresponse()
    data = resp.read()
    review_500 = False
    if resp.status == 200 and probe.path in ("/mutate", "/validate") and probe.method == "POST":
        answer = json.loads(data).get("response") or {}
        review_500 = (answer.get("status") or {}).get("code") == 500
    return resp.status >= 500, review_500, resp.getheader("Connection", "").lower() == "close" or bool(resp.will_close)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=10_000)
    parser.add_argument(
        "--sample", type=int, default=5000, help="read each worker's RSS every this many requests after the warm-up (a multiple of --threads, as --warmup)"
    )
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--mode",
        choices=("reviews", "mixed"),
        default="reviews",
        help="reviews: mutated recorded reviews and the findings; mixed: every input class of fuzzinputs.py too",
    )
    parser.add_argument(
        "--only", choices=["reviews", "findings"] + [fn.__name__ for fn, _ in CLASSES], help="send one input class alone (to find which one grows memory)"
    )
    parser.add_argument(
        "--server-env", action="append", default=[], metavar="NAME=VALUE", help="extra environment for the server, e.g. MALLOC_ARENA_MAX=2 (repeatable)"
    )
    args = parser.parse_args(argv)

    reviews = [(p.stem, json.loads(p.read_text())) for p in sorted(ADMISSION.glob("*.json"))]
    findings = [(json.loads((FINDINGS / f"{p.stem}.json").read_text())["path"], p.read_bytes()) for p in sorted(FINDINGS.glob("min-*.body"))]
    port = free_port()
    server = start_server(port, args.server_env)
    ctx = ssl.create_default_context(cafile=None)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if not wait_ready(port, ctx):
        server.kill()
        print("server did not start", file=sys.stderr)
        return 2

    def stop_server_and_exit(signum: int, _frame: Any) -> None:
        # A client stopped by a signal takes its server with it: left behind, a server (and its
        # workers, busy with queued large bodies) kept burning CPU for minutes and skewed every
        # figure measured after it on this machine.
        processes.stop(server, grace=10)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop_server_and_exit)
    signal.signal(signal.SIGINT, stop_server_and_exit)

    counts = {"sent": 0, "http_5xx": 0, "review_500": 0, "transport_errors": 0}
    lock = threading.Lock()
    seen_workers: set[int] = set(worker_pids(server.pid))
    rss = RssSeries(server.pid, args.warmup, args.sample)
    next_probe = prober(args, reviews, findings)
    at_reading = threading.Barrier(args.threads, action=lambda: rss.sample(counts["sent"]))
    started = time.monotonic()

    def client(index: int, total: int) -> None:
        rng = random.Random(args.seed * 1000 + index)
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        for n in range(total):
            probe = next_probe(rng, n)
            bad_status = review_500 = False
            if probe.cut is not None:
                send_cut(port, ctx, probe)  # a client that hangs up mid-body: no answer to judge
            else:
                try:
                    bad_status, review_500, renew = send(conn, probe)
                except (OSError, http.client.HTTPException, ValueError):
                    with lock:
                        counts["transport_errors"] += 1
                    renew = True
                if renew:
                    conn.close()
                    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
            with lock:
                counts["sent"] += 1
                counts["http_5xx"] += bad_status
                counts["review_500"] += review_500
                if counts["sent"] % 1000 == 0:
                    seen_workers.update(worker_pids(server.pid))
            if rss.due((n + 1) * args.threads):
                conn.close()  # idle and closed: the reading sees no connection mid-request
                at_reading.wait()
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        conn.close()

    per_thread = args.requests // args.threads
    threads = [threading.Thread(target=client, args=(i, per_thread)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    if not rss.points or rss.points[-1][0] != counts["sent"]:
        rss.sample(counts["sent"])
    seen_workers.update(worker_pids(server.pid))
    processes.stop(server)

    print(f"input               {args.only or args.mode}, seed {args.seed}" + "".join(f", {kv}" for kv in args.server_env))
    print(f"requests            {counts['sent']}  ({elapsed:.0f} s, {counts['sent'] / elapsed:.0f}/s)")
    print(f"HTTP 5xx            {counts['http_5xx']}")
    print(f"reviews code 500    {counts['review_500']}")
    print(f"transport errors    {counts['transport_errors']}")
    print(f"worker restarts     {len(seen_workers) - 2}")
    print("\n".join(rss.report()))
    print("targets             0 / 0 / 0 / 0 restarts / each worker's RSS growth under 10% after the warm-up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
