"""Fuzz the real server over TLS and report what a malicious or broken client can do to it.

Starts `python -m webhook serve` (2 workers, lookups off), then sends N requests over keep-alive
TLS connections from several threads: the recorded reviews with 1-3 fields replaced by odd
values (wrong types, nulls, huge numbers and strings, deep nesting, unicode digits, invented
resource names) or removed, plus every minimal input in tests/fixtures/fuzz-findings.

`--mode mixed` (issue 19) adds the input classes of fuzzinputs.py to those mutated reviews:
random bytes, truncated JSON, bodies cut off mid-request (the client hangs up), wrong methods,
paths and content types, chunked bodies, bodies near and past the size limit, deep nesting, big
strings, many keys and invalid UTF-8; it reports the RSS of each worker as well.

Prints: requests sent, HTTP 5xx, reviews answered with code 500, transport errors, worker
restarts (worker pids that changed), and the workers' total RSS after a fixed warm-up and at the
end. Targets (issues 11 and 19): 0, 0, 0, RSS growth under 10%.

Usage: python benchmarks/fuzz.py [--mode reviews|mixed] [--requests 100000] [--warmup 10000] [--threads 4] [--seed 1]
       (issue 19's figure: --mode mixed --warmup 6000 --requests 66000)
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import os
import random
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support import free_port  # noqa: E402
from support.procfs import status_kib, worker_pids  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzzinputs import Probe, mixed_probe, send_cut  # noqa: E402

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


# ---- the server ------------------------------------------------------------------------------


def rss_kib(pids: list[int]) -> int:
    """The processes' resident memory together; a process that has gone counts 0."""
    total = 0
    for pid in pids:
        try:
            total += status_kib(pid, "VmRSS")
        except FileNotFoundError:
            pass
    return total


def each_rss(server_pid: int) -> dict[int, int]:
    return {pid: rss_kib([pid]) for pid in worker_pids(server_pid)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=("reviews", "mixed"), default="reviews",
                        help="reviews: mutated recorded reviews and the findings; mixed: every input class of fuzzinputs.py too")
    args = parser.parse_args(argv)

    reviews = [(p.stem, json.loads(p.read_text())) for p in sorted(ADMISSION.glob("*.json"))]
    findings = [(json.loads((FINDINGS / f"{p.stem}.json").read_text())["path"], p.read_bytes()) for p in sorted(FINDINGS.glob("min-*.body"))]
    port = free_port()
    certs = tempfile.mkdtemp(prefix="fuzz-certs-")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(
        [sys.executable, "-m", "webhook", "serve", "--host", "127.0.0.1", "--port", str(port), "--certs-dir", certs,
         "--kube-lookups", "off", "--log-level", "error", "--workers", "2", "--metrics-port", "0"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    ctx = ssl.create_default_context(cafile=None)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        server.kill()
        print("server did not start", file=sys.stderr)
        return 2

    counts = {"sent": 0, "http_5xx": 0, "review_500": 0, "transport_errors": 0}
    lock = threading.Lock()
    seen_workers: set[int] = set(worker_pids(server.pid))
    rss_warm: list[int] = []
    rss_each_warm: dict[int, int] = {}
    started = time.monotonic()

    def worker(index: int, total: int) -> None:
        rng = random.Random(args.seed * 1000 + index)
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        for n in range(total):
            probe: Probe | None = None
            if n % 50 == 0 and findings:
                path, body = rng.choice(findings)
            elif args.mode == "mixed" and rng.random() < 0.5:
                probe = mixed_probe(rng, reviews)
            else:
                name, doc = rng.choice(reviews)
                path = "/mutate" if name.endswith("-mutating") else "/validate"
                body = encode(mutate(rng, doc))
            if probe is not None and probe.cut is not None:
                send_cut(port, ctx, probe)  # a client that hangs up mid-body: no answer to judge
                with lock:
                    counts["sent"] += 1
                continue
            if probe is None:
                probe = Probe("POST", path, {"Content-Type": "application/json"}, body)
            try:
                if probe.chunked:
                    conn.request(probe.method, probe.path, body=iter([probe.body[i:i + 65536] for i in range(0, len(probe.body), 65536)]),
                                 headers=probe.headers, encode_chunked=True)
                else:
                    conn.request(probe.method, probe.path, body=probe.body if probe.body or probe.method != "GET" else None, headers=probe.headers)
                resp = conn.getresponse()
                data = resp.read()
                bad_status = resp.status >= 500
                review_500 = False
                if resp.status == 200 and probe.path in ("/mutate", "/validate") and probe.method == "POST":
                    answer = json.loads(data).get("response") or {}
                    review_500 = (answer.get("status") or {}).get("code") == 500
                if resp.getheader("Connection", "").lower() == "close" or resp.will_close:
                    conn.close()
                    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
            except (OSError, http.client.HTTPException, ValueError):
                bad_status, review_500 = False, False
                with lock:
                    counts["transport_errors"] += 1
                conn.close()
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
            with lock:
                counts["sent"] += 1
                counts["http_5xx"] += bad_status
                counts["review_500"] += review_500
                if counts["sent"] == args.warmup:
                    rss_warm.append(rss_kib(worker_pids(server.pid)))
                    rss_each_warm.update(each_rss(server.pid))
                if counts["sent"] % 5000 == 0:
                    seen_workers.update(worker_pids(server.pid))
        conn.close()

    per_thread = args.requests // args.threads
    threads = [threading.Thread(target=worker, args=(i, per_thread)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    final_workers = worker_pids(server.pid)
    rss_end = rss_kib(final_workers)
    rss_each_end = each_rss(server.pid)
    seen_workers.update(final_workers)
    server.terminate()
    server.wait(timeout=30)

    restarts = len(seen_workers) - 2
    warm = rss_warm[0] if rss_warm else 0
    growth = (rss_end - warm) / warm * 100 if warm else float("nan")
    print(f"requests            {counts['sent']}  ({elapsed:.0f} s, {counts['sent'] / elapsed:.0f}/s)")
    print(f"HTTP 5xx            {counts['http_5xx']}")
    print(f"reviews code 500    {counts['review_500']}")
    print(f"transport errors    {counts['transport_errors']}")
    print(f"worker restarts     {restarts}")
    print(f"workers' RSS        {warm / 1024:.1f} MiB after {args.warmup} requests, {rss_end / 1024:.1f} MiB at the end ({growth:+.1f}%)")
    for pid, end in sorted(rss_each_end.items()):
        start = rss_each_warm.get(pid)
        if start:
            print(f"  worker {pid:<8}    {start / 1024:.1f} -> {end / 1024:.1f} MiB ({(end - start) / start * 100:+.1f}%)")
    print("targets             0 / 0 / 0 / 0 restarts / RSS growth under 10%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
