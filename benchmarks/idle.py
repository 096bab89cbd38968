"""10,000 idle connections against the real server (issue 38's bad input), beside the server it replaced.

Starts `python -m webhook serve` (2 workers, lookups off, every other option the product's: the
keep-alive and request timeout too unless given) and, from a child process, opens `--connections`
connections to it at once in a mix of three kinds, interleaved: `tcp` (connected, never sends a
byte), `tls` (TLS handshake done, never sends a request) and `kept` (one review answered, then
kept alive and silent). They are held for `--hold` seconds (default: longer than both the request
timeout and the keep-alive, so that every kind reaches its deadline), or until the server has
closed every one, while this process measures:

- a fresh client's review (a new TLS connection, POST /mutate with the Kthena pod serve.py sends)
  started every `--interval` seconds: p50/p99/max latency, and how many were answered within the
  shortest and the longest timeoutSeconds of manifests/base/webhook-configurations.yaml (the API
  server gives up after that; `--probe-timeout` is how long this client waits to see what happens);
- a kept-alive client (connected before the flood, as the API server's are) reviewing every
  `--interval` seconds: the same figures;
- each worker's RSS (/proc) before the flood, its highest while held, and after (`--settle` s);
- whether the worker pids stayed the same (a worker that missed gunicorn's `timeout` heartbeat is
  killed and replaced), and the master's log lines about worker timeouts or exits;
- how many held connections the kernel connected, how many finished the TLS handshake and the
  review, how many of them the server closed and how long after they were connected (or
  handshaken) it did, and how many were still open at the end;
- the connections the workers held (/proc/net/tcp, their file descriptors) and the listening
  socket's accept queue at its longest;
- HTTP 5xx (probes and the `kept` reviews): must be 0.

gunicorn's `worker_connections` (default 1000) bounds the connections a worker holds; the rest wait
in the listening socket's accept queue (`backlog`, default 2048, capped by net.core.somaxconn),
and connects beyond that wait in the client's kernel, which resends its SYN. Both are printed.

`--versus-tree DIR` runs the same, one after the other in the same run, against another checkout of
this repository (say the server before a change, `git worktree add /tmp/old 1e328e8`), served by
its own .venv when it has one. The soft RLIMIT_NOFILE is raised to the hard one for this process,
the holder and the servers (the connections need as many descriptors on each side).

Run: `./dev bench idle` (this tree alone, about 3 minutes), or, with the server before the
rebuild beside it (issue 38's figures, about 7 minutes):
  git worktree add /tmp/old 1e328e8 && (cd /tmp/old && ./dev test --collect-only -q >/dev/null)
  .venv/bin/python benchmarks/idle.py --versus-tree /tmp/old
Usage: python benchmarks/idle.py [--connections 10000] [--mix tcp,tls,kept] [--hold S] [--interval 0.5]
       [--keepalive S] [--request-timeout S] [--probe-timeout 60] [--settle 10] [--versus-tree DIR]
Prints figures; it passes or fails nothing. Needs RLIMIT_NOFILE's hard limit above the connections
(`ulimit -Hn`), and Linux (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support import (
    free_port,  # noqa: E402
    processes,  # noqa: E402
)
from support.procfs import connections_per_worker, status_kib, worker_pids  # noqa: E402

POD = REPO / "tests/fixtures/admission/pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json"
LISTEN = "0A"


def review_request(body: bytes) -> bytes:
    return b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def timeout_seconds() -> list[int]:
    """Every timeoutSeconds our webhook configurations give the API server."""
    docs = yaml.safe_load_all((REPO / "manifests/base/webhook-configurations.yaml").read_text())
    return sorted({hook["timeoutSeconds"] for doc in docs if doc for hook in doc.get("webhooks", [])})


def read_answer(read: Any) -> tuple[int, bytes, bool]:
    """Status code, body and whether the server closes the connection after it (`Connection: close`)
    of one Content-Length answer; `read(n)` gives bytes, b"" at the end."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = read(65536)
        if not chunk:
            raise ConnectionError("closed before an answer")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)[1])  # type: ignore[index]
    while len(body) < length:
        chunk = read(65536)
        if not chunk:
            raise ConnectionError("closed inside an answer")
        body += chunk
    return int(head.split(None, 2)[1]), body, re.search(rb"(?i)\r\nconnection:\s*close", head) is not None


# ---- the holder (a child process: its event loop does not share a GIL with the probes) -------------


