"""Latency a mutating admission webhook adds to Pod creates through a real kube-apiserver.

Needs a real control plane (kube-apiserver 1.28 + etcd + kube-controller-manager on this machine)
and a kubeconfig with rights to create namespaces, pods and MutatingWebhookConfigurations.
Nothing in the test suite runs it; without `--url` (as in `./dev bench`) it says what it needs and
stops. It prints figures; it passes or fails nothing.

Each round, for each webhook under comparison (`--url`, repeatable; `none` means no webhook, so
the API server's own cost), in turn so that the kinds are interleaved round by round, in an order
drawn anew each round (`--seed`). With one order rotated, each kind still ran right after the same
other kind, and in two runs here the kind right after `none` came out worst (+51 and +88 ms at
p99, pooled) whichever server it was:
  1. create a namespace carrying a unique label and wait for its `default` ServiceAccount;
  2. register a MutatingWebhookConfiguration (admissionregistration.k8s.io/v1) calling the URL,
     for CREATE of pods, whose namespaceSelector matches only that label (failurePolicy Fail,
     sideEffects None, admissionReviewVersions [v1], timeoutSeconds 10), then wait `--settle`
     seconds for the API server to load it;
  3. create `--creates` pods (`--pod tiny`: one `busybox` container, labelled `servinggate.io/gang` so that
     ServingGate's pod rules are in scope and it patches them) keeping `--concurrency` creates in
     flight, each over its own keep-alive HTTPS connection, and time each POST;
  4. read back the first pod's schedulerName (ServingGate sets `volcano`: proof it was in the
     path), delete the configuration and the namespace, and wait until the namespace is gone.
Per round: p50/p90/p99/max of the create latency, errors, creates/s, the established TCP
connections the API server holds to the webhook's port, the TCP connections the machine accepted
during the creates (each new one is a TLS handshake for the webhook; the client's own
connections, one per create in flight, and one read of /metrics are among them), the CPU per
create of whichever processes listen on the webhook's port (a Go webhook's as much as ours; /proc
must show their sockets, so run the benchmark as their user or root), and the webhook calls as
the API server itself times them (its admission-webhook histogram, read from /metrics before and
after: count, mean, share slower than 5/25/100/500 ms). That last line holds only what the webhook and the
connections to it cost, so it separates a slow webhook from a slow round of the API server.
With `--gunicorn-master PID` (and the rounds whose URL has `--gunicorn-port`), also how those
connections are spread over the gunicorn master's workers (sampled from /proc while the creates
run) and each worker's CPU seconds.
At the end: each kind's worst round (by p99), the latency each webhook adds to `none` per round
index (its round minus the `none` round of the same index) at p50 and p99, and the same over all
rounds pooled, with each pair of webhooks compared at p99 and an interval from redrawing the rounds
(see `pooled`: one round's p99 is too noisy here to tell 30 ms apart).

Usage:
  python benchmarks/apiserver_pods.py --kubeconfig ~/k8s/run/kubeconfig --ca-file /tmp/e2e-certs/ca.crt \
      --url none --url ours=https://127.0.0.1:8443/mutate --url agnhost=https://127.0.0.1:9443/mutating-pods \
      --creates 400 --concurrency 50 --rounds 3 [--gunicorn-master PID --gunicorn-port 8443]

agnhost's `/mutating-pods` allows these pods unchanged, while ours patches each one, and the API
server applies a webhook's patch inside the call it times. For a peer that patches every pod too,
start agnhost with `--sidecar-image busybox` and add `--url agnhost-sidecar=https://127.0.0.1:9443/mutating-pods-sidecar`
(it adds a container, a larger change than ours). The peer whose answers cost the API server
exactly what ours do is benchmarks/allowall built with Go and started with `-patch` (it returns
the JSON Patch we return for the tiny pod: `--url go-patch=https://127.0.0.1:9543/mutate`); and
with `--pod settled` ours patches nothing, as agnhost does.
Start each webhook and this client in sessions of their own (`setsid`): Linux groups the CPU
share of the processes of one session (autogroup), and a webhook sharing a session with the
client's 50 threads competes with them for one group's share.
"""

from __future__ import annotations

import argparse
import base64
import functools
import http.client
import json
import os
import random
import ssl
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # webhook.kube, and support.procfs for /proc

from support.procfs import connections_per_worker, cpu_seconds, established, listening_pids, passive_opens, worker_pids  # noqa: E402

NS_LABEL = "servinggate-bench"


# ---- talking to the API server ------------------------------------------------------------------


