"""The reconciler's pending writes: one entry per pod, always holding its latest desired cost,
handed out in the order that matters for the next scale-in.

Why a queue: scoring is cheap (one node in tens of microseconds) and writing is not (the API
server takes `--scoring-qps` patches a second). The worker scores every event as it comes and
leaves here what must be written; the writer threads (writing.py) take entries at the allowed
rate. So an event never waits behind a backlog, and a cost that changes while it waits is
written once, with its newest value; one that no longer needs writing is dropped unsent.

Two lanes:

- the event lane: writes an event made necessary (a new pod, a cost already written that an
  event made wrong), first come first served;
- the backlog lane: everything a full pass finds (start, relist, resync) and pods still waiting
  there whatever happens to them meanwhile, the cost farthest from 0 first. A pod not written yet
  counts as 0: below 0 (most pods) that is after every pod already written, so the lowest, the
  pods a scale-in removes first, go first; above 0 (the pods Kthena sums, costs.summed) it is
  before them, so the highest go first and the groups still unwritten are the cheapest.

The event lane goes first, except that while both hold entries every BACKLOG_SHARE-th write goes
to the backlog, so a storm of events slows the backlog down but never stops it.

An entry being written is in flight: an offer for it meanwhile is parked (kept, not handed out)
until the worker has applied the answer and scored the pod again, because the patch it would
send was built from the pod as it was before that write. Thread-safe; the clock is injected so
order and ages are tested without sleeping."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

BACKLOG_SHARE = 10  # while events wait, one write in this many still goes to the backlog


@dataclass(slots=True)
class Pending:
    """One pod's pending write. `annotations` and `resource_version` are the pod's as scored:
    the patch's `test` operations are built from them when it is sent."""

    key: str
    value: int
    annotations: dict[str, str] | None
    resource_version: str
    purpose: str  # write | overwrite
    urgent: bool  # in the event lane
    queued_at: float  # when the pod started waiting for a write (kept across value changes)
    event_at: float | None  # when the event that made it urgent was received
    seq: int = 0
    listed: bool = False  # handed out in its lane's order; False: parked

    def same_write(self, other: Pending) -> bool:
        return (self.value, self.resource_version, self.purpose, self.annotations) == (other.value, other.resource_version, other.purpose, other.annotations)


