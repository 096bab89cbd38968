"""The reconciler's worker: it owns the cache, re-scores only the nodes an event touches, and
writes the costs that differ.

Events come from watching.py (one list+watch loop per kind); writes go through patching.py (the
same guarded, rate-limited JSON Patch `--clear` uses). The worker is one thread, so the cache
needs no lock; what it cannot write now it retries later from a heap of due times, with
exponential back-off per pod, and a pod that refused a patch is read again before anything is
sent (the decision is made afresh from what the pod holds now)."""

from __future__ import annotations

import gc
import heapq
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from . import scoring
from .cluster import Cluster, WorkloadTypes
from .health import Metrics
from .pacing import MAX_BACKOFF, RateLimiter
from .patching import Outcome, Patcher
from .settings import RECORD_KEY, ReconcileSettings
from .watching import KINDS, Event, Watcher

log = logging.getLogger("servinggate.scalein")


class Reconciler:
    """Keeps the pods' deletion costs current from a watched cache, until `stop`."""

    def __init__(self, settings: ReconcileSettings, api_client: client.ApiClient, metrics: Metrics | None = None, *,
                 may_write: Callable[[], bool] = lambda: True, stop: threading.Event | None = None,
                 sleep_cap: float = MAX_BACKOFF) -> None:
        self.settings = settings
        self.api_client = api_client
        core = client.CoreV1Api(api_client)
        self.metrics = metrics or Metrics()
        self.may_write = may_write
        self.stop = stop or threading.Event()
        self.sleep_cap = sleep_cap
        self.events: queue.Queue[Event] = queue.Queue()
        self.watcher = Watcher(core, settings, self.events, self.metrics, self.stop, sleep_cap)
        self.patcher = Patcher(core, RateLimiter(settings.scoring_qps), self.metrics, self.stop)
        self.cluster: Cluster | None = None
        self.synced = {kind: False for kind in KINDS}
        self.retries: list[tuple[float, str]] = []  # heap of (due, pod key)
        self.failures: dict[str, int] = {}
        self.heartbeat = time.monotonic()
        self.threads: list[threading.Thread] = []
        self.desired_by_node: dict[str, dict[str, int]] = {}
        self.scored_count = 0
        # pods we patched: the resourceVersion our patch produced. Watch events older than it are
        # still queued behind it and must not roll the cache back (that would resend the write).
        self.awaiting: dict[str, str] = {}

    def healthy(self) -> bool:
        """Alive: the worker looped within a minute and every watch thread still runs."""
        return time.monotonic() - self.heartbeat < 60 and all(t.is_alive() for t in self.threads)

    def _cache(self) -> Cluster:
        assert self.cluster is not None, "start() builds the cache before anything reads it"
        return self.cluster

    def start(self, types: WorkloadTypes) -> None:
        """Build an empty cache for `types` and start one list+watch thread per kind."""
        self.cluster = Cluster(self.settings, types)
        for kind in KINDS:
            t = threading.Thread(target=self.watcher.loop, args=(kind,), name=f"watch-{kind}", daemon=True)
            t.start()
            self.threads.append(t)

    def apply(self, etype: str, kind: str, obj: Any) -> set[str]:
        """Apply one queued event to the cache; the nodes whose pods need re-scoring."""
        c = self._cache()
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
                dirty |= set(self._cache().by_node) | set(self.desired_by_node)
                last_full = time.monotonic()
            if dirty:
                self.reconcile_nodes(dirty)
            self._run_due_retries()

    def _apply_safely(self, item: Event) -> set[str]:
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
        c = self._cache()
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
        c = self._cache()
        for key in sorted(due):
            pod = c.pods.get(key)
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
        c = self._cache()
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

    def patch(self, key: str, ops: list[dict[str, Any]], kind: str) -> int:
        """Send one guarded JSON Patch and act on the outcome; never raises. 1 if a request was made."""
        outcome = self.patcher.send(key, ops, kind)
        if outcome.status == "stopped":
            return 0
        if outcome.status == "written":
            self.failures.pop(key, None)
            body = outcome.pod
            if self.cluster is not None and body and body.get("metadata"):
                self.cluster.upsert_pod(body)  # the watch will confirm; meanwhile don't re-send
                self.awaiting[key] = body["metadata"].get("resourceVersion") or ""
            log.info({"msg": "cost written", "pod": key, "ops": ops[-1]["value"] if ops else None})
            return 1
        self._patch_failed(key, outcome)
        return 1

    def _patch_failed(self, key: str, outcome: Outcome) -> None:
        if outcome.status == "gone":  # the watch will delete it
            self.metrics.skips.labels("gone").inc()
            self._cache().delete_pod(key)
        elif outcome.status == "changed":
            # the pod changed under us (a failed `test`, or a storage conflict): read it again
            # and decide from what it holds now; never resend the same patch blindly
            log.info({"msg": "pod changed since read; re-reading", "pod": key, "status": outcome.code})
            self._reread(key)
        elif outcome.status == "throttled":
            log.warning({"msg": "throttled by the API server", "pod": key, "retry_after": outcome.wait})
            self._retry_later(key, outcome.wait)
            self.stop.wait(min(outcome.wait, self.sleep_cap))  # respect Retry-After for all writes
        else:
            if outcome.code:
                log.warning({"msg": "patch failed", "pod": key, "status": outcome.code})
            self._retry_later(key)

    def _reread(self, key: str) -> None:
        c = self._cache()
        before = c.pods.get(key)
        fresh = self.patcher.read(key)
        if fresh.status == "gone":
            c.delete_pod(key)
            return
        if fresh.status != "found" or fresh.pod is None:
            self._retry_later(key)
            return
        self.awaiting.pop(key, None)
        c.upsert_pod(fresh.pod)
        after = c.pods[key]
        if before is not None and before.resource_version == after.resource_version:
            # the same object refused our patch: something other than a race; back off
            self._retry_later(key)
        else:
            heapq.heappush(self.retries, (time.monotonic(), key))

    # -- clear -----------------------------------------------------------------------------------

    def clear(self) -> tuple[int, int]:
        """Remove the costs we wrote where our record still matches. Returns (patched, failed)."""
        pods, _ = self.watcher.list_all("pods")
        done = failed = 0
        s = self.settings
        for pod in pods:
            if self.stop.is_set():
                break
            meta = pod.get("metadata") or {}
            ops = scoring.clear_patch(meta.get("annotations"), s.score_annotation_key, RECORD_KEY)
            if not ops:
                continue
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            if s.dry_run:
                log.info({"msg": "would clear cost (dry run)", "pod": key})
                continue
            for _ in range(3):
                outcome = self.patcher.send(key, ops, "clear")
                if outcome.status in ("written", "gone", "stopped"):
                    done += outcome.status == "written"
                    break
                if outcome.status == "changed":  # decide again from a fresh read
                    fresh = self.patcher.read(key)
                    if fresh.status == "gone":
                        break
                    if fresh.status != "found" or fresh.pod is None:
                        failed += 1
                        break
                    ops = scoring.clear_patch((fresh.pod.get("metadata") or {}).get("annotations"), s.score_annotation_key, RECORD_KEY)
                    if not ops:
                        break
                    continue
                self.stop.wait(min(outcome.wait if outcome.status == "throttled" else 1.0, self.sleep_cap))
            else:
                failed += 1
        return done, failed