class Api:
    """Just enough of a Kubernetes client to keep 50 creates in flight: JSON over keep-alive HTTPS,
    one connection per thread. Where to connect and with which credentials comes from the
    project's one client bootstrap (webhook/kube), as `serve` and `reconcile` read it."""

    def __init__(self, kubeconfig: str) -> None:
        from webhook.kube import load_api_client

        conf = load_api_client(kubeconfig).configuration
        server = urlsplit(conf.host)
        self.host, self.port = server.hostname, server.port or 443
        self.ssl = ssl.create_default_context(cafile=conf.ssl_ca_cert)
        if conf.cert_file:
            self.ssl.load_cert_chain(conf.cert_file, conf.key_file)
        self.headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if conf.api_key.get("authorization"):  # a bearer token ("Bearer ...") instead of a certificate
            self.headers["Authorization"] = conf.api_key["authorization"]
        self._local = threading.local()

    def connection(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ssl, timeout=60)
        return conn

    def text(self, path: str) -> str:
        """A plain-text GET (the API server's /metrics), on a fresh connection of its own."""
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ssl, timeout=60)
        try:
            conn.request("GET", path, headers={**self.headers, "Accept": "text/plain"})
            return conn.getresponse().read().decode(errors="replace")
        finally:
            conn.close()

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """One request over this thread's keep-alive connection (reopened once if it was closed)."""
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            conn = self.connection()
            try:
                conn.request(method, path, body=data, headers=self.headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        try:
            return resp.status, json.loads(raw) if raw else {}
        except ValueError:
            return resp.status, {"message": raw[:200].decode(errors="replace")}


def expect(status_body: tuple[int, dict], *ok: int) -> dict:
    status, body = status_body
    if status not in ok:
        raise RuntimeError(f"HTTP {status}: {body.get('message', body)}")
    return body


def wait(what: str, timeout: float, probe) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout:.0f}s")
        time.sleep(0.2)


# ---- one round ----------------------------------------------------------------------------------


def webhook_configuration(name: str, url: str, ca_bundle: bytes, ns_label_value: str) -> dict:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "pods.bench.servinggate.io",
                "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_bundle).decode()},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "Namespaced"}],
                "namespaceSelector": {"matchLabels": {NS_LABEL: ns_label_value}},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 10,
            }
        ],
    }


KTHENA_POD = REPO / "tests/fixtures/admission/pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json"