async def hold_one(kind: str, port: int, context: ssl.SSLContext, request: bytes, until: float) -> dict[str, Any]:
    """One held connection: when it connected, was ready (handshaken, or its review answered), was
    closed by the server (monotonic seconds), and how it ended."""
    rec: dict[str, Any] = {"kind": kind, "start": time.monotonic(), "connected": None, "ready": None, "closed": None, "code": None, "error": None}
    writer = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        rec["connected"] = time.monotonic()
        if kind == "tcp":
            rec["ready"] = rec["connected"]
        else:
            await writer.start_tls(context, server_hostname="localhost", ssl_handshake_timeout=until - time.monotonic())
            if kind == "kept":
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                rec["code"] = int(head.split(None, 2)[1])
                await reader.readexactly(int(re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)[1]))  # type: ignore[index]
            rec["ready"] = time.monotonic()
        while await reader.read(65536):
            pass
        rec["closed"] = time.monotonic()
    except asyncio.CancelledError:
        pass  # held to the end
    except Exception as exc:  # a reset or a TLS error at the server's close: closed too
        rec["closed"], rec["error"] = time.monotonic(), type(exc).__name__
    finally:
        if writer is not None:
            writer.transport.abort()
    return rec


async def hold_all(port: int, ca: str, connections: int, mix: list[str], seconds: float) -> list[dict[str, Any]]:
    context = ssl.create_default_context(cafile=ca)
    request = review_request(POD.read_bytes())
    until = time.monotonic() + seconds
    tasks = [asyncio.ensure_future(hold_one(mix[i % len(mix)], port, context, request, until)) for i in range(connections)]
    await asyncio.wait(tasks, timeout=seconds)
    for task in tasks:
        task.cancel()
    return list(await asyncio.gather(*tasks))


def holder(args: argparse.Namespace) -> None:
    records = asyncio.run(hold_all(args.port, args.ca, args.connections, args.mix.split(","), args.hold))
    Path(args.out).write_text(json.dumps(records))


# ---- the probes and the samples (this process) ---------------------------------------------------------


