"""Where a request the event loop has received goes: to a thread, or answered on the loop.

A review request in the API server's plain shape (plainreview.py) of at most ANSWER_HERE_MAX bytes,
received whole with nothing after it, is answered on the loop: no hand-off to a thread and back
(two thread wake-ups, a pipe write and read, three epoll_ctl calls and the GIL passed twice),
a measurable share of a review's CPU under a busy API server's load (benchmarks/HISTORY.md). The answer is
built in memory and sent without blocking; what the socket does not take at once is sent by a
thread. The review is told it may not wait for the API server (`may_wait=False`, carried by its
Context): one that would is stopped before anything is recorded or answered, and goes to a
thread from its bytes. Any other request (larger, incomplete, pipelined, not plain) goes to a
thread, as gthread does with every request.

`HandOver` is one object per worker, holding the worker it hands connections back to.
"""

from __future__ import annotations

import selectors
import ssl
import time
from functools import partial
from typing import Any

from ..serving.reviewing import DEFERRED
from .answering import closes_after, whole_answer
from .gunicorn_adapter import STOP_KEEPALIVE_LINGER, get_parser
from .plainreview import HeadLimits, plain_review

# The worker's connection (worker.Conn) and the worker itself (worker.WebhookWorker): worker.py
# imports this module, so they are named here without importing it back (no import circle, not
# even a type-only one); tests/server exercise every attribute used.
Conn = Any
WebhookWorker = Any

ANSWER_HERE_MAX = 64 * 1024  # a request up to this size (a review is a few KiB) is answered on the
# event loop; a larger one, whose review takes longer, goes to a thread
_READ = selectors.EVENT_READ


class HandOver:
    """A received request's way on: answered here, or given to gunicorn's parser and a thread; and
    the connection's way back to the idle keep-alive list."""

    def __init__(self, worker: WebhookWorker, direct_reply: Any, head_limits: HeadLimits) -> None:
        self.worker = worker
        self.direct_reply = direct_reply  # the app's review replies (WebhookFlask.direct_reply); None: every request to gunicorn
        self.head_limits = head_limits

    def received(self, conn: Conn, complete: bool) -> None:
        """The loop is done reading this request: its slot, timer, buffer and scanner are freed."""
        self.worker._release(conn)
        conn.timer, conn.complete, conn.buf = 0, complete, bytearray()
        conn.scanner.reset()

    def answer_here(self, conn: Conn) -> None:
        """A whole review request in the API server's plain shape is answered here, its review told
        it may not wait for the API server (DEFERRED: it needs to; it goes to a thread from its
        bytes). Any other request goes to a thread."""
        request = bytes(conn.buf)
        plain = plain_review(request, self.head_limits) if self.direct_reply is not None else None
        if plain is None:
            return self.to_thread(conn, request)
        reply = self.direct_reply(plain.environ, may_wait=False)
        if reply is None or reply is DEFERRED:
            return self.to_thread(conn, request)
        self.received(conn, True)
        self.worker.nr += 1
        closes = closes_after(self.worker, conn, plain.closes)
        self._send(conn, whole_answer(reply.code, reply.headers(), reply.body, closes), not closes)

    def to_thread(self, conn: Conn, request: bytes, complete: bool = True) -> None:
        """The request's bytes to gunicorn's parser, and the connection to a pool thread."""
        worker = self.worker
        worker._unwatch(conn)
        self.received(conn, complete)
        if conn.parser is None:
            conn.parser = get_parser(worker.cfg, conn.sock, conn.client)
            conn.initialized = True
        conn.parser.unreader.unread(request)
        worker.enqueue_req(conn)

    def _send(self, conn: Conn, answer: bytes, keep: bool) -> None:
        """Send without blocking; the rest, if any, from a thread. Then keep or close."""
        worker = self.worker
        try:
            sent = conn.sock.send(answer) if answer else 0
        except (ssl.SSLWantWriteError, BlockingIOError):
            sent = 0  # over TLS the same bytes must be offered again, whole
        except (OSError, ValueError) as exc:
            worker.log.debug("connection from %s failed: %s", conn.client, exc)
            worker._close(conn)
            return
        if sent < len(answer):
            worker._unwatch(conn)
            fs = worker.tpool.submit(self._send_rest, conn, answer[sent:], keep)
            fs.add_done_callback(lambda fut: worker.method_queue.defer(worker.finish_request, conn, fut))
            return
        if not keep:
            worker._close(conn, linger=True)
            return
        conn.continued = False
        self.keep_idle(conn)

    def keep_idle(self, conn: Conn) -> None:
        """An idle keep-alive connection: gunicorn's list and timeouts, watched by its callback."""
        worker = self.worker
        conn.set_timeout()
        if not worker.alive:
            conn.timeout = min(conn.timeout, time.monotonic() + STOP_KEEPALIVE_LINGER)
        worker.keepalived_conns.append(conn)
        callback = partial(worker.on_client_socket_readable, conn)
        if conn.events:
            worker.poller.modify(conn.sock, _READ, callback)  # still registered (answered on the loop): no system call
        else:
            worker.poller.register(conn.sock, _READ, callback)
        conn.events = 0

    def _send_rest(self, conn: Conn, data: bytes, keep: bool) -> bool:
        """In a thread: the part of an answer the socket did not take at once, blocking within the
        request timeout (a client that stopped reading holds this thread, not the loop)."""
        try:
            conn.sock.settimeout(self.worker.limits.request_timeout)
            conn.sock.sendall(data)
        except (OSError, ValueError) as exc:
            self.worker.log.debug("connection from %s failed: %s", conn.client, exc)
            return False
        return keep
