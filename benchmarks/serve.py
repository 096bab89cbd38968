"""Throughput and latency of the admission server, against baselines measured in the same run.

Servers (gunicorn with the product's options, 2 workers):
  product/TLS     the real app, POST /mutate with the recorded Kthena pod that gets patched
  baseline/TLS    the same worker + Flask answering allow-all (parse body, echo uid)
  product/HTTP    the real app over plain HTTP (benchmark only: the product never serves HTTP;
                  gunicorn's gthread worker, as our worker serves TLS only)
  baseline/HTTP   allow-all over plain HTTP (gthread)
Load: `wrk` (16 keep-alive connections) for peak reviews/s, then half of that peak for p50/p99,
offered twice: by `wrk` with random (exponential) pauses between a connection's requests, which
is how independent `kubectl apply`s and controllers arrive, and by `hey -q`, whose connections
tick in lockstep and so send bursts of 16 at once (a harsher, less realistic shape). Both are
Debian packages (apt-get install wrk hey).

Placement: with 2, 4 and 16 keep-alive connections (`--placement 2,4,16`), rounds interleaved
across the counts; each round reports how the connections are spread over the workers (counted
from /proc while wrk runs), its throughput, the server's cores busy and each worker's share of the
CPU; then the worst and best round. Two yardsticks from the same run say how much of a round-to-round
difference the machine itself makes: a Go net/http allow-all webhook (benchmarks/allowall, one
process, so no placement question; needs `apt-get install golang-go`) run in the same rounds, and
a fixed CPU loop timed between rounds. `--placement-only` runs just that part.

Versus (`--versus-only`, also part of a full run): ours, the Go allow-all and agnhost, the Go
webhook of the Kubernetes e2e tests (its `webhook` mode, `/mutating-pods`, same certificate and
body; it runs $AGNHOST, or ~/k8s/bin/agnhost when that is unset, and skips saying so when there is none), in interleaved
rounds: CPU per review and throughput, ours/agnhost as the median of per-round ratios and the
worst round, each server's p99 latency (median and worst round), and the bytes our server logged per review. `--versus-tree DIR` adds another checkout of
this repository (say main's, to see what a change is worth) to the same rounds.

Usage: python benchmarks/serve.py [--seconds 3] [--rounds 5] [--connections 16] [--threads N]
                                  [--placement 2,4,16] [--placement-only] [--placement-seconds 8]
                                  [--versus-only] [--versus-rounds 6] [--versus-seconds 8] [--versus-tree DIR]
Prints figures; it passes or fails nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # support.procfs: the server's workers and connections from /proc

from support import (
    free_port,  # noqa: E402
    processes,  # noqa: E402
)
from support.procfs import connections_per_worker as held_per_worker  # noqa: E402
from support.procfs import cpu_seconds, worker_pids

POD = REPO / "tests/fixtures/admission/pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json"


# ---- server side (run in a child process) -------------------------------------------------------


def run_server(kind: str, tls: bool, port: int, certs: str, workers: int, gunicorn_ctx: bool = False, threads: int = 0, placement: str = "ours") -> None:
    sys.path.insert(0, str(REPO))
    from webhook.config import compose
    from webhook.servesettings import ServeSettings
    from webhook.serving.metricsport import prepare_metrics_dir

    settings = compose(
        ServeSettings,
        host="127.0.0.1",
        port=port,
        certs_dir=Path(certs),
        workers=workers,
        kube_lookups="off",
        log_level="info",
        metrics_port=0,
        **({"threads": threads} if threads else {}),
    )
    prepare_metrics_dir(settings)
    from webhook import logs
    from webhook.certs.source import CertificateSource
    from webhook.server.app import create_app
    from webhook.server.launch import WebhookServer, gunicorn_options
    from webhook.serving import metrics

    logs.configure("info")  # the product default: denials and audit findings only, per review
    certificates = CertificateSource(settings.listener.certs_dir, on_load=metrics.certificate_loaded)
    if kind == "product":
        app: Any = create_app(settings, certificates=certificates)
    else:
        import orjson
        from flask import Flask, Response, request

        from webhook.server.site import InFlask, Site

        def allow_all():
            doc = orjson.loads(request.get_data())
            body = {"apiVersion": doc["apiVersion"], "kind": "AdmissionReview", "response": {"uid": doc["request"]["uid"], "allowed": True}}
            return Response(orjson.dumps(body), mimetype="application/json")

        app = Site(Flask("allow-all", static_folder=None), {("POST", "/mutate"): InFlask(allow_all)})  # our worker, Flask in a thread

    options = gunicorn_options(settings, certificates)
    options["loglevel"] = "warning"
    if not tls or gunicorn_ctx or placement == "shared":
        # Our worker serves TLS only, from the certificate source: plain HTTP, gunicorn's own TLS
        # context per connection and the design before (every worker accepting from one socket)
        # are gunicorn's gthread worker, a WSGI server: the product's Site behind a WSGI adapter of
        # this benchmark's own, the baseline's Flask application as it is.
        options["worker_class"] = "gthread"
        app = as_wsgi(app) if kind == "product" else app.flask
        if tls:
            options.update(certfile=str(Path(certs) / "tls.crt"), keyfile=str(Path(certs) / "tls.key"))
    if placement == "reuseport":  # SO_REUSEPORT on the listening socket
        options["reuse_port"] = True
    WebhookServer(app, options).run()


def as_wsgi(site: Any) -> Any:
    """The Site as a WSGI application, for gunicorn's gthread worker (benchmark only: the product's
    worker hands the Site the request it parsed): the request rebuilt from the environ, the answer
    settled in the calling thread."""
    from http import HTTPStatus

    from webhook.server.http1 import HttpRequest
    from webhook.serving.answer import settled

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        target = environ.get("RAW_URI") or environ["PATH_INFO"]
        fields = [(b"Content-Type", environ.get("CONTENT_TYPE", "").encode("latin-1"))]
        answer = settled(site.answer(HttpRequest(environ["REQUEST_METHOD"].encode(), target.encode("latin-1"), (1, 1), fields, body, True)))
        start_response(
            f"{answer.code} {HTTPStatus(answer.code).phrase}",
            [("Content-Type", answer.content_type), ("Content-Length", str(len(answer.body))), *answer.fields],
        )
        return [answer.body]

    return app


# ---- driver -------------------------------------------------------------------------------------


def wait_port(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on {port} did not start")


WRK_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("{body}", "rb"); wrk.body = f:read("*a"); f:close()
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %.3f %.3f %d\\n", summary.requests, summary.duration,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


def wrk(url: str, lua: str, seconds: int, connections: int) -> dict[str, float]:
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", lua, url], capture_output=True, text=True, check=True).stdout
    m = re.search(r"RESULT (\d+) (\d+) ([\d.]+) ([\d.]+) (\d+)", out)
    if not m:
        raise RuntimeError(out)
    reqs, dur_us = int(m[1]), int(m[2])
    return {"rps": reqs / (dur_us / 1e6), "p50": float(m[3]), "p99": float(m[4]), "errors": int(m[5]), "requests": reqs}


PACED_LUA = """
local counter = 1
setup = function(thread)
  thread:set("seed", counter)
  counter = counter + 1
