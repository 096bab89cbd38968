"""`python -m webhook reconcile`: keep pod deletion costs current from a watched cache.

Threads: one list+watch loop per kind (Nodes, Pods) feeding a queue; one worker that owns the
cache, re-scores only the nodes an event touches and sends rate-limited, `test`-guarded JSON
Patches; a lease loop when --leader-elect; a tiny HTTP server for /healthz and /metrics.
All Kubernetes I/O goes through the official client."""

from __future__ import annotations

import argparse
import gc
import heapq
import http.server
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import prometheus_client as prom
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

from .. import config, logs
from ..kube import KubeAccessError, Request, describe_api_error, load_api_client
from . import scoring
from .cluster import Cluster, WorkloadTypes
from .leading import LeaderElector
from .settings import RECORD_KEY, ReconcileSettings

log = logging.getLogger("servinggate.scalein")

JSON_PATCH = "application/json-patch+json"
MAX_BACKOFF = 60.0
MAX_RETRY_AFTER = 120.0


class Metrics:
    def __init__(self, registry: prom.CollectorRegistry | None = None):
        self.registry = registry or prom.CollectorRegistry()
        r = self.registry
        self.writes = prom.Counter("servinggate_scalein_writes", "pod patches sent", ["kind"], registry=r)
        self.skips = prom.Counter("servinggate_scalein_skips", "pods whose cost was not written", ["reason"], registry=r)
        self.conflicts = prom.Counter("servinggate_scalein_conflicts", "patches refused because the pod changed (422 test failed, 409)", registry=r)
        self.errors = prom.Counter("servinggate_scalein_errors", "failed API calls", ["op", "code"], registry=r)
        self.scored = prom.Gauge("servinggate_scalein_pods_scored", "pods with a desired cost in the cache", registry=r)
        self.pass_seconds = prom.Histogram("servinggate_scalein_pass_duration_seconds", "duration of a scoring pass (full or one event)", ["scope"],
                                           buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10), registry=r)
        self.leader = prom.Gauge("servinggate_scalein_leader", "1 while this replica may write", registry=r)
        self.relists = prom.Counter("servinggate_scalein_relists", "full lists (start, 410 Gone)", ["kind"], registry=r)


class RateLimiter:
    """Token bucket: `qps` tokens a second, bursts of at most `qps`."""

    def __init__(self, qps: float, clock: Callable[[], float] = time.monotonic):
        self.qps, self.clock = float(qps), clock
        self.tokens, self.stamp = float(qps), clock()

    def delay(self) -> float:
        """Take a token if there is one (0.0), else the seconds until there is."""
        now = self.clock()
        self.tokens = min(self.qps, self.tokens + (now - self.stamp) * self.qps)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.qps


def retry_after(exc: ApiException, default: float) -> float:
    headers = getattr(exc, "headers", None) or {}
    raw = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return min(max(float(raw), 0.0), MAX_RETRY_AFTER) if raw is not None else default
    except ValueError:
        return default


class Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


def resolve_types(api_client: client.ApiClient, settings: ReconcileSettings) -> WorkloadTypes:
    """Third-party resource -> kind through discovery; a type the cluster does not serve is a
    warning, the others go on."""
    custom = client.CustomObjectsApi(api_client)
    kinds = []
    for group, version, resource in settings.third_party():
        entry = f"{group}/{version}/{resource}"
        try:
            resp = custom.get_api_resources(group, version, _preload_content=False)
            body = orjson.loads(resp.data)
        except ApiException as exc:
            log.warning({"msg": "third-party type not served by the cluster; ignored", "type": entry, "status": exc.status})
            continue
        except Exception as exc:  # noqa: BLE001 - discovery must not stop the start
            log.warning({"msg": "cannot discover third-party type; ignored", "type": entry, "error": str(exc)})
            continue
        kind = next((r.get("kind") for r in body.get("resources") or () if r.get("name") == resource), None)
        if not kind:
            log.warning({"msg": "third-party type not served by the cluster; ignored", "type": entry})
            continue
        kinds.append((group, kind))
        log.info({"msg": "scoring third-party type", "type": entry, "kind": kind})
    return WorkloadTypes(kinds)