class Probes:
    """Reviews on fresh connections, one started every `interval` s (each in its own thread, so a
    slow one does not delay the next), and on one kept-alive connection, one after the other."""

    def __init__(self, port: int, ca: str, interval: float, timeout: float):
        self.port, self.interval, self.timeout = port, interval, timeout
        self.context = ssl.create_default_context(cafile=ca)
        self.request = review_request(POD.read_bytes())
        self.fresh: list[tuple[float, float | None, int | None, str]] = []  # start, latency, code, error
        self.kept: list[tuple[float, float | None, int | None, str]] = []
        self.closed_after_answer = 0  # kept-alive: answers that announced the connection's close
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.kept_conn = self._review(self._connect(), [])  # it has served a review, as the API server's have

    def _connect(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        return self.context.wrap_socket(raw, server_hostname="localhost")

    def _review(self, conn: ssl.SSLSocket | None, into: list) -> ssl.SSLSocket | None:
        started = time.monotonic()
        try:
            conn = conn or self._connect()
            conn.sendall(self.request)
            code, _, closes = read_answer(conn.recv)
            into.append((started, time.monotonic() - started, code, ""))
            if closes:  # as a client should: the next review goes on a new connection
                self.closed_after_answer += into is self.kept
                conn.close()
                return None
            return conn
        except (OSError, ConnectionError) as exc:
            into.append((started, None, None, type(exc).__name__))
            if conn is not None:
                conn.close()
            return None

    def _fresh_one(self) -> None:
        conn = self._review(None, self.fresh)
        if conn is not None:
            conn.close()

    def _kept_loop(self) -> None:
        conn: ssl.SSLSocket | None = self.kept_conn
        while not self.stopping.wait(self.interval):
            conn = self._review(conn, self.kept)  # a closed connection is reopened (and counted as failed once)

    def _fresh_loop(self) -> None:
        while not self.stopping.wait(self.interval):
            thread = threading.Thread(target=self._fresh_one, daemon=True)
            thread.start()
            self.threads.append(thread)

    def start(self) -> None:
        for loop in (self._kept_loop, self._fresh_loop):
            threading.Thread(target=loop, daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(self.timeout + 5)


def accept_queue(port: int) -> int:
    """Connections waiting in the listening socket's accept queue (its rx_queue in /proc/net/tcp)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return int(fields[4].split(":")[1], 16)
    return 0


def rss_mib(pids: list[int]) -> dict[int, float]:
    out = {}
    for pid in pids:
        try:
            out[pid] = status_kib(pid, "VmRSS") / 1024
        except OSError:
            out[pid] = 0.0
    return out


def start_server(tree: Path, port: int, certs: Path, tmp: Path, args: argparse.Namespace, log: Any) -> subprocess.Popen:
    python = tree / ".venv" / "bin" / "python"
    options = ["--keepalive", str(args.keepalive)] if args.keepalive else []
    options += ["--request-timeout", str(args.request_timeout)] if args.request_timeout else []
    return subprocess.Popen(
        [str(python if python.exists() else sys.executable), "-m", "webhook", "serve", "--host", "127.0.0.1", "--port", str(port)]
        + ["--certs-dir", str(certs), "--kube-lookups", "off", "--workers", "2", "--metrics-port", "0", "--metrics-dir", str(tmp / "metrics")]
        + ["--log-level", "warning", *options],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_ready(port: int, ca: str, timeout: float = 30) -> None:
    context = ssl.create_default_context(cafile=ca)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, context.wrap_socket(raw, server_hostname="localhost") as conn:
                conn.sendall(review_request(POD.read_bytes()))
                if read_answer(conn.recv)[0] == 200:
                    return
        except (OSError, ConnectionError):
            time.sleep(0.2)
    raise RuntimeError(f"server on {port} did not answer a review in {timeout:g} s")


def hold_and_sample(server: subprocess.Popen, port: int, ca: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The flood, the probes and the samples, from before the holder starts until `--settle` s after it ends."""
    workers = sorted(worker_pids(server.pid))
    before = rss_mib(workers)
    probes = Probes(port, ca, args.interval, args.probe_timeout)
    out = work / "held.json"
    child = subprocess.Popen(
        [sys.executable, __file__, "--hold-child", "--port", str(port), "--ca", ca, "--out", str(out)]
        + ["--connections", str(args.connections), "--mix", args.mix, "--hold", str(args.hold)]
    )
    flood = time.monotonic()
    probes.start()
    peak, held_max, queue_max = dict(before), dict.fromkeys(workers, 0), 0
    while child.poll() is None:
        for pid, mib in rss_mib(workers).items():
            peak[pid] = max(peak[pid], mib)
        for pid, count in connections_per_worker(server.pid, port).items():
            held_max[pid] = max(held_max.get(pid, 0), count)
        queue_max = max(queue_max, accept_queue(port))
        time.sleep(1)
    probes.stop()
    time.sleep(args.settle)
    after = rss_mib(workers)
    pids_after = sorted(worker_pids(server.pid))
    return {
        "flood": flood,
        "records": json.loads(out.read_text()),
        "fresh": probes.fresh,
        "kept": probes.kept,
        "kept_closed": probes.closed_after_answer,
        "rss": {pid: (before[pid], peak[pid], after.get(pid, 0.0)) for pid in workers},
        "pids_same": pids_after == workers,
        "pids": (workers, pids_after),
        "held_max": held_max,
        "queue_max": queue_max,
    }


def run(label: str, tree: Path, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """One server from `tree`, started, warmed, measured and stopped."""
    port, certs, work = free_port(), tmp / "certs", tmp / label.replace("@", "_")
    work.mkdir()
    log_path = work / "server.log"
    with open(log_path, "wb") as log:
        server = start_server(tree, port, certs, work, args, log)
        try:
            ca = str(certs / "ca.crt")
            for _ in range(20):  # up, and both workers warm
                wait_ready(port, ca)
            time.sleep(2)
            result = hold_and_sample(server, port, ca, args, work)
        finally:
            processes.stop(server)
    lines = log_path.read_text(errors="replace").splitlines()
    commit = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
    return result | {
        "label": f"{label} ({commit or tree})",
        "log": [line for line in lines if re.search(r"(?i)worker timeout|exited|was sent|booting worker", line)],
    }


# ---- the report ----------------------------------------------------------------------------------------------


def quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
    return f"p50 {statistics.median(values):.2f} s, p99 {p99:.2f} s, max {values[-1]:.2f} s"


def report_probes(name: str, probes: list[tuple[float, float | None, int | None, str]], limits: list[int], flood: float) -> None:
    answered = [lat for _, lat, _, _ in probes if lat is not None]
    errors: dict[str, int] = {}
    for _, _, _, error in probes:
        if error:
            errors[error] = errors.get(error, 0) + 1
    within = ", ".join(f"{sum(1 for lat in answered if lat <= limit)} within {limit} s" for limit in limits)
    codes = sorted({code for _, _, code, _ in probes if code is not None})
    print(f"    {name}: {len(probes)} sent, {len(answered)} answered ({within}); {quantiles(answered)}; codes {codes}; failed {errors or 0}")
    failed_at = [f"{t:.1f}" for t in sorted(start - flood for start, lat, _, _ in probes if lat is None)]
    if failed_at:
        print(f"      (failed ones sent at {', '.join(failed_at[:10])}{' ...' if len(failed_at) > 10 else ''} s after the flood began)")


def report(result: dict[str, Any], args: argparse.Namespace, limits: list[int]) -> None:
    print(f"\n  {result['label']}:")
    records = result["records"]
    for kind in args.mix.split(","):
        mine = [r for r in records if r["kind"] == kind]
        connected = [r for r in mine if r["connected"] is not None]
        ready = [r for r in mine if r["ready"] is not None]
        closed = [r for r in ready if r["closed"] is not None]
        lost = [r for r in mine if r["ready"] is None and r["closed"] is not None]
        errors: dict[str, int] = {}
        for r in mine:
            if r["error"]:
                errors[r["error"]] = errors.get(r["error"], 0) + 1
        codes = sorted({r["code"] for r in mine if r["code"] is not None})
        print(
            f"    held {kind:<5}{len(mine):>6}: connected {len(connected)} ({quantiles([r['connected'] - r['start'] for r in connected])} after the flood began),"
            f" ready {len(ready)} ({quantiles([r['ready'] - r['start'] for r in ready])})"
        )
        print(
            f"{'':<19}closed by the server once ready {len(closed)} ({quantiles([r['closed'] - r['ready'] for r in closed])} after ready),"
            f" closed before ready {len(lost)}, still open at the end {len(mine) - len(closed) - len(lost)}; answers {codes}; errors {errors or 0}"
        )
    report_probes("fresh connection, review", result["fresh"], limits, result["flood"])
    report_probes("kept-alive connection, review", result["kept"], limits, result["flood"])
    print(f"      (answers to it that closed the connection, so that the next review opened a new one: {result['kept_closed']})")
    for pid, (before, peak, after) in result["rss"].items():
        print(
            f"    worker {pid}: RSS {before:.1f} MiB before, {peak:.1f} highest while held, {after:.1f} after; held at most {result['held_max'].get(pid, 0)} connections"
        )
    print(f"    accept queue at its longest {result['queue_max']}; worker pids unchanged: {result['pids_same']} {result['pids']}")
    print(f"    master log about workers: {result['log'] or 'nothing'}")
    fivexx = sum(1 for _, _, code, _ in result["fresh"] + result["kept"] if code and code >= 500) + sum(1 for r in records if r["code"] and r["code"] >= 500)
    print(f"    HTTP 5xx: {fivexx}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--mix", default="tcp,tls,kept", help="kinds of held connection, taken in turn")
    parser.add_argument("--hold", type=float, default=0, help="seconds the connections are held (default: keep-alive + request timeout + 20)")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between probe reviews")
    parser.add_argument("--keepalive", type=int, default=0, help="the server's --keepalive (default: the product's)")
    parser.add_argument("--request-timeout", type=int, default=0, help="the server's --request-timeout (default: the product's)")
    parser.add_argument("--probe-timeout", type=float, default=60, help="seconds a probe waits for its answer")
    parser.add_argument("--settle", type=float, default=10, help="seconds after the holder closed its connections before RSS is read again")
    parser.add_argument("--versus-tree", help="another checkout of this repository, measured after this one in the same run")
    parser.add_argument("--hold-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ca", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by the holder and the servers
    if args.hold_child:
        holder(args)
        return
    sys.path.insert(0, str(REPO))
    from gunicorn.config import Config

    from webhook.certs.files import ensure_dev_certs
    from webhook.config import compose
    from webhook.servesettings import ServeSettings

    defaults = compose(ServeSettings).listener
    args.keepalive = args.keepalive or defaults.keepalive
    args.request_timeout = args.request_timeout or defaults.request_timeout
    args.hold = args.hold or args.keepalive + args.request_timeout + 20
    if hard < args.connections + 2000:
        sys.exit(f"RLIMIT_NOFILE's hard limit is {hard}: too few descriptors for {args.connections} connections")
    gunicorn = Config()
    limits = timeout_seconds()
    with open("/proc/sys/net/core/somaxconn") as f:
        somaxconn = int(f.read())
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; RLIMIT_NOFILE {soft} -> {hard}; net.core.somaxconn {somaxconn}\n"
        f"gunicorn {gunicorn.worker_connections} worker_connections, backlog {gunicorn.backlog}; 2 workers, keep-alive {args.keepalive} s,"
        f" request timeout {args.request_timeout} s; webhook timeoutSeconds {limits}\n"
        f"{args.connections} connections ({args.mix} in turn) held {args.hold:g} s; a probe review every {args.interval:g} s"
    )
    tmp = Path(tempfile.mkdtemp(prefix="sg-idle-"))
    ensure_dev_certs(tmp / "certs", "servinggate-webhook", "servinggate-system")
    trees = [("ours", REPO)] + ([("ours@tree", Path(args.versus_tree).resolve())] if args.versus_tree else [])
    for label, tree in trees:
        result = run(label, tree, args, tmp)
        report(result, args, limits)
        print(f"    (load {os.getloadavg()[0]:.2f} at the end)")


if __name__ == "__main__":
    main()
