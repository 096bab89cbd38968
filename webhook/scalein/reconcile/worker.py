"""The reconciler's worker: it owns the cache, re-scores only the nodes an event touches, and
decides which costs must be written; the writer threads (writing.py) send them.

Events (events.py) come from watching.py (one reflector per kind) and the writers' answers
come back on the same queue, so the worker is the one thread that touches the cache and needs no
lock. It is handed its queue, cache and write queue (reconciling.py wires them to the API
server), so it does no I/O of its own and tests drive it with plain objects. It
never waits for the API server: a cost to write goes to the write queue (writequeue.py), which
keeps one entry per pod with its latest value, hands out what an event made necessary before the
backlog, and the backlog lowest cost first. A write that failed is offered again from a heap of
due times, with exponential back-off per pod; a pod that refused a patch was read again by its
writer, and the worker decides afresh from what it holds now."""

from __future__ import annotations

import gc
import heapq
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ...shapes import metadata
from .. import decisions
from ..cluster import Cluster, PodView
from ..settings import ReconcileSettings
from . import contest
from .events import RESOURCES, Answered, Changed, Event, Listed, Resync
from .health import Metrics
from .settling import Settling
from .writequeue import Pending, WriteQueue
from .writing import WriteAttempt

log = logging.getLogger("servinggate.scalein")

# Told of a pod another writer contests: (pod, the cost we wanted, the value it holds now).
Notify = Callable[[PodView, int, "str | None"], None]

BATCH = 2000  # events applied before the worker scores and hands out writes again
RELISTED = "*"  # in `in_flight_seen`: a relist happened while the write was in flight


@dataclass
class Touched:
    """What one turn of the worker changed: nodes to re-score, and which of them (and which pods)
    an event touched, with the time the event arrived."""

    nodes: set[str] = field(default_factory=set)
    event_nodes: dict[str, float] = field(default_factory=dict)
    event_pods: dict[str, float] = field(default_factory=dict)

    def by_event(self, nodes: set[str], at: float, pod: str | None) -> None:
        self.nodes |= nodes
        for n in nodes:
            self.event_nodes.setdefault(n, at)
        if pod is not None:
            self.event_pods.setdefault(pod, at)