class Reconciler:
    def __init__(self, settings: ReconcileSettings, api_client: client.ApiClient, metrics: Metrics | None = None, *,
                 may_write: Callable[[], bool] = lambda: True, stop: threading.Event | None = None,
                 sleep_cap: float = MAX_BACKOFF):
        self.settings = settings
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.metrics = metrics or Metrics()
        self.may_write = may_write
        self.stop = stop or threading.Event()
        self.sleep_cap = sleep_cap
        self.events: queue.Queue = queue.Queue()
        self.cluster: Cluster | None = None
        self.synced = {"nodes": False, "pods": False}
        self.retries: list[tuple[float, str]] = []  # heap of (due, pod key)
        self.failures: dict[str, int] = {}
        self.limiter = RateLimiter(settings.scoring_qps)
        self.heartbeat = time.monotonic()
        self.threads: list[threading.Thread] = []
        self.desired_by_node: dict[str, dict[str, int]] = {}
        self.scored_count = 0
        # pods we patched: the resourceVersion our patch produced. Watch events older than it are
        # still queued behind it and must not roll the cache back (that would resend the write).
        self.awaiting: dict[str, str] = {}

    # -- health --------------------------------------------------------------------------------

    def healthy(self) -> bool:
        return time.monotonic() - self.heartbeat < 60 and all(t.is_alive() for t in self.threads)

    # -- list + watch ----------------------------------------------------------------------------

    def _list_fn(self, kind: str) -> Callable[..., Any]:
        return self.core.list_node if kind == "nodes" else self.core.list_pod_for_all_namespaces

    def list_all(self, kind: str) -> tuple[list[dict], str]:
        """A full list in pages of 500, decoded straight from JSON (no model objects)."""
        items: list[dict] = []
        cont = None
        while True:
            resp = self._list_fn(kind)(limit=500, _continue=cont, _preload_content=False, _request_timeout=60)
            body = orjson.loads(resp.data)
            items += body.get("items") or []
            meta = body.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                return items, meta.get("resourceVersion") or ""

    def watch_once(self, kind: str, rv: str) -> str:
        """One watch request from `rv`; events go to the queue; returns the last resourceVersion."""
        resp = self._list_fn(kind)(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                   timeout_seconds=self.settings.watch_timeout_seconds, _preload_content=False,
                                   _request_timeout=(10, self.settings.watch_timeout_seconds + 30))
        try:
            for line in iter_resp_lines(resp):
                if self.stop.is_set():
                    break
                if not line:
                    continue
                event = orjson.loads(line)
                etype, obj = event.get("type"), event.get("object") or {}
                if etype == "ERROR":
                    code = obj.get("code")
                    if code == 410:
                        raise Gone(obj.get("message", ""))
                    raise ApiException(status=code or 500, reason=f"watch error: {obj.get('reason')}: {obj.get('message')}")
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if etype in ("ADDED", "MODIFIED", "DELETED"):
                    self.events.put((etype, kind, obj))
        finally:
            resp.close()
            resp.release_conn()
        return rv

    def watch_loop(self, kind: str) -> None:
        rv, backoff = "", 1.0
        while not self.stop.is_set():
            try:
                if not rv:
                    items, rv = self.list_all(kind)
                    self.metrics.relists.labels(kind).inc()
                    self.events.put(("REPLACE", kind, items))
                rv = self.watch_once(kind, rv)
                backoff = 1.0
            except Gone:
                log.info({"msg": "watch expired (410 Gone); listing again", "kind": kind})
                rv = ""
            except ApiException as exc:
                if exc.status == 410:
                    log.info({"msg": "watch expired (410 Gone); listing again", "kind": kind})
                    rv = ""
                    continue
                self.metrics.errors.labels(f"watch-{kind}", str(exc.status)).inc()
                wait = retry_after(exc, backoff) if exc.status == 429 else backoff
                log.warning({"msg": "list/watch failed; backing off", "kind": kind, "status": exc.status, "seconds": wait})
                self.stop.wait(min(wait, self.sleep_cap))
                backoff = min(backoff * 2, MAX_BACKOFF)
            except Exception as exc:  # noqa: BLE001 - network trouble: back off, go on
                if self.stop.is_set():
                    break
                self.metrics.errors.labels(f"watch-{kind}", "0").inc()
                log.warning({"msg": "list/watch failed; backing off", "kind": kind, "error": repr(exc), "seconds": backoff})
                self.stop.wait(min(backoff, self.sleep_cap))
                backoff = min(backoff * 2, MAX_BACKOFF)

    # -- the worker ------------------------------------------------------------------------------

    def start(self, types: WorkloadTypes) -> None:
        self.cluster = Cluster(self.settings, types)
        for kind in ("nodes", "pods"):
            t = threading.Thread(target=self.watch_loop, args=(kind,), name=f"watch-{kind}", daemon=True)
            t.start()
            self.threads.append(t)

    def apply(self, etype: str, kind: str, obj: Any) -> set[str]:
        """Apply one queued event to the cache; the nodes whose pods need re-scoring."""
        c = self.cluster
        assert c is not None
        if etype == "RESYNC":
            return set(c.by_node) | set(c.nodes) | set(self.desired_by_node)
        if etype == "REPLACE":
            if kind == "pods":
                self.awaiting.clear()
            if kind == "nodes":
                c.replace_nodes(obj)
            else:
                c.replace_pods(obj)
            # the cache is long-lived: keep the cyclic GC from re-scanning it on every collection
            gc.collect()
            gc.freeze()
            self.synced[kind] = True
            return set(c.by_node) | set(c.nodes) | set(self.desired_by_node)
        meta = obj.get("metadata") or {}
        if kind == "nodes":
            return c.delete_node(meta.get("name", "")) if etype == "DELETED" else c.upsert_node(obj)
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if etype == "DELETED":
            self.failures.pop(key, None)
            self.awaiting.pop(key, None)
            return c.delete_pod(key)
        waiting = self.awaiting.get(key)
        if waiting is not None:
            if meta.get("resourceVersion") != waiting:
                return set()  # an event from before our own patch
            del self.awaiting[key]
        return c.upsert_pod(obj)

    def run(self) -> None:
        """The worker loop, until `stop`."""
        last_full = time.monotonic()
        while not self.stop.is_set():
            self.heartbeat = time.monotonic()
            dirty: set[str] = set()
            try:
                item = self.events.get(timeout=self._next_wait())
                dirty |= self._apply_safely(item)
                while True:  # drain what is queued, so a burst is scored once
                    dirty |= self._apply_safely(self.events.get_nowait())
            except queue.Empty:
                pass
            if not all(self.synced.values()):
                continue
            resync = self.settings.resync_seconds
            if resync and time.monotonic() - last_full > resync:
                dirty |= set(self.cluster.by_node) | set(self.desired_by_node)
                last_full = time.monotonic()
            if dirty:
                self.reconcile_nodes(dirty)
            self._run_due_retries()

    def _apply_safely(self, item: tuple) -> set[str]:
        """One malformed object is logged and skipped; it never stops the loop."""
        try:
            return self.apply(*item)
        except Exception:  # noqa: BLE001
            self.metrics.errors.labels("event", "0").inc()
            obj = item[2] if isinstance(item[2], dict) else {}
            log.exception({"msg": "cannot apply event; skipped", "type": item[0], "kind": item[1],
                           "name": (obj.get("metadata") or {}).get("name")})
            return set()

    def _next_wait(self) -> float:
        if self.retries:
            return max(0.0, min(1.0, self.retries[0][0] - time.monotonic()))
        return 1.0

    def reconcile_nodes(self, nodes: set[str]) -> int:
        """Score the pods on `nodes` and patch those whose cost differs. Returns patches sent."""
        c = self.cluster
        assert c is not None
        started = time.perf_counter()
        desired: dict[str, int] = {}
        for name in nodes:
            on_node = c.desired_on(name)
            self.scored_count += len(on_node) - len(self.desired_by_node.get(name, ()))
            if on_node:
                self.desired_by_node[name] = on_node
            else:
                self.desired_by_node.pop(name, None)
            desired.update(on_node)
        self.metrics.pass_seconds.labels("full" if len(nodes) > 1 else "event").observe(time.perf_counter() - started)
        self.metrics.scored.set(self.scored_count)
        sent = 0
        for key in sorted(desired):
            if self.stop.is_set():
                break
            sent += self._sync_safely(key, desired[key])
        return sent

    def _sync_safely(self, key: str, want: int) -> int:
        try:
            return self.sync_pod(key, want)
        except Exception:  # noqa: BLE001 - one bad pod never stops the others
            self.metrics.errors.labels("sync", "0").inc()
            log.exception({"msg": "cannot reconcile pod; retrying later", "pod": key})
            self._retry_later(key)
            return 0

    def _run_due_retries(self) -> None:
        now = time.monotonic()
        due = set()
        while self.retries and self.retries[0][0] <= now:
            due.add(heapq.heappop(self.retries)[1])
        c = self.cluster
        for key in sorted(due):
            pod = c.pods.get(key) if c else None
            if pod is None or not pod.node:
                continue
            want = c.desired_on(pod.node).get(key)
            if want is not None:
                self._sync_safely(key, want)

    def _retry_later(self, key: str, seconds: float | None = None) -> None:
        n = self.failures.get(key, 0) + 1
        self.failures[key] = n
        delay = seconds if seconds is not None else min(2.0 ** n, 300.0)
        heapq.heappush(self.retries, (time.monotonic() + delay, key))

    def sync_pod(self, key: str, want: int) -> int:
        """Bring one pod's cost to `want` if we may. Returns 1 if a patch was sent."""
        c = self.cluster
        assert c is not None
        s = self.settings
        self.heartbeat = time.monotonic()
        pod = c.pods.get(key)
        if pod is None:
            return 0
        d = c.decision(key, want)
        if d.action == scoring.NONE:
            self.metrics.skips.labels("unchanged").inc()
            return 0
        if d.action == scoring.FOREIGN:
            self.metrics.skips.labels("foreign").inc()
            log.debug({"msg": "cost set by someone else; left alone (scale-in-priority wl)", "pod": key, "value": d.value})
            return 0
        ops = scoring.write_patch(pod.annotations, pod.resource_version, s.score_annotation_key, RECORD_KEY, str(want))
        if s.dry_run or not s.enable_scale_in_score:
            self.metrics.skips.labels("dry-run" if s.dry_run else "disabled").inc()
            log.info({"msg": "would write cost (dry run)", "pod": key, "from": pod.annotation(s.score_annotation_key), "to": want})
            return 0
        if not self.may_write():
            self.metrics.skips.labels("not-leader").inc()
            return 0
        if d.action == scoring.OVERWRITE:
            log.info({"msg": "overwriting a cost set by someone else (scale-in-priority binpack)", "pod": key,
                      "from": pod.annotation(s.score_annotation_key), "to": want})
        return self.patch(key, ops, "overwrite" if d.action == scoring.OVERWRITE else "write")

    def patch(self, key: str, ops: list[dict], kind: str) -> int:
        """Send one guarded JSON Patch, rate limited; handle every outcome without raising."""
        wait = self.limiter.delay()
        while wait > 0 and not self.stop.is_set():
            self.stop.wait(wait)
            wait = self.limiter.delay()
        if self.stop.is_set():
            return 0
        ns, _, name = key.partition("/")
        try:
            resp = self.core.patch_namespaced_pod(name, ns, ops, _content_type=JSON_PATCH, _preload_content=False, _request_timeout=30)
            body = orjson.loads(resp.data)
        except ApiException as exc:
            return self._patch_failed(key, exc)
        except Exception as exc:  # noqa: BLE001 - one bad pod never stops the loop
            self.metrics.errors.labels("patch", "0").inc()
            log.warning({"msg": "patch failed", "pod": key, "error": repr(exc)})
            self._retry_later(key)
            return 1
        self.metrics.writes.labels(kind).inc()
        self.failures.pop(key, None)
        if self.cluster is not None and isinstance(body, dict) and body.get("metadata"):
            self.cluster.upsert_pod(body)  # the watch will confirm; meanwhile don't re-send
            self.awaiting[key] = body["metadata"].get("resourceVersion") or ""
        log.info({"msg": "cost written", "pod": key, "ops": ops[-1]["value"] if ops else None})
        return 1

    def _patch_failed(self, key: str, exc: ApiException) -> int:
        code = exc.status
        if code == 404:  # gone; the watch will delete it
            self.metrics.skips.labels("gone").inc()
            self.cluster.delete_pod(key)
            return 1
        if code in (409, 422):
            # the pod changed under us (a failed `test`, or a storage conflict): read it again
            # and decide from what it holds now; never resend the same patch blindly
            self.metrics.conflicts.inc()
            log.info({"msg": "pod changed since read; re-reading", "pod": key, "status": code})
            self._reread(key)
            return 1
        self.metrics.errors.labels("patch", str(code)).inc()
        if code == 429:
            delay = retry_after(exc, 1.0)
            log.warning({"msg": "throttled by the API server", "pod": key, "retry_after": delay})
            self._retry_later(key, delay)
            self.stop.wait(min(delay, self.sleep_cap))  # respect Retry-After for all writes
            return 1
        log.warning({"msg": "patch failed", "pod": key, "status": code})
        self._retry_later(key)
        return 1

    def _reread(self, key: str) -> None:
        ns, _, name = key.partition("/")
        before = self.cluster.pods.get(key)
        try:
            resp = self.core.read_namespaced_pod(name, ns, _preload_content=False, _request_timeout=30)
            fresh = orjson.loads(resp.data)
        except ApiException as exc:
            if exc.status == 404:
                self.cluster.delete_pod(key)
                return
            self.metrics.errors.labels("read", str(exc.status)).inc()
            self._retry_later(key)
            return
        except Exception:  # noqa: BLE001
            self.metrics.errors.labels("read", "0").inc()
            self._retry_later(key)
            return
        self.awaiting.pop(key, None)
        self.cluster.upsert_pod(fresh)
        after = self.cluster.pods[key]
        if before is not None and before.resource_version == after.resource_version:
            # the same object refused our patch: something other than a race; back off
            self._retry_later(key)
        else:
            heapq.heappush(self.retries, (time.monotonic(), key))

    # -- clear -----------------------------------------------------------------------------------

    def clear(self) -> tuple[int, int]:
        """Remove the costs we wrote where our record still matches. Returns (patched, failed)."""
        pods, _ = self.list_all("pods")
        done = failed = 0
        s = self.settings
        for pod in pods:
            meta = pod.get("metadata") or {}
            ops = scoring.clear_patch(meta.get("annotations"), s.score_annotation_key, RECORD_KEY)
            if not ops:
                continue
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            if s.dry_run:
                log.info({"msg": "would clear cost (dry run)", "pod": key})
                continue
            for _ in range(3):
                wait = self.limiter.delay()
                while wait > 0:
                    time.sleep(wait)
                    wait = self.limiter.delay()
                try:
                    self.core.patch_namespaced_pod(meta["name"], meta["namespace"], ops, _content_type=JSON_PATCH, _preload_content=False, _request_timeout=30)
                    self.metrics.writes.labels("clear").inc()
                    done += 1
                    break
                except ApiException as exc:
                    if exc.status == 404:
                        break
                    if exc.status in (409, 422):  # changed: decide again from a fresh read
                        self.metrics.conflicts.inc()
                        try:
                            fresh = orjson.loads(self.core.read_namespaced_pod(meta["name"], meta["namespace"], _preload_content=False).data)
                        except ApiException:
                            failed += 1
                            break
                        ops = scoring.clear_patch((fresh.get("metadata") or {}).get("annotations"), s.score_annotation_key, RECORD_KEY)
                        if not ops:
                            break
                        continue
                    self.metrics.errors.labels("clear", str(exc.status)).inc()
                    time.sleep(min(retry_after(exc, 1.0), self.sleep_cap) if exc.status == 429 else min(1.0, self.sleep_cap))
            else:
                failed += 1
        return done, failed


