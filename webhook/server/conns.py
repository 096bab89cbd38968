"""What the worker's loop keeps, without deciding anything: a connection's state (`Conn`), the
deadlines (`Timers`), the slots for large requests (`Slots`), the socket steps of a close.

Memory for unfinished requests: a connection may buffer SMALL_REQUEST bytes of a request (reviews
are a few KiB); beyond that it needs one of read_budget // max_body slots, or is not read (TCP
pushes back) until one frees. A slot holder always finishes or times out: no deadlock.
"""

from __future__ import annotations

import heapq
import itertools
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

from .http1 import Limits, RequestReader

READING, BUSY, WRITING, LINGERING = range(4)
RECV = 65536
SMALL_REQUEST = 256 * 1024


class Conn:
    """One client connection and what the loop knows of it."""

    __slots__ = ("sock", "client", "server", "reader", "state", "handshaken", "events", "timer", "out", "keep", "idle", "large", "continued", "tail")

    def __init__(self, sock: Any, client: Any, server: Any, limits: Limits):
        self.sock, self.client, self.server = sock, client, server
        self.reader = RequestReader(limits)
        self.state, self.handshaken, self.events, self.timer = READING, False, 0, 0  # timer: its live deadline's number, 0: none
        self.out, self.keep, self.large, self.continued = b"", False, False, False  # out: the answer not yet written
        self.idle = False  # between requests, counted in the worker's idle connections
        self.tail = b""  # the next request's bytes already received, read by the loop's next turn


class Timers:
    """Deadlines: a heap of (when, number, connection), a connection's newer deadline replacing its
    older one, which stays until due or compacted away. Compacted whenever the heap doubles: a heap
    holding each replaced deadline (and its connection) for up to the keep-alive time grew with the request rate."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, Conn]] = []
        self.numbers = itertools.count(1)
        self.compact_at = 1024

    def set(self, conn: Conn, seconds: float) -> None:
        conn.timer = next(self.numbers)
        heapq.heappush(self.heap, (time.monotonic() + seconds, conn.timer, conn))
        if len(self.heap) >= self.compact_at:
            self.heap = [entry for entry in self.heap if entry[2].timer == entry[1]]
            heapq.heapify(self.heap)
            self.compact_at = max(1024, 2 * len(self.heap))

    def wait(self, longest: float) -> float:
        """How long the loop may wait for events before the next deadline."""
        return min(longest, max(self.heap[0][0] - time.monotonic(), 0.0)) if self.heap else longest

    def due(self) -> Iterator[Conn]:
        now = time.monotonic()
        while self.heap and self.heap[0][0] <= now:
            _, number, conn = heapq.heappop(self.heap)
            if conn.timer == number:  # else the connection moved on since this deadline was set
                conn.timer = 0
                yield conn


class Slots:
    """The worker's slots for requests larger than SMALL_REQUEST, and the connections waiting for one."""

    def __init__(self, limits: Limits):
        self.free = max(1, limits.read_budget // limits.max_body)
        self.parked: deque[Conn] = deque()

    def take(self, conn: Conn) -> bool:
        if conn.large or not self.free:
            return conn.large
        self.free -= 1
        conn.large = True
        return True

    def release(self, conn: Conn) -> None:
        if conn.large:
            conn.large = False
            self.free += 1

    def unparked(self) -> Iterator[Conn]:
        """Parked connections, oldest first, while slots are free."""
        while self.parked and self.free:
            yield self.parked.popleft()


def watch(selector: selectors.BaseSelector, conn: Conn, events: int) -> None:
    """The events the selector watches on the connection for the loop (0: none)."""
    if conn.events == events:
        return
    if not events:
        with suppress(KeyError, ValueError, OSError):
            selector.unregister(conn.sock)
    elif conn.events:
        selector.modify(conn.sock, events, conn)
    else:
        selector.register(conn.sock, events, conn)
    conn.events = events


def half_close(conn: Conn) -> bool:
    """After a closing answer: close_notify (not awaiting the client's) and a half-close; False when
    the socket is gone already."""
    try:
        conn.sock.setblocking(False)
        with suppress(ssl.SSLError, OSError, ValueError):
            conn.sock.unwrap()
        conn.sock.shutdown(socket.SHUT_WR)
        return True
    except (OSError, ValueError):
        return False


def drain(conn: Conn) -> bool:
    """Read and drop what a client still sends after a closing answer; True once it has closed too."""
    try:
        for _ in range(16):
            if not socket.socket.recv(conn.sock, RECV):  # the raw bytes: no need to decrypt them
                return True
        return False
    except BlockingIOError:
        return False
    except OSError:
        return True