class Worker:
    """Keeps the pods' deletion costs current from the events on `events`, until `stop`: the
    one thread that owns `cluster`; what must be written goes to `writes`."""

    def __init__(
        self,
        settings: ReconcileSettings,
        cluster: Cluster,
        events: queue.Queue[Event],
        writes: WriteQueue,
        metrics: Metrics,
        *,
        may_write: Callable[[], bool] = lambda: True,
        stop: threading.Event | None = None,
        notify: Notify | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings, self.cluster, self.metrics = settings, cluster, metrics
        self.events, self.writes = events, writes  # what it reads, what it leaves for the writers
        self.may_write, self.stop = may_write, stop or threading.Event()
        # in node scope HyperNodes are not watched (reconciling.py): nothing to wait for
        self.synced = {resource: resource == "hypernodes" and settings.scoring.compaction_scope == "node" for resource in RESOURCES}
        self.retries: list[tuple[float, str]] = []  # heap of (due, pod key)
        self.failures: dict[str, int] = {}
        self.heartbeat = time.monotonic()
        self.desired_by_node: dict[str, dict[str, int]] = {}
        self.scored_count = 0
        # pods we patched: the resourceVersion our patch produced. Watch events older than it are
        # still queued behind it and must not roll the cache back (that would resend the write).
        self.awaiting: dict[str, str] = {}
        # pods with a write in flight: the resourceVersions the watch brought meanwhile. If our
        # own write's is among them, the cache already holds it (or newer) when the answer comes.
        self.in_flight_seen: dict[str, set[str]] = {}
        self.last_full = time.monotonic()  # the last full pass (for --resync-seconds)
        self.converging: tuple[float, int] | None = None  # a full pass: (started, writes then)
        self.written = 0
        # what we wrote to each pod, and the pods another writer contests (contest.py)
        self.contests = contest.Contests(settings.scoring.contest_backoff_seconds, clock)
        self.notify: Notify = notify or (lambda pod, want, current: None)
        # the ServingGroups Kthena is deleting, whose other pods' writes wait (settling.py); on the
        # clock of `retries`, where a held write is scheduled
        self.settling = Settling(time.monotonic)

    def _everything(self) -> set[str]:
        c = self.cluster
        return set(c.by_node) | set(c.nodes) | set(self.desired_by_node)

    def resync(self) -> set[str]:
        """Score everything again; the nodes to re-score."""
        self._full_pass()
        return self._everything()

    def replace(self, listed: Listed) -> set[str]:
        """A full list replaces the cache's nodes or pods; the nodes to re-score."""
        c = self.cluster
        self._full_pass()
        if listed.resource == "pods":
            self.awaiting.clear()
            for key in self.writes.in_flight_keys():  # the list may hold our write, or something newer
                self.in_flight_seen.setdefault(key, set()).add(RELISTED)
            c.replace_pods(listed.items)
            self.contests.keep_only(c.pods)
        elif listed.resource == "hypernodes":
            c.replace_hypernodes(listed.items)
        else:
            c.replace_nodes(listed.items)
        # the cache is long-lived: keep the cyclic GC from re-scanning it on every collection
        gc.collect()
        gc.freeze()
        self.synced[listed.resource] = True
        return self._everything()

    def apply(self, event: Changed) -> set[str]:
        """Apply one watch event to the cache; the nodes whose pods need re-scoring."""
        c = self.cluster
        obj = event.obj
        meta = obj.get("metadata") or {}
        if event.resource == "nodes":
            return c.delete_node(meta.get("name", "")) if event.change == "DELETED" else c.upsert_node(obj)
        if event.resource == "hypernodes":
            return c.delete_hypernode(meta.get("name", "")) if event.change == "DELETED" else c.upsert_hypernode(obj)
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if self.writes.is_in_flight(key):
            self.in_flight_seen.setdefault(key, set()).add(meta.get("resourceVersion") or "")
        before = c.pods.get(key)
        if event.change == "DELETED":
            self.failures.pop(key, None)
            self.awaiting.pop(key, None)
            self.contests.forget(key)
            self.settling.forget(key)
            self.settling.changed(before, None, deleted=True)
            return c.delete_pod(key)
        waiting = self.awaiting.get(key)
        if waiting is not None:
            if meta.get("resourceVersion") != waiting:
                return set()  # an event from before our own patch
            del self.awaiting[key]
        dirty = c.upsert_pod(obj)
        self.settling.changed(before, c.pods.get(key), deleted=False)
        return dirty

    def run(self) -> None:
        """The worker loop, until `stop`."""
        self.last_full = time.monotonic()
        while not self.stop.is_set():
            self.turn(self._next_wait())

    def turn(self, wait: float) -> None:
        """One round: take what is queued (waiting up to `wait` s for the first event), score what
        it touched and hand out the writes. `run` loops on it; tests call it to step the worker."""
        self.heartbeat = time.monotonic()
        touched = Touched()
        try:
            self._take(self.events.get(timeout=wait) if wait > 0 else self.events.get_nowait(), touched)
            for _ in range(BATCH):  # drain what is queued, so a burst is scored once
                self._take(self.events.get_nowait(), touched)
        except queue.Empty:
            pass
        if not all(self.synced.values()):
            return
        resync = self.settings.runtime.resync_seconds
        if resync and time.monotonic() - self.last_full > resync:
            self._full_pass()
            touched.nodes |= set(self.cluster.by_node) | set(self.desired_by_node)
            self.last_full = time.monotonic()
        touched.nodes |= self._due_retries()
        if touched.nodes:
            self.reconcile_nodes(touched.nodes, touched)
        self.metrics.contested.set(self.contests.active())
        self._check_converged()

    def _take(self, event: Event, touched: Touched) -> None:
        """One queued event into `touched`; a malformed object is logged and skipped, never fatal."""
        try:
            if isinstance(event, Changed):
                meta = metadata(event.obj)
                pod = f"{meta.get('namespace', '')}/{meta.get('name', '')}" if event.resource == "pods" else None
                touched.by_event(self.apply(event), event.at, pod)
            elif isinstance(event, Answered):
                touched.nodes |= self._on_answer(event.attempt)
            elif isinstance(event, Listed):
                touched.nodes |= self.replace(event)
            elif isinstance(event, Resync):
                touched.nodes |= self.resync()
        except Exception:
            self.metrics.errors.labels("event", "0").inc()
            if isinstance(event, Changed):
                log.exception({"msg": "cannot apply event; skipped", "type": event.change, "kind": event.resource, "name": metadata(event.obj).get("name")})
            else:
                log.exception({"msg": "cannot apply event; skipped", "type": type(event).__name__})

    def _next_wait(self) -> float:
        if self.retries:
            return max(0.0, min(1.0, self.retries[0][0] - time.monotonic()))
        return 1.0

    # -- scoring and deciding --------------------------------------------------------------------

    def reconcile_nodes(self, nodes: set[str], touched: Touched | None = None) -> None:
        """Score the pods on `nodes` and queue a write for those whose cost differs; drop the
        queued writes of pods that no longer need one. `touched` says which an event caused."""
        c = self.cluster
        started = time.perf_counter()
        desired: dict[str, int] = {}
        left: set[str] = set()
        with self.writes.batch():
            for name in nodes:
                before = self.desired_by_node.get(name, {})
                on_node = c.desired_on(name)
                self.scored_count += len(on_node) - len(before)
                if on_node:
                    self.desired_by_node[name] = on_node
                else:
                    self.desired_by_node.pop(name, None)
                left |= before.keys() - on_node.keys()
                node_event = touched.event_nodes.get(name) if touched else None
                for key, want in on_node.items():
                    at = touched.event_pods.get(key) if touched else None
                    if at is None and node_event is not None and before.get(key) != want:
                        at = node_event  # the event changed this pod's cost
                    self._decide(key, want, at)
                desired.update(on_node)
            for key in left - desired.keys():  # deleted, unscheduled, or no longer scored
                self.writes.discard(key)
        self.metrics.pass_seconds.labels("full" if len(nodes) > 1 else "event").observe(time.perf_counter() - started)
        self.metrics.scored.set(self.scored_count)

    def _decide(self, key: str, want: int, event_at: float | None) -> None:
        """Queue `want` for pod `key` if it is ours to write, else drop what waits for it."""
        c = self.cluster
        s = self.settings
        pod = c.pods.get(key)
        if pod is None:
            self.writes.discard(key)
            return
        d = c.cost_action(key, want)
        if d.action == decisions.WRITE and self.contests.foreign(key, pod.annotation(s.scoring.score_annotation_key)):
            # it matches the record annotation but not what we wrote: someone set both
            d = decisions.decide(pod.annotation(s.scoring.score_annotation_key), None, want, s.scoring.scale_in_priority)
        if d.action in (decisions.NONE, decisions.FOREIGN):
            self.metrics.skips.labels("unchanged" if d.action == decisions.NONE else "foreign").inc()
            if d.action == decisions.FOREIGN:
                log.debug({"msg": "cost set by someone else; left alone (scale-in-priority wl)", "pod": key, "value": d.value})
            self.writes.discard(key)
            return
        if s.runtime.dry_run or not s.scoring.enable_scale_in_score:
            self.metrics.skips.labels("dry-run" if s.runtime.dry_run else "disabled").inc()
            log.info({"msg": "would write cost (dry run)", "pod": key, "from": pod.annotation(s.scoring.score_annotation_key), "to": want})
            return
        if not self.may_write():
            self.metrics.skips.labels("not-leader").inc()
            self.writes.discard(key)
            return
        until = self.settling.holding(pod)
        if until is not None:  # a pod of its ServingGroup is being deleted: decide again once that settles
            self.metrics.skips.labels("settling").inc()
            self.writes.discard(key)
            if self.settling.defer(key, until):
                heapq.heappush(self.retries, (until, key))
            return
        if d.action == decisions.OVERWRITE and not self._may_overwrite(pod, want):  # only the writer contests
            self.writes.discard(key)
            return
        self.writes.offer(key, want, pod.annotations, pod.resource_version, d.action, event_at=event_at)

    def _may_overwrite(self, pod: PodView, want: int) -> bool:
        """Another writer's value sits where we want `want`: overwrite once per window; when it
        changes again, leave the pod alone for the window, tell (`notify`) and log it once."""
        verdict = self.contests.on_foreign(pod.key)
        if verdict == contest.OVERWRITE:
            return True
        self.metrics.skips.labels("contested").inc()
        if verdict == contest.CONTESTED:
            current = pod.annotation(self.settings.scoring.score_annotation_key)
            log.warning(
                {
                    "msg": "another writer keeps changing this pod's cost; leaving it alone",
                    "pod": pod.key,
                    "value": current,
                    "wanted": want,
                    "seconds": self.settings.scoring.contest_backoff_seconds,
                }
            )
            self.notify(pod, want, current)
        return False

    # -- the writers' answers --------------------------------------------------------------------

    def _on_answer(self, result: WriteAttempt) -> set[str]:
        """Apply one write's answer to the cache; the nodes to score again now."""
        c = self.cluster
        entry, outcome = result.entry, result.outcome
        key = entry.key
        seen = self.in_flight_seen.pop(key, set())
        if outcome is None:  # not sent: we stopped leading; a Resync offers it again when we lead
            self.writes.finish(key)
            self.writes.discard(key)
            return set()
        keep: Pending | None = None  # to send again, keeping its lane
        dirty: set[str] = set()
        if outcome.status == "written":
            self.failures.pop(key, None)
            self.written += 1
            self.contests.wrote(key, entry.value, entry.purpose == decisions.OVERWRITE)
            body = outcome.pod or {}
            rv = (body.get("metadata") or {}).get("resourceVersion")
            if rv and rv not in seen and RELISTED not in seen:
                c.upsert_pod(body)  # the watch will confirm; meanwhile don't re-send
                self.awaiting[key] = rv
        elif outcome.status == "gone":  # the watch will delete it too
            self.metrics.skips.labels("gone").inc()
            dirty |= c.delete_pod(key)
        elif outcome.status == "changed":
            keep = self._changed(key, result)
        elif outcome.status in ("throttled", "failed"):
            keep = entry
            self._retry_later(key, outcome.wait if outcome.status == "throttled" else None)
        self.writes.finish(key, keep)
        pod = c.pods.get(key)
        if pod is None or not pod.node:
            self.writes.discard(key)
        elif key not in self.failures:
            # score the pod again now: after a success, a write offered during the flight waits
            # for it; after a race, the pod's fresh state decides. A failure waits for its retry.
            dirty.add(pod.node)
        return dirty

    def _changed(self, key: str, result: WriteAttempt) -> Pending | None:
        """The pod refused our patch as stale and its writer read it again (`result.fresh`):
        a race is decided again at once, the same object refusing it backs off."""
        c = self.cluster
        fresh = result.fresh
        if fresh is not None and fresh.status == "gone":
            c.delete_pod(key)
            return None
        if fresh is None or fresh.status != "found" or fresh.pod is None:
            self._retry_later(key)
            return result.entry
        before = c.pods.get(key)
        self.awaiting.pop(key, None)
        c.upsert_pod(fresh.pod)
        after = c.pods.get(key)
        if before is not None and after is not None and before.resource_version == after.resource_version:
            self._retry_later(key)
        else:
            self.failures.pop(key, None)
        return result.entry

    def _retry_later(self, key: str, seconds: float | None = None) -> None:
        n = self.failures.get(key, 0) + 1
        self.failures[key] = n
        delay = seconds if seconds is not None else min(2.0**n, 300.0)
        heapq.heappush(self.retries, (time.monotonic() + delay, key))

    def _due_retries(self) -> set[str]:
        now = time.monotonic()
        nodes = set()
        c = self.cluster
        while self.retries and self.retries[0][0] <= now:
            due, key = heapq.heappop(self.retries)
            self.settling.due(key, due)
            pod = c.pods.get(key)
            if pod is not None and pod.node:
                nodes.add(pod.node)
        return nodes

    # -- convergence -----------------------------------------------------------------------------

    def _full_pass(self) -> None:
        """A list, relist or resync began: time it until every cost it found is written."""
        s = self.settings
        if self.converging is None and s.scoring.enable_scale_in_score and not s.runtime.dry_run and self.may_write():
            self.converging = (time.monotonic(), self.written)

    def _check_converged(self) -> None:
        if self.converging is None or not self.writes.idle():
            return
        started, before = self.converging
        took = time.monotonic() - started
        self.converging = None
        self.metrics.converged.set(took)
        log.info(
            {"msg": "full pass converged: every cost written", "seconds": round(took, 3), "writes": self.written - before, "pods_scored": self.scored_count}
        )