def pod(name: str, shape: str = "tiny") -> dict:
    """`tiny`: one busybox container, labelled so that ServingGate's pod rules are in scope (the
    API server sends about 2.5 KB for it). `kthena`: a Kthena ModelServing entry pod as recorded
    from a real API server (about 7 KB in the review), lacking the scheduler and role id that
    ServingGate adds (not the PodGroup annotations: its owner ModelServing does not exist here, so
    Kthena would make no PodGroup for it); see `kthena_template`. `settled`: the tiny pod already
    carrying what ServingGate adds to it (its scheduler and PodGroup annotation), so that ours
    allows it unchanged as agnhost's `/mutating-pods` does: the API server applies no patch for
    either, and what is left between them is the serving path."""
    if shape in ("tiny", "settled"):
        tiny = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "bench", "servinggate.io/gang": "bench"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        }
        if shape == "settled":
            tiny["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "bench"}
            tiny["spec"]["schedulerName"] = "volcano"
        return tiny
    template = kthena_template()
    return {**template, "metadata": {**template["metadata"], "name": name}}  # only serialised: sharing is safe


@functools.cache
def kthena_template() -> dict:
    """The recorded pod, read once (creates are timed), without what the API server's own
    admission would refuse or add again (owner, service account volume, priority)."""
    recorded = json.loads(KTHENA_POD.read_text())["request"]["object"]
    spec = {
        k: v for k, v in recorded["spec"].items() if k not in ("volumes", "serviceAccount", "serviceAccountName", "priority", "preemptionPolicy", "nodeName")
    }
    spec["containers"] = [{k: v for k, v in c.items() if k != "volumeMounts"} for c in spec["containers"]]
    meta = recorded["metadata"]
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": {"labels": meta.get("labels", {}), "annotations": meta.get("annotations", {})}}


def create_pods(api: Api, namespace: str, creates: int, concurrency: int, shape: str = "tiny") -> tuple[list[float], list[str], float]:
    """`creates` pod creates with `concurrency` in flight: (latencies in s, error messages, wall s)."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    next_index = iter(range(creates))
    start = threading.Barrier(concurrency + 1)

    def worker() -> None:
        try:
            api.connection().connect()  # TCP + TLS handshake before the clock starts
        except OSError:
            pass  # the first create reconnects and counts the failure if it persists
        start.wait()
        while True:
            with lock:
                i = next(next_index, None)
            if i is None:
                return
            t0 = time.perf_counter()
            try:
                status, body = api.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod(f"p-{i:05d}", shape))
                problem = None if status == 201 else f"HTTP {status}: {body.get('message', '')[:160]}"
            except Exception as exc:  # a benchmark counts every kind of failure
                problem = f"{type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - t0
            with lock:
                (errors.append(problem) if problem else latencies.append(elapsed))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return latencies, errors, time.perf_counter() - t0


# ---- watching the webhook's side from /proc -----------------------------------------------------


class Sampler(threading.Thread):
    """Samples, every 0.1 s until stopped, the connections to `port` and (with a gunicorn master)
    each worker's share of them. Over the whole round it counts, for any webhook, the CPU of the
    processes listening on `port` and the TCP connections the machine accepted: a create is CPU
    taken from the API server on the same cores, and each new connection is a TLS handshake on
    both sides (the API server keeps at most 25 idle connections to a webhook)."""

    def __init__(self, port: int, master: int | None) -> None:
        super().__init__(daemon=True)
        self.port, self.master = port, master
        self.stop_event = threading.Event()
        self.totals: list[int] = []
        self.peers: set[str] = set()  # every connection seen: how many the API server opened
        self.spreads: list[tuple[int, ...]] = []
        self.cpu_before = self._cpu()
        self.listeners = listening_pids(port)
        self.listeners_cpu = sum(cpu_seconds(pid) for pid in self.listeners)
        self.accepted = passive_opens()

    def _cpu(self) -> dict[int, float]:
        if self.master is None:
            return {}
        return {pid: cpu_seconds(pid) for pid in worker_pids(self.master)}

    def run(self) -> None:
        while True:  # one last sample after the stop: keep-alive connections outlive the round
            stopping = self.stop_event.is_set()
            peers = set(established(self.port).values())
            self.totals.append(len(peers))
            self.peers |= peers
            if self.master is not None:
                counts = connections_per_worker(self.master, self.port)
                self.spreads.append(tuple(counts[pid] for pid in sorted(counts)))
            if stopping:
                return
            self.stop_event.wait(0.1)

    def finish(self, creates: int) -> str:
        self.stop_event.set()
        self.join()
        accepted = passive_opens() - self.accepted
        cpu = sum(cpu_seconds(pid) for pid in self.listeners) - self.listeners_cpu
        text = (
            f"conns to :{self.port} max {max(self.totals, default=0)} at once, at the end {self.totals[-1]}, "
            f"{len(self.peers)} distinct seen; {accepted} accepted on this machine; "
            f"webhook CPU {1000 * cpu / max(creates, 1):.2f} ms a create"
        )
        if self.spreads:
            busiest = max(self.spreads, key=sum)
            distinct = sorted(set(self.spreads), key=self.spreads.count, reverse=True)
            after = self._cpu()
            cpu = [after[p] - self.cpu_before.get(p, 0.0) for p in sorted(after)]
            text += (
                f"; per worker at the peak {list(busiest)}, most seen {list(distinct[0])} "
                f"({self.spreads.count(distinct[0])}/{len(self.spreads)} samples), "
                f"{len(distinct)} distinct spreads; worker CPU s {[round(c, 2) for c in cpu]}"
            )
        return text


# ---- the webhook calls as the API server times them ---------------------------------------------

WEBHOOK_NAME = "pods.bench.servinggate.io"


def webhook_calls(api: Api) -> dict[str, float]:
    """The API server's own histogram of this benchmark's webhook calls (cumulative: bucket upper
    bound -> count, plus `sum`), from its /metrics. Its time starts before the connection to the
    webhook is taken or opened and ends when the answer is decoded, so it holds what the webhook
    and the connection to it cost, without the rest of the create."""
    try:
        text = api.text("/metrics")
    except (http.client.HTTPException, OSError):
        return {}  # the line then says none were seen
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_admission_webhook_admission_duration_seconds") or f'name="{WEBHOOK_NAME}"' not in line:
            continue
        name, _, value = line.rpartition(" ")
        if "_bucket{" in name:
            le = name.split('le="', 1)[1].split('"', 1)[0]
            out[le] = out.get(le, 0.0) + float(value)
        elif name.startswith("apiserver_admission_webhook_admission_duration_seconds_sum"):
            out["sum"] = out.get("sum", 0.0) + float(value)
    return out


def calls_between(before: dict[str, float], after: dict[str, float]) -> str:
    """One round's webhook calls: how many, their mean, and the share slower than each bound."""
    diff = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    total = diff.get("+Inf", 0.0)
    if not total:
        return "webhook calls: none seen in the API server's metrics"
    shares = "  ".join(f">{float(le) * 1000:g}ms {100 * (total - diff[le]) / total:4.1f}%" for le in ("0.005", "0.025", "0.1", "0.5") if le in diff)
    return f"webhook calls timed by the API server: {total:.0f}, mean {1000 * diff.get('sum', 0.0) / total:6.1f} ms; {shares}"


# ---- the benchmark ------------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(-(-q * len(sorted_values) // 100)) - 1))
    return sorted_values[k]


def run_round(api: Api, args, run_id: str, k: int, label: str, url: str | None, ca_bundle: bytes) -> dict:
    namespace = f"sg-bench-{run_id}-{label}-{k}"
    config_name = f"sg-bench-{run_id}"
    expect(
        api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {NS_LABEL: namespace}}}),
        201,
    )
    wait(f"ServiceAccount {namespace}/default", 60, lambda: api.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")[0] == 200)
    if url:
        expect(
            api.request(
                "POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", webhook_configuration(config_name, url, ca_bundle, namespace)
            ),
            201,
        )
    time.sleep(args.settle)

    sampler = None
    if url:
        port = urlsplit(url).port or 443
        master = args.gunicorn_master if port == args.gunicorn_port else None
        sampler = Sampler(port, master)
        sampler.start()
    calls_before = webhook_calls(api) if url else {}
    try:
        latencies, errors, wall = create_pods(api, namespace, args.creates, args.concurrency, args.pod)
    finally:
        watched = sampler.finish(args.creates) if sampler else ""
        if url:
            watched += "\n" + " " * 20 + calls_between(calls_before, webhook_calls(api))
        status, first = api.request("GET", f"/api/v1/namespaces/{namespace}/pods/p-00000")
        scheduler = (first.get("spec") or {}).get("schedulerName") if status == 200 else f"(HTTP {status})"
        if url:
            expect(api.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{config_name}"), 200)
        expect(api.request("DELETE", f"/api/v1/namespaces/{namespace}"), 200, 202)
        wait(f"namespace {namespace} deleted", 300, lambda: api.request("GET", f"/api/v1/namespaces/{namespace}")[0] == 404)

    ms = sorted(v * 1000 for v in latencies)
    return {
        "label": label,
        "round": k,
        "ok": len(ms),
        "errors": errors,
        "wall": wall,
        "scheduler": scheduler,
        "ms": ms,
        "watched": watched,
        **{f"p{q}": percentile(ms, q) for q in (50, 90, 99)},
        "max": ms[-1] if ms else float("nan"),
    }


def pooled(results: list[dict], labels: list[str], resamples: int = 2000, seed: int = 0) -> str:
    """Every round's creates of a kind taken together, and each pair of webhooks compared on that.

    One round's p99 of 400 creates is its fourth-slowest create, and on a crowded 2-core machine
    it moves by up to 100 ms from round to round for every webhook, agnhost included: a few rounds
    cannot tell a 30 ms difference. Pooling the rounds gives each kind's p99 over thousands of
    creates, and the interval says how far that difference moves when the rounds themselves are
    drawn again (a bootstrap over round indices, the same indices for both kinds, since rounds of
    one index ran back to back on the same machine state)."""
    rounds = sorted({r["round"] for r in results if r["label"] == "none"})
    by = {(r["label"], r["round"]): r["ms"] for r in results}
    kinds = [label for label in labels if all((label, k) in by for k in rounds)]
    if "none" not in kinds or len(rounds) < 2:
        return ""

    def p(label: str, picks: list[int], q: float) -> float:
        return percentile(sorted(v for k in picks for v in by[(label, k)]), q)

    whole = {label: (p(label, rounds, 50), p(label, rounds, 99)) for label in kinds}
    webhooks = [label for label in kinds if label != "none"]
    lines = [f"\nall {len(rounds)} rounds pooled, added to `none` (ms):"]
    for label in webhooks:
        lines.append(f"{label:>10}: p50 {whole[label][0] - whole['none'][0]:+7.1f}   p99 {whole[label][1] - whole['none'][1]:+7.1f}")
    draw = random.Random(seed)
    samples = [[draw.choice(rounds) for _ in rounds] for _ in range(resamples)]
    redrawn = {label: [p(label, picks, 99) for picks in samples] for label in webhooks}  # once per kind, not per pair
    for i, a in enumerate(webhooks):
        for b in webhooks[i + 1 :]:
            diffs = sorted(x - y for x, y in zip(redrawn[a], redrawn[b]))
            lines.append(
                f"{a} minus {b} at p99, pooled: {whole[a][1] - whole[b][1]:+.1f} ms; "
                f"90% of {resamples} redraws of the rounds within {diffs[resamples // 20]:+.1f} .. "
                f"{diffs[-1 - resamples // 20]:+.1f} ms"
            )
    return "\n".join(lines)


def show(r: dict) -> str:
    return (
        f"{r['label']:>10} round {r['round']}: p50 {r['p50']:7.1f}  p90 {r['p90']:7.1f}  p99 {r['p99']:7.1f}  "
        f"max {r['max']:7.1f} ms  ok {r['ok']}  errors {len(r['errors'])}  {r['ok'] / r['wall']:6.1f} creates/s  "
        f"schedulerName {r['scheduler']}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG", str(Path.home() / ".kube/config")))
    p.add_argument("--url", action="append", help="[NAME=]URL of the webhook, or `none` for no webhook; repeat to interleave several")
    p.add_argument("--ca-file", help="CA of the webhooks' serving certificates (the caBundle)")
    p.add_argument("--creates", type=int, default=400)
    p.add_argument("--concurrency", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--pod",
        choices=["tiny", "settled", "kthena"],
        default="tiny",
        help="the pod created: one busybox container, the same with what ServingGate adds already set, or a recorded Kthena entry pod (see `pod`)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the order the kinds run in, drawn anew each round")
    p.add_argument("--settle", type=float, default=2.0, help="seconds between registering the webhook and creating")
    p.add_argument("--gunicorn-master", type=int, help="pid of the gunicorn master, to count connections per worker")
    p.add_argument("--gunicorn-port", type=int, default=8443, help="the gunicorn server's port")
    args = p.parse_args()
    if not args.url:
        print("skipped: needs a real control plane and the webhooks to compare, given as --url (see the Usage in this script's docstring)")
        return

    targets: list[tuple[str, str | None]] = []
    for spec in args.url:
        name, sep, url = spec.partition("=")
        if not sep:
            name, url = ("none", "") if spec == "none" else (urlsplit(spec).path.strip("/") or "webhook", spec)
        targets.append((name, url or None))
    if any(url for _, url in targets) and not args.ca_file:
        p.error("--ca-file is needed with a webhook URL")
    ca_bundle = Path(args.ca_file).read_bytes() if args.ca_file else b""

    api = Api(args.kubeconfig)
    run_id = uuid.uuid4().hex[:6]
    print(
        f"{args.creates} pod creates, {args.concurrency} in flight, {args.rounds} rounds (order seed {args.seed}), {args.pod} pods; kinds {[n for n, _ in targets]}"
    )
    results: list[dict] = []
    order = random.Random(args.seed)
    for k in range(1, args.rounds + 1):
        # a new order every round: rotating one order would keep each kind right after the same other
        for label, url in order.sample(targets, len(targets)):
            r = run_round(api, args, run_id, k, label, url, ca_bundle)
            results.append(r)
            print(show(r), flush=True)
            if r["watched"]:
                print(f"{'':>10}          {r['watched']}", flush=True)
            for msg in sorted(set(r["errors"]))[:5]:
                print(f"{'':>10}          error x{r['errors'].count(msg)}: {msg}", flush=True)

    print("\nworst round (by p99) of each:")
    for label, _ in targets:
        print(show(max((r for r in results if r["label"] == label), key=lambda r: r["p99"])))
    base = {r["round"]: r for r in results if r["label"] == "none"}
    if base:
        print("\nadded to `none`, round by round (ms):")
        for label, _ in targets:
            if label == "none":
                continue
            rows = [r for r in results if r["label"] == label and r["round"] in base]
            for q in ("p50", "p99", "max"):
                diffs = [r[q] - base[r["round"]][q] for r in rows]
                print(f"{label:>10} {q}: {'  '.join(f'{d:+7.1f}' for d in diffs)}   (range {min(diffs):+.1f} .. {max(diffs):+.1f})")
        print(pooled(results, [label for label, _ in targets]))


if __name__ == "__main__":
    main()