# ---- health and metrics endpoint ----------------------------------------------------------------


def serve_health(host: str, port: int, healthy: Callable[[], bool], metrics: Metrics) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            if self.path.split("?")[0] == "/healthz":
                ok = healthy()
                body, code, ctype = (b"ok\n" if ok else b"unhealthy\n"), (200 if ok else 503), "text/plain"
            elif self.path.split("?")[0] == "/metrics":
                body, code, ctype = prom.generate_latest(metrics.registry), 200, prom.CONTENT_TYPE_LATEST
            else:
                body, code, ctype = b"not found\n", 404, "text/plain"
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    return server


# ---- the command ------------------------------------------------------------------------------


def api_client_for(settings: ReconcileSettings) -> client.ApiClient:
    """The shared loader with `--kubeconfig`; its failure is a start error naming the flag."""
    try:
        return load_api_client(settings.kubeconfig)
    except KubeAccessError as exc:
        raise config.ConfigError(f"--kubeconfig: {exc}") from None


def preflight(api_client: client.ApiClient) -> None:
    """One small read of each kind the reconciler lists, before any thread starts.

    Once running, the reconciler backs off and retries forever, which is right for a blip but
    hides a reconciler that never had access: a missing RBAC grant or a wrong server address
    would show only as warnings in its log. Checked here, they stop the start with one line
    (`KubeAccessError`, exit 2) naming the refused verb and resource or the unreachable host."""
    core = client.CoreV1Api(api_client)
    host = str(getattr(api_client.configuration, "host", "") or "")
    checks: list[tuple[Request, Callable[..., Any]]] = [
        (Request("list", "nodes"), core.list_node),
        (Request("list", "pods"), core.list_pod_for_all_namespaces),
    ]
    for request, call in checks:
        try:
            call(limit=1, _preload_content=False, _request_timeout=10).release_conn()
        except (ApiException, HTTPError) as exc:
            raise KubeAccessError(describe_api_error(exc, request, host)) from exc


