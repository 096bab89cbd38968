"""What the worker's loop keeps, without deciding anything: a connection's state and deadline
(`Conn`), the slots for large requests (`Slots`), the socket steps of a close.

Memory for unfinished requests: a connection may buffer SMALL_REQUEST bytes of a request (reviews
are a few KiB); beyond that it needs one of read_budget // max_body slots, or is not read (TCP
pushes back) until one frees. A slot holder always finishes or times out: no deadlock.
"""

from __future__ import annotations

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

    __slots__ = ("sock", "client", "server", "reader", "state", "handshaken", "events", "deadline", "out", "keep", "idle", "continued", "tail")

    def __init__(self, sock: Any, client: Any, server: Any, limits: Limits):
        self.sock, self.client, self.server = sock, client, server
        self.reader = RequestReader(limits)
        self.state, self.handshaken, self.events, self.deadline = READING, False, 0, 0.0  # deadline: monotonic, 0: none
        self.out, self.keep, self.continued = b"", False, False  # out: the answer not yet written
        self.idle = False  # between requests, counted in the worker's idle connections
        self.tail = b""  # the next request's bytes already received, read by the loop's next turn

    def expire_in(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds


class Slots:
    """The connections reading a request larger than SMALL_REQUEST (read_budget // max_body of them
    at most), and those waiting for a slot, oldest first."""

    def __init__(self, limits: Limits):
        self.size, self.holders, self.parked = max(1, limits.read_budget // limits.max_body), set[Conn](), deque[Conn]()

    def take(self, conn: Conn) -> bool:
        if len(self.holders) < self.size:
            self.holders.add(conn)
        return conn in self.holders

    def release(self, conn: Conn) -> None:
        self.holders.discard(conn)

    def unparked(self) -> Iterator[Conn]:
        while self.parked and len(self.holders) < self.size:
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
