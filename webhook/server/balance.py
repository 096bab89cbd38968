"""How many connections each worker holds, in memory shared by the gunicorn master and workers,
so that a worker can leave a new connection to a sibling that holds fewer.

The master creates the table before forking and gives each worker a slot (pre_fork), freed when
the worker exits (child_exit). Each worker writes only its own slot: whether it is accepting and
how many connections it holds. Reads of the other slots may be a moment stale; the accept rule
(worker.py) tolerates that.
"""

from __future__ import annotations

import mmap
import selectors
import threading
import time
from typing import Any

FREE, IDLE, ACCEPTING = 0, 1, 2
ACCEPT_RECHECK = 0.005  # a worker leaving a connection to a sibling looks again this soon
ACCEPT_GRACE = 0.1  # and takes it itself if the sibling has not within this time


class LoadTable:
    def __init__(self, slots: int = 128):
        self.slots = slots
        self._mem = mmap.mmap(-1, slots * 2 * 8)  # anonymous and MAP_SHARED: inherited by fork
        self._cells = memoryview(self._mem).cast("q")  # per slot: state, connections

    def claim(self, taken: set[int]) -> int | None:
        """Master: the lowest slot no live worker holds (None when all are taken)."""
        for slot in range(self.slots):
            if slot not in taken:
                self.publish(slot, IDLE, 0)
                return slot
        return None

    def release(self, slot: int) -> None:
        self.publish(slot, FREE, 0)

    def publish(self, slot: int, state: int, connections: int) -> None:
        self._cells[2 * slot + 1] = connections
        self._cells[2 * slot] = state

    def connections(self, slot: int) -> int:
        return self._cells[2 * slot + 1]

    def fewest_elsewhere(self, slot: int) -> int | None:
        """The fewest connections held by another accepting worker (None if there is none)."""
        cells = self._cells
        counts = [cells[2 * s + 1] for s in range(self.slots) if s != slot and cells[2 * s] == ACCEPTING]
        return min(counts) if counts else None


class Placement:
    """The worker's side of balanced placement (a mixin of WebhookWorker): publish this worker's
    load, leave a new connection to a less loaded sibling for a moment, and shed a kept-alive
    connection when this worker holds two or more beyond the least loaded one."""

    # set by the worker (gunicorn's ThreadWorker and WebhookWorker.init_process)
    loads: LoadTable | None
    slot: int | None
    sockets: list[Any]
    poller: Any
    alive: bool
    nr_conns: int
    accept: Any
    _accepting: bool
    _listening: bool
    _pause_until: float
    _defer_since: float | None
    _last_defer: float
    _shed_lock: threading.Lock
    _shedding: int

    def set_accept_enabled(self, enabled: bool) -> None:
        self._accepting = enabled
        self._sync_listeners()

    def _sync_listeners(self) -> None:
        want = self._accepting and time.monotonic() >= self._pause_until
        if want != self._listening:
            for listener in self.sockets:
                if want:
                    listener.setblocking(False)
                    self.poller.register(listener, selectors.EVENT_READ, self.accept)
                else:
                    self.poller.unregister(listener)
            self._listening = want
        self._publish()

    def _publish(self) -> None:
        if self.loads is not None and self.slot is not None:
            self.loads.publish(self.slot, ACCEPTING if self._accepting and self.alive else IDLE, self.nr_conns)

    def _leave_to_sibling(self) -> bool:
        """True when a sibling holds fewer connections and should take the next one."""
        if self.loads is None or self.slot is None:
            return False
        fewest = self.loads.fewest_elsewhere(self.slot)
        if fewest is None or self.nr_conns <= fewest:
            self._defer_since = None
            return False
        now = time.monotonic()
        if self._defer_since is None or now - self._last_defer > 4 * ACCEPT_RECHECK:
            self._defer_since = now  # a new wait, not the continuation of one
        self._last_defer = now
        if now - self._defer_since >= ACCEPT_GRACE:
            self._defer_since = None  # the sibling did not take it: we do
            return False
        return True

    def _shed(self, conn: Any) -> bool:
        """Before an answer: close this connection (announced) if this worker holds two or more
        beyond its least-loaded sibling; the client reconnects there. Placing at accept alone
        cannot stay even: connections that close later (wrk's probe, short-lived ones) skew it."""
        if self.loads is None or self.slot is None or not self.alive:
            return False
        fewest = self.loads.fewest_elsewhere(self.slot)
        if fewest is None or self.nr_conns - fewest < 2:
            return False  # the common case, decided without the lock every thread would take
        with self._shed_lock:
            if fewest is None or (self.nr_conns - self._shedding) - (fewest + self._shedding) < 2:
                return False
            self._shedding += 1
        conn.shed = True
        return True