end
init = function(args)
  math.randomseed(seed * 7919)
end
delay = function()
  return -math.log(1 - math.random()) * {mean_ms}
end
"""


def wrk_paced(url: str, lua: str, seconds: int, rate: float, connections: int, tmp: Path) -> dict[str, float]:
    """Open-ish loop: each connection pauses an exponential time (mean connections/rate) between
    requests, so arrivals look like independent clients rather than synchronized ticks."""
    script = tmp / "paced.lua"
    script.write_text(Path(lua).read_text() + PACED_LUA.replace("{mean_ms}", f"{connections / rate * 1000:.3f}"))
    return wrk(url, str(script), seconds, connections)


def connections_per_worker(master: int, port: int) -> list[int]:
    """Established connections to `port` held by each worker of a gunicorn master, most first."""
    return sorted(held_per_worker(master, port).values(), reverse=True)


def machine_probe() -> float:
    """Seconds of CPU a fixed pure-Python loop takes in this process. On a shared VM the same loop
    varies by tens of percent from one second to the next; the spread of this probe over a run is
    the noise floor any throughput comparison between rounds sits on."""
    started = time.process_time()
    total = 0
    for i in range(1_000_000):
        total += i * i
    return time.process_time() - started


def wrk_with_spread(url: str, lua: str, seconds: int, connections: int, master: int, port: int) -> dict:
    """One wrk run; halfway through it, how its connections sit on the workers; over the whole run,
    how the server's CPU split between the workers (a worker with no connections does no work)."""
    workers = worker_pids(master)
    before = {pid: cpu_seconds(pid) for pid in workers}
    with tempfile.TemporaryFile("w+") as out:
        started = time.monotonic()
        proc = subprocess.Popen(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", lua, url], stdout=out, text=True)
        time.sleep(seconds / 2)
        spread = connections_per_worker(master, port)
        proc.wait()
        elapsed = time.monotonic() - started
        out.seek(0)
        text = out.read()
    used = [cpu_seconds(pid) - before[pid] for pid in workers]
    m = re.search(r"RESULT (\d+) (\d+) ([\d.]+) ([\d.]+) (\d+)", text)
    if not m:
        raise RuntimeError(text)
    return {
        "rps": int(m[1]) / (int(m[2]) / 1e6),
        "p50": float(m[3]),
        "errors": int(m[5]),
        "spread": spread,
        "cores": sum(used) / elapsed,
        "shares": sorted((u / max(sum(used), 1e-9) for u in used), reverse=True),
    }


def start_go_baseline(certs: Path, tmp: Path) -> tuple[subprocess.Popen, int] | None:
    """benchmarks/allowall (Go's net/http, allow-all) on a free port, or None without a Go
    toolchain (apt-get install golang-go)."""
    if shutil.which("go") is None:
        return None
    binary = tmp / "allowall"
    subprocess.run(
        ["go", "build", "-o", str(binary), "main.go"],
        cwd=REPO / "benchmarks/allowall",
        check=True,
        env={**os.environ, "GO111MODULE": "off", "GOCACHE": str(tmp / "gocache")},
    )
    port = free_port()
    proc = subprocess.Popen(
        [str(binary), "-addr", f"127.0.0.1:{port}", "-cert", str(certs / "tls.crt"), "-key", str(certs / "tls.key")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, port


def wrk_go(url: str, lua: str, seconds: int, connections: int, pid: int) -> dict:
    before = cpu_seconds(pid)
    started = time.monotonic()
    result = wrk(url, lua, seconds, connections)
    return {**result, "cores": (cpu_seconds(pid) - before) / (time.monotonic() - started)}


def placement(args: argparse.Namespace, certs: Path, lua: Path) -> None:
    """Rounds interleave the connection counts (2, 4, 16, 2, 4, 16, ...) and, within each, the
    product and the Go baseline, so that a slow minute on the VM lands on all of them alike
    instead of on one block of rounds."""
    counts = [int(c) for c in args.placement.split(",")]
    seconds = args.placement_seconds
    print(
        f"placement: product over TLS, {args.workers} workers, {args.rounds} rounds of {seconds}s per connection count,"
        f" interleaved (design: {args.placement_design})"
    )
    print("  per round: spread = connections per worker (from /proc halfway through), rev/s, server cores busy, each worker's share of the server's CPU")
    proc, port = start_server("product", True, certs, args, "--placement-design", args.placement_design)
    go = start_go_baseline(certs, lua.parent)
    runs: dict[int, list[dict]] = {c: [] for c in counts}
    go_runs: dict[int, list[dict]] = {c: [] for c in counts}
    probes = []
    try:
        wait_port(port)
        url = f"https://127.0.0.1:{port}/mutate"
        wrk(url, str(lua), 2, max(counts))  # warm-up
        if go:
            wait_port(go[1])
            go_url = f"https://127.0.0.1:{go[1]}/mutate"
            wrk(go_url, str(lua), 2, max(counts))
        for _ in range(args.rounds):
            for c in counts:
                probes.append(machine_probe())
                runs[c].append(wrk_with_spread(url, str(lua), seconds, c, proc.pid, port))
                if go:
                    go_runs[c].append(wrk_go(go_url, str(lua), seconds, c, go[0].pid))
            probes.append(machine_probe())
    finally:
        for server in (proc, go[0] if go else None):
            if server:
                processes.stop(server)
    for c in counts:
        rounds = runs[c]
        even = all(max(r["spread"]) - min(r["spread"]) <= 1 and sum(r["spread"]) == c for r in rounds)
        lo, hi = min(r["rps"] for r in rounds), max(r["rps"] for r in rounds)
        print(f"  {c:>3} conns")
        for i, r in enumerate(rounds):
            shares = "/".join(f"{s * 100:.0f}%" for s in r["shares"])
            line = f"        {'/'.join(map(str, r['spread'])):>5}  {r['rps']:6.0f} rev/s  {r['cores']:.2f} cores  CPU split {shares}"
            if go:
                g = go_runs[c][i]
                line += f"   | Go baseline {g['rps']:6.0f} rev/s  {g['cores']:.2f} cores"
            print(line)
        print(
            f"        worst/best {lo:.0f}/{hi:.0f} rev/s = {lo / hi:.2f}x (target >= 0.80); "
            f"every round within one of even: {'yes' if even else 'NO'}; errors {sum(r['errors'] for r in rounds)}"
        )
        if go:
            glo, ghi = min(g["rps"] for g in go_runs[c]), max(g["rps"] for g in go_runs[c])
            ratios = [r["rps"] / g["rps"] for r, g in zip(rounds, go_runs[c])]
            print(
                f"        Go baseline, same rounds: worst/best {glo:.0f}/{ghi:.0f} rev/s = {glo / ghi:.2f}x (the machine's noise floor); "
                f"product/Go per round {min(ratios):.2f}x-{max(ratios):.2f}x, worst/best of that {min(ratios) / max(ratios):.2f}x"
            )
    if not go:
        print("  (no Go baseline: apt-get install golang-go to measure benchmarks/allowall in the same rounds)")
    fastest, slowest = min(probes), max(probes)
    print(
        f"  machine probe (a fixed CPU loop, timed before and after every round, same run): "
        f"{fastest * 1000:.0f}-{slowest * 1000:.0f} ms, slowest/fastest speed = {fastest / slowest:.2f}x"
    )


def server_cpu_seconds(pid: int) -> float:
    """User+system CPU of a gunicorn master and its workers. Steadier than wall-clock throughput
    when the VM's neighbours are busy, though not immune: the same work costs more CPU then too."""
    try:
        workers = worker_pids(pid)
    except OSError:
        workers = []
    return sum(cpu_seconds(p) for p in [pid, *workers])


def start_server(
    kind: str, tls: bool, certs: Path, args: argparse.Namespace, *extra: str, log: Any = subprocess.DEVNULL, tree: Path | None = None
) -> tuple[subprocess.Popen, int]:
    """This script again, as a server child on a free port (see run_server); its log to `log`.
    `tree`: another checkout of the repository, whose own script (and .venv, if it has one) serves."""
    port = free_port()
    python, script = sys.executable, __file__
    if tree is not None:
        script = str(tree / "benchmarks" / "serve.py")
        if (tree / ".venv" / "bin" / "python").exists():
            python = str(tree / ".venv" / "bin" / "python")
    proc = subprocess.Popen(
        [
            python,
            script,
            "--serve",
            kind,
            "--tls",
            "on" if tls else "off",
            "--port",
            str(port),
            "--certs",
            str(certs),
            "--workers",
            str(args.workers),
            "--threads",
            str(args.threads),
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    return proc, port


AGNHOST_MISSING = """  agnhost not found: skipped. It is looked for at $AGNHOST, or at ~/k8s/bin/agnhost when that is unset: the Go
  webhook of the Kubernetes e2e tests (its `webhook` mode), a binary this repository does not provide."""


def start_agnhost(certs: Path) -> tuple[subprocess.Popen, int] | None:
    """agnhost's webhook mode (the Kubernetes e2e tests' Go webhook) on a free port with our
    certificate, or None when there is no binary ($AGNHOST, else ~/k8s/bin/agnhost)."""
    binary = Path(os.environ.get("AGNHOST") or Path.home() / "k8s/bin/agnhost")
    if not os.access(binary, os.X_OK):
        return None
    port = free_port()
    proc = subprocess.Popen(
        [str(binary), "webhook", "--port", str(port), "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file", str(certs / "tls.key")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, port


# A neighbour that keeps a core busy and its caches cold, as the API server and etcd do on a node
# they share with the webhook: rewrites 64 MiB a cache line at a time, so every access misses.
BUSY_NEIGHBOUR = """
data = bytearray(64 << 20)
while True:
    for i in range(0, len(data), 64):
        data[i] ^= 1
"""


def start_neighbours(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BUSY_NEIGHBOUR], start_new_session=True) for _ in range(count)]


def versus(args: argparse.Namespace, certs: Path, lua: Path) -> None:
    """Our server, the Go allow-all and agnhost (`/mutating-pods`, which allows this pod unchanged),
    all over TLS with the same certificate and body, in interleaved rounds of peak load. A round's
    ratios (ours/agnhost) compare two servers measured seconds apart, so a busy minute on the VM
    lands on both; the summary is the median of those per-round ratios, and the worst round."""
    tmp = lua.parent
    log_path = tmp / "product.log"
    with open(log_path, "wb") as log:
        ours = start_server("product", True, certs, args, log=log)
    servers: list[tuple[str, subprocess.Popen, str]] = [("ours", ours[0], f"https://127.0.0.1:{ours[1]}/mutate")]
    if args.versus_tree:
        other = start_server("product", True, certs, args, tree=Path(args.versus_tree))
        servers.append(("ours@tree", other[0], f"https://127.0.0.1:{other[1]}/mutate"))
    go = start_go_baseline(certs, tmp)
    if go:
        servers.append(("Go allow-all", go[0], f"https://127.0.0.1:{go[1]}/mutate"))
    agnhost = start_agnhost(certs)
    if agnhost:
        servers.append(("agnhost", agnhost[0], f"https://127.0.0.1:{agnhost[1]}/mutating-pods"))
    import importlib.util

    parser = "gunicorn_h1c (C)" if importlib.util.find_spec("gunicorn_h1c") else "Python (gunicorn_h1c missing: reinstall the project)"
    load = f"paced at {args.versus_rate:g} reviews/s" if args.versus_rate else "peak load"
    print(
        f"versus: {args.versus_rounds} interleaved rounds of {args.versus_seconds}s, wrk -c{args.connections}, {load},"
        f" {args.versus_busy} busy neighbours, every server over TLS;"
        f" CPU = all the server's processes, user+system, per review; our HTTP parser: {parser}; load average {os.getloadavg()[0]:.1f}"
    )
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in servers}
    logged = 0

    def load_once(url: str) -> dict[str, float]:
        if args.versus_rate:
            return wrk_paced(url, str(lua), args.versus_seconds, args.versus_rate, args.connections, tmp)
        return wrk(url, str(lua), args.versus_seconds, args.connections)

    neighbours = start_neighbours(args.versus_busy)
    try:
        for _, _, url in servers:
            wait_port(int(url.rsplit(":", 1)[1].split("/")[0]))
            wrk(url, str(lua), 2, args.connections)  # warm-up
        for _ in range(args.versus_rounds):
            for name, proc, url in servers:
                before, log_before = server_cpu_seconds(proc.pid), log_path.stat().st_size
                run = load_once(url)
                run["cpu_us"] = (server_cpu_seconds(proc.pid) - before) / max(run["requests"], 1) * 1e6
                if name == "ours":
                    logged += log_path.stat().st_size - log_before
                runs[name].append(run)
    finally:
        for proc in neighbours:
            proc.kill()
            proc.wait()
        for _, proc, _ in servers:
            proc.send_signal(signal.SIGTERM)
        for _, proc, _ in servers:
            proc.wait(30)
    for name, rounds in runs.items():
        cells = "  ".join(f"{r['rps']:5.0f}/s {r['cpu_us']:4.0f}us" for r in rounds)
        p99 = sorted(r["p99"] for r in rounds)
        print(f"  {name:<13}{cells}   errors {sum(r['errors'] for r in rounds)}   p99 ms median {statistics.median(p99):.1f}, worst {p99[-1]:.1f}")
    ours_requests = sum(r["requests"] for r in runs["ours"])
    print(f"  our log: {logged / max(ours_requests, 1):.1f} bytes per review at the default log level")
    if "agnhost" not in runs:
        print(AGNHOST_MISSING)
        return
    if "ours@tree" in runs:
        print(
            f"  ours@tree is {args.versus_tree}; ours/ours@tree, median of per-round CPU per review: "
            f"{statistics.median(o['cpu_us'] / t['cpu_us'] for o, t in zip(runs['ours'], runs['ours@tree'])):.2f}x;"
            f" ours@tree/agnhost: {statistics.median(t['cpu_us'] / a['cpu_us'] for t, a in zip(runs['ours@tree'], runs['agnhost'])):.2f}x"
        )
    cpu = [o["cpu_us"] / a["cpu_us"] for o, a in zip(runs["ours"], runs["agnhost"])]
    rps = [o["rps"] / a["rps"] for o, a in zip(runs["ours"], runs["agnhost"])]
    print(
        f"  ours/agnhost, median of per-round ratios: CPU per review {statistics.median(cpu):.2f}x (target <= 0.80x),"
        f" throughput {statistics.median(rps):.2f}x (target >= 1.25x)"
    )
    print(
        f"  worst round: CPU per review {max(cpu):.2f}x, throughput {min(rps):.2f}x;"
        f" all rounds CPU {' '.join(f'{c:.2f}' for c in cpu)}, throughput {' '.join(f'{r:.2f}' for r in rps)}"
    )


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def hey(url: str, body: Path, seconds: int, rate: float, connections: int) -> dict[str, float]:
    per_worker = max(rate / connections, 1.0)
    out = subprocess.run(
        ["hey", "-z", f"{seconds}s", "-c", str(connections), "-q", f"{per_worker:.1f}", "-m", "POST", "-T", "application/json", "-D", str(body), url],
        capture_output=True,
        text=True,
    ).stdout

    def figure(pattern: str, scale: float = 1.0) -> float:
        m = re.search(pattern, out)
        return float(m[1]) * scale if m else float("nan")  # hey omits lines when every request failed

    codes = dict(re.findall(r"\[(\d+)\]\s+(\d+) responses", out))
    failed = sum(int(n) for n in re.findall(r"\[(\d+)\]\s+(?:Get|Post)", out))
    return {
        "rps": figure(r"Requests/sec:\s+([\d.]+)"),
        "p50": figure(r"50%+ in ([\d.]+) secs", 1000),
        "p99": figure(r"99%+ in ([\d.]+) secs", 1000),
        "non200": sum(int(n) for c, n in codes.items() if c != "200") + failed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="threads per worker (default: the product default)")
    parser.add_argument("--serve", choices=["product", "baseline"], help=argparse.SUPPRESS)
    parser.add_argument("--tls", choices=["on", "off"], default="on", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--certs", help=argparse.SUPPRESS)
    parser.add_argument("--gunicorn-ctx", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--placement", default="2,4,16", help="keep-alive connection counts for the placement rounds")
    parser.add_argument("--placement-only", action="store_true", help="run only the placement rounds")
    parser.add_argument("--placement-seconds", type=int, default=8, help="length of one placement round")
    parser.add_argument("--versus-only", action="store_true", help="run only the rounds against the Go allow-all and agnhost")
    parser.add_argument("--versus-rounds", type=int, default=6, help="rounds against the Go allow-all and agnhost")
    parser.add_argument("--versus-seconds", type=int, default=8, help="length of one of those rounds")
    parser.add_argument(
        "--versus-rate", type=float, default=0, help="reviews/s in all for the versus rounds, arriving at random (0: as fast as the servers answer)"
    )
    parser.add_argument(
        "--versus-busy",
        type=int,
        default=0,
        help="processes that keep cores busy and caches cold during the versus rounds, as an API server beside the webhook does",
    )
    parser.add_argument("--versus-tree", help="another checkout of this repository (say main's) served in the same rounds, as ours@tree")
    # The designs compared in docs/design-notes.md: ours (the worker's event loop accepting from
    # the one listening socket), shared (stock gthread), reuseport (SO_REUSEPORT set).
    parser.add_argument("--placement-design", choices=["ours", "shared", "reuseport"], default="ours", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        run_server(args.serve, args.tls == "on", args.port, args.certs, args.workers, args.gunicorn_ctx, args.threads, args.placement_design)
        return
    for tool in ("wrk", "hey"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install wrk hey")

    sys.path.insert(0, str(REPO))
    from webhook.certs.files import ensure_dev_certs

    tmp = Path(tempfile.mkdtemp(prefix="sg-bench-"))
    ensure_dev_certs(tmp / "certs", "servinggate-webhook", "servinggate-system")
    lua = tmp / "post.lua"
    lua.write_text(WRK_LUA.replace("{body}", str(POD)))
    if args.placement_only or args.versus_only:
        (placement if args.placement_only else versus)(args, tmp / "certs", lua)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    print(f"machine: {os.cpu_count()} cores; {args.workers} gunicorn workers; wrk -t2 -c{args.connections}; {args.seconds}s per run, {args.rounds} rounds")
    print(f"body: {POD.name} ({POD.stat().st_size} bytes), POST /mutate (the product patches it)\n")
    # All four servers run side by side (idle ones cost nothing) and are measured in interleaved
    # rounds, each figure the median of its rounds: a shared 2-core VM drifts by tens of percent
    # within minutes, and a one-shot run per server mostly measures that drift.
    servers, procs = [], []
    for kind, tls in (("baseline", True), ("product", True), ("baseline", False), ("product", False)):
        proc, port = start_server(kind, tls, tmp / "certs", args)
        procs.append(proc)
        servers.append((kind, tls, f"{'https' if tls else 'http'}://127.0.0.1:{port}/mutate", port))
    rows = []
    try:
        for *_, port in servers:
            wait_port(port)
        for _, _, url, _ in servers:
            wrk(url, str(lua), 2, args.connections)  # warm-up
        peaks: dict[str, list[dict[str, float]]] = {url: [] for _, _, url, _ in servers}
        halves: dict[str, list[dict[str, float]]] = {url: [] for _, _, url, _ in servers}
        cpu: dict[str, list[float]] = {url: [] for _, _, url, _ in servers}
        for _ in range(args.rounds):
            for proc, (_, _, url, _) in zip(procs, servers):
                before = server_cpu_seconds(proc.pid)
                run = wrk(url, str(lua), args.seconds, args.connections)
                cpu[url].append((server_cpu_seconds(proc.pid) - before) / max(run["requests"], 1) * 1e6)
                peaks[url].append(run)
        for _ in range(args.rounds):
            for _, _, url, _ in servers:
                rate = statistics.median(p["rps"] for p in peaks[url]) / 2
                halves[url].append(wrk_paced(url, str(lua), args.seconds, rate, args.connections, tmp))
        for kind, tls, url, _ in servers:
            rate = statistics.median(p["rps"] for p in peaks[url]) / 2
            burst = hey(url, POD, args.seconds, rate, args.connections)
            rows.append((kind, tls, median_of(peaks[url]) | {"cpu_us": statistics.median(cpu[url])}, median_of(halves[url]), burst))
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(30)
    print(f"medians of {args.rounds} interleaved rounds (hey: one run)\n")
    print(f"{'':<21}{'peak (wrk)':^37}|{'half load, paced (wrk)':^34}|{'half load, bursts (hey)':^34}")
    print(
        f"{'server':<14}{'proto':<7}{'rev/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}|"
        f"{'rev/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'errors':>8} |{'rev/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'non-200':>8}"
    )
    for kind, tls, peak, half, burst in rows:
        print(
            f"{kind:<14}{'TLS' if tls else 'HTTP':<7}{peak['rps']:>11.0f}{peak['p50']:>9.2f}{peak['p99']:>9.2f}{peak['errors']:>8}|"
            f"{half['rps']:>9.0f}{half['p50']:>8.2f}{half['p99']:>8.2f}{half['errors']:>8} |"
            f"{burst['rps']:>9.0f}{burst['p50']:>8.2f}{burst['p99']:>8.2f}{burst['non200']:>8}"
        )
    get = {(k, t): p for k, t, p, _, _ in rows}
    half_tls = next(h for k, t, _, h, _ in rows if k == "product" and t)
    burst_tls = next(b for k, t, _, _, b in rows if k == "product" and t)
    print()
    print("spread of peak rev/s over the rounds, and server CPU per review at peak (all gunicorn processes, user+system):")
    for kind, tls, peak, _, _ in rows:
        url = next(u for k, t, u, _ in servers if (k, t) == (kind, tls))
        lo, hi = min(p["rps"] for p in peaks[url]), max(p["rps"] for p in peaks[url])
        print(f"  {kind:<10}{'TLS' if tls else 'HTTP':<6}{lo:>7.0f} .. {hi:<7.0f} rev/s {peak['cpu_us']:>8.0f} us CPU")
    print()
    print(
        f"product/baseline over TLS:  {get[('product', True)]['rps'] / get[('baseline', True)]['rps']:.2f}x   (target >= 0.80)"
        f"   by server CPU per review: {get[('baseline', True)]['cpu_us'] / get[('product', True)]['cpu_us']:.2f}x"
    )
    print(
        f"TLS/plain HTTP for product: {get[('product', True)]['rps'] / get[('product', False)]['rps']:.2f}x   (target >= 0.70)"
        f"   by server CPU per review: {get[('product', False)]['cpu_us'] / get[('product', True)]['cpu_us']:.2f}x"
    )
    print(f"TLS/plain HTTP for baseline:{get[('baseline', True)]['rps'] / get[('baseline', False)]['rps']:.2f}x")
    print(f"product p99 at half of peak over TLS: {half_tls['p99']:.2f} ms paced, {burst_tls['p99']:.2f} ms in bursts of {args.connections}   (target < 10 ms)")

    print()
    versus(args, tmp / "certs", lua)
    print()
    placement(args, tmp / "certs", lua)

    # What a TLS handshake per review costs (a client that does not keep connections alive, or a
    # keep-alive shorter than the API server's idle interval): our cached ECDSA context against
    # gunicorn's default, which builds a context and parses the key for every connection.
    close_lua = tmp / "close.lua"
    close_lua.write_text(WRK_LUA.replace("{body}", str(POD)) + '\nwrk.headers["Connection"] = "close"\n')
    print("\nnew TLS connection per review (Connection: close):")
    for label, extra in (("cached context (ours)", []), ("gunicorn default context", ["--gunicorn-ctx"])):
        proc, port = start_server("product", True, tmp / "certs", args, *extra)
        try:
            wait_port(port)
            res = wrk(f"https://127.0.0.1:{port}/mutate", str(close_lua), args.seconds, args.connections)
            print(f"  {label:<26}{res['rps']:>8.0f} rev/s  p50 {res['p50']:.2f} ms  p99 {res['p99']:.2f} ms")
        finally:
            processes.stop(proc)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
