"""How many connections each worker holds, in memory shared by the gunicorn master and workers,
so that a worker can leave a new connection to a sibling that holds fewer.

The master creates the table before forking and gives each worker a slot (pre_fork), freed when
the worker exits (child_exit). Each worker writes only its own slot: whether it is accepting, how
many connections it holds, and since when its event loop has been awake (0: asleep in its poller). Reads
of the other slots may be a moment stale; the accept rule (worker.py) tolerates that.

Leaving a connection to a sibling costs the client nothing only when that sibling will accept it
at once: asleep in its poller (the kernel wakes it for this very connection) or awake for only a
moment. A sibling busy in its loop (handshakes, or its threads holding the GIL) may take tens of
milliseconds, and the API server's client opens connections in bursts and gives up on a dial once
another connection frees (measured: about one new connection per four reviews, half of them
dropped during the handshake). So a worker leaves a connection only to such a sibling that holds
fewer, and for at most ACCEPT_GRACE; a busy sibling gets none, and shedding evens out the rest.
"""

from __future__ import annotations

import mmap
import selectors
import threading
import time
from typing import Any

FREE, IDLE, ACCEPTING = 0, 1, 2
ASLEEP, DEAF = 0, -1  # a loop asleep in its poller and listening; one not listening (else: awake since, in µs)
ACCEPT_RECHECK = 0.005  # a worker leaving a connection to a sibling looks again this soon
ACCEPT_GRACE = 0.05  # and takes it itself if the sibling has not within this time (from the first
# look); a sibling whose loop has been awake longer than this is busy, and gets no connection left


class LoadTable:
    def __init__(self, slots: int = 128):
        self.slots = slots
        self._mem = mmap.mmap(-1, slots * 3 * 8)  # anonymous and MAP_SHARED: inherited by fork
        self._cells = memoryview(self._mem).cast("q")  # per slot: state, connections, loop (ASLEEP, DEAF, awake since)

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
        self._cells[3 * slot + 1] = connections
        self._cells[3 * slot] = state

    def loop(self, slot: int, state: int) -> None:
        self._cells[3 * slot + 2] = state

    def fewest_elsewhere(self, slot: int) -> int | None:
        """The fewest connections held by another accepting worker (None if there is none)."""
        cells = self._cells
        counts = [cells[3 * s + 1] for s in range(self.slots) if s != slot and cells[3 * s] == ACCEPTING]
        return min(counts) if counts else None

    def prompt_sibling_below(self, slot: int, connections: int) -> bool:
        """Does another accepting worker with fewer than `connections` listen, and is its loop asleep
        in its poller or awake for less than ACCEPT_GRACE (so about to accept)?"""
        cells, recent = self._cells, _micros() - int(ACCEPT_GRACE * 1e6)
        return any(s != slot and cells[3 * s] == ACCEPTING and cells[3 * s + 1] < connections
                   and (cells[3 * s + 2] == ASLEEP or cells[3 * s + 2] > recent) for s in range(self.slots))


def _micros() -> int:
    """CLOCK_MONOTONIC in µs: one clock for every process on the machine, so siblings compare."""
    return int(time.monotonic() * 1e6)


class Placement:
    """The worker's side of balanced placement (a mixin of WebhookWorker): publish this worker's
    load, leave a new connection to a less loaded, prompt sibling for a moment, and shed a kept-alive
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
    _last_look: float = 0.0  # when this worker last left a pending connection to a sibling
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

    def _poll(self, timeout: float) -> list[Any]:
        """The poller's wait, published: siblings leave connections only to a worker about to accept."""
        self._loop_state(asleep=True)
        events = self.poller.select(timeout)
        self._loop_state(asleep=False)
        return events

    def _loop_state(self, asleep: bool) -> None:
        if self.loads is not None and self.slot is not None:
            self.loads.loop(self.slot, DEAF if not self._listening else ASLEEP if asleep else _micros())

    def _leave_to_sibling(self) -> bool:
        """True when a prompt sibling holds fewer connections and should take the next one. A wait
        is counted from its first look, so a slow loop cannot stretch it by looking late; a look
        more than a grace after the last one starts a new wait (meanwhile the listener was empty:
        the sibling took that connection), so a finished wait never shortens the next one."""
        if self.loads is None or self.slot is None or not self.loads.prompt_sibling_below(self.slot, self.nr_conns):
            self._defer_since = None
            return False
        now = time.monotonic()
        if self._defer_since is None or now - self._last_look > ACCEPT_GRACE:
            self._defer_since = now  # a new wait: not asked for a grace, the last one's connection was taken
        self._last_look = now
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