class WriteQueue:
    """Pending writes by pod key, in two lanes (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, backlog_share: int = BACKLOG_SHARE) -> None:
        self.clock = clock
        self.backlog_share = backlog_share
        self.cond = threading.Condition()
        self.entries: dict[str, Pending] = {}  # waiting, listed or parked
        self.in_flight: set[str] = set()
        self._events: list[tuple[float, int, str]] = []  # (event time, seq, key)
        self._backlog: list[tuple[int, str, int]] = []  # (-|cost|, key, seq)
        self._seq = 0
        self._urgent_run = 0  # event-lane writes since the backlog's last turn
        self._closed = False  # set by close(): waiting writers return at once

    # -- the worker's side -----------------------------------------------------------------------

    def offer(self, key: str, value: int, annotations: dict[str, str] | None, resource_version: str, purpose: str, *, event_at: float | None = None) -> None:
        """Pod `key` needs `value` written. `event_at`: an event made the write necessary (the event
        lane), unless the pod already waits: then it keeps its lane and its place in time."""
        with self.cond:
            old = self.entries.get(key)
            now = self.clock()
            entry = Pending(key, value, annotations, resource_version, purpose, event_at is not None, now, event_at)
            if old is not None:
                if old.listed and old.same_write(entry):
                    return
                entry.urgent, entry.queued_at, entry.event_at = old.urgent, old.queued_at, old.event_at
            self.entries[key] = entry
            if key not in self.in_flight:
                self._list(entry)
            self._compact()

    def batch(self) -> threading.Condition:
        """`with queue.batch():` a scoring pass offers all its writes before any writer picks one,
        so the first write of a fresh start is the cheapest pod's, not the first one scored."""
        return self.cond

    def discard(self, key: str) -> bool:
        """The pod no longer needs a write (or is gone): drop what waits for it."""
        with self.cond:
            return self.entries.pop(key, None) is not None

    def finish(self, key: str, keep: Pending | None = None) -> None:
        """The write of `key` was answered and the worker has applied the answer. `keep`: the
        entry to try again later (it waits parked, keeping its lane, until offered again)."""
        with self.cond:
            self.in_flight.discard(key)
            if keep is None:
                return
            parked = self.entries.get(key)
            if parked is None:
                keep.listed = False
                self.entries[key] = keep
                return
            parked.urgent = parked.urgent or keep.urgent
            parked.queued_at = min(parked.queued_at, keep.queued_at)
            times = [t for t in (parked.event_at, keep.event_at) if t is not None]
            parked.event_at = min(times) if times else None

    def is_in_flight(self, key: str) -> bool:
        with self.cond:
            return key in self.in_flight

    def in_flight_keys(self) -> set[str]:
        with self.cond:
            return set(self.in_flight)

    # -- the writers' side ----------------------------------------------------------------------

    def wait(self, timeout: float) -> bool:
        """Block until an entry can be handed out (True), or `timeout` passes or the queue is
        closed (False)."""
        with self.cond:
            self.cond.wait_for(lambda: self._closed or self._ready(), timeout)
            return not self._closed and self._ready()

    def close(self) -> None:
        """Wake every waiting writer and hand nothing out from now on: the reconciler is stopping,
        and a writer should see that now, not at the end of its wait."""
        with self.cond:
            self._closed = True
            self.cond.notify_all()

    def pop(self) -> Pending | None:
        """The next write to send, now in flight; None when nothing can be handed out."""
        with self.cond:
            urgent, backlog = self._top(self._events), self._top(self._backlog)
            if urgent is None and backlog is None:
                return None
            take_backlog = urgent is None or (backlog is not None and self._urgent_run >= self.backlog_share - 1)
            if take_backlog:
                heapq.heappop(self._backlog)
                self._urgent_run = 0
                key = backlog
            else:
                heapq.heappop(self._events)
                self._urgent_run = self._urgent_run + 1 if backlog is not None else 0
                key = urgent
            assert key is not None
            entry = self.entries.pop(key)
            entry.listed = False
            self.in_flight.add(key)
            return entry

    # -- what the metrics and the worker read ---------------------------------------------------

    def size(self) -> int:
        """Pods waiting for a write (in flight not counted)."""
        with self.cond:
            return len(self.entries)

    def oldest_age(self) -> float:
        """Seconds the longest-waiting pod has waited; 0 when none waits."""
        with self.cond:
            if not self.entries:
                return 0.0
            return max(0.0, self.clock() - min(e.queued_at for e in self.entries.values()))

    def idle(self) -> bool:
        """Nothing waits and nothing is in flight."""
        with self.cond:
            return not self.entries and not self.in_flight

    # -- inside ---------------------------------------------------------------------------------

    def _list(self, entry: Pending) -> None:
        self._seq += 1
        entry.seq, entry.listed = self._seq, True
        if entry.urgent:
            stamp = entry.event_at if entry.event_at is not None else entry.queued_at
            heapq.heappush(self._events, (stamp, entry.seq, entry.key))
        else:
            heapq.heappush(self._backlog, (-abs(entry.value), entry.key, entry.seq))
        self.cond.notify()

    def _current(self, key: str, seq: int, urgent: bool) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry.listed and entry.seq == seq and entry.urgent == urgent

    def _top(self, heap: list) -> str | None:
        """The key at the top of a lane, dropping items a later offer or a discard made stale."""
        urgent = heap is self._events
        while heap:
            item = heap[0]
            key, seq = (item[2], item[1]) if urgent else (item[1], item[2])
            if self._current(key, seq, urgent):
                return key
            heapq.heappop(heap)
        return None

    def _ready(self) -> bool:
        return self._top(self._events) is not None or self._top(self._backlog) is not None

    def _compact(self) -> None:
        """Stale heap items are dropped lazily; rebuild when they outnumber the live ones."""
        if len(self._events) + len(self._backlog) <= 2 * len(self.entries) + 1024:
            return
        live = [e for e in self.entries.values() if e.listed]
        self._events = [(e.event_at if e.event_at is not None else e.queued_at, e.seq, e.key) for e in live if e.urgent]
        self._backlog = [(-abs(e.value), e.key, e.seq) for e in live if not e.urgent]
        heapq.heapify(self._events)
        heapq.heapify(self._backlog)