def run(settings: ReconcileSettings, api_client: client.ApiClient, stop: threading.Event, metrics: Metrics | None = None,
        *, clear: bool = False) -> int:
    """Everything `main` does after parsing, with the client and the stop signal injected."""
    metrics = metrics or Metrics()
    if clear:
        done, failed = Reconciler(settings, api_client, metrics, stop=stop).clear()
        log.info({"msg": "cleared costs we wrote", "pods": done, "failed": failed})
        return 0 if not failed else 1
    elector = None
    if settings.leader_elect:
        elector = LeaderElector(client.CoordinationV1Api(api_client), name=settings.lease_name, namespace=settings.lease_namespace,
                                identity=settings.holder_identity(), lease_duration=settings.lease_duration_seconds,
                                renew_deadline=settings.renew_deadline_seconds, retry_period=settings.retry_period_seconds)
    may_write = elector.is_leader if elector else (lambda: True)
    rec = Reconciler(settings, api_client, metrics, may_write=may_write, stop=stop)
    server = serve_health(settings.health_host, settings.health_port, rec.healthy, metrics) if settings.health_port else None
    try:
        if not settings.enable_scale_in_score and not settings.dry_run:
            log.info({"msg": "enable-scale-in-score is off: writing nothing, existing costs stay"})
            while not stop.wait(1.0):
                rec.heartbeat = time.monotonic()
            return 0
        if elector:
            def changed(leading: bool) -> None:
                metrics.leader.set(1 if leading else 0)
                if leading:  # pods skipped while we were not leading get their turn now
                    rec.events.put(("RESYNC", "", None))
            threading.Thread(target=elector.run, args=(stop, changed), name="lease", daemon=True).start()
        else:
            metrics.leader.set(1)
        rec.start(resolve_types(api_client, settings))
        rec.run()
        return 0
    finally:
        if server:
            server.shutdown()
            server.server_close()


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook reconcile", description="write pod-deletion-cost so that scale-in compacts accelerators")
    parser.add_argument("--clear", action="store_true", help="remove the costs we wrote (where our record still matches), then exit")
    config.add_arguments(parser, ReconcileSettings)
    args = parser.parse_args(list(argv))
    settings = config.load(ReconcileSettings, args)
    logs.configure(settings.log_level)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    api_client = api_client_for(settings)
    if args.clear or settings.enable_scale_in_score or settings.dry_run:  # otherwise it reads nothing
        preflight(api_client)
    return run(settings, api_client, stop, clear=args.clear)
