"""Where a request the event loop has received goes: to a thread, or answered on the loop.

A request of at most ANSWER_HERE_MAX bytes, received whole with nothing after it (a review, as the
API server sends them), is answered on the loop: no hand-off to a thread and back (two thread wake-ups, a pipe write and read, three epoll_ctl calls and
the GIL passed twice), which under a busy API server's load was about a fifth of the CPU of
a review and a queue of wake-ups on a crowded run queue. The answer is built in memory and
sent without blocking; what the socket does not take at once is sent by a thread. The review is
told it may not wait for the API server (`may_wait=False`, carried by its Context): one that
would is stopped before anything is recorded or answered, and goes to a thread from its bytes. A larger request (its
review takes longer: the loop would keep every other client waiting), an incomplete one and one
followed by pipelined bytes go to a thread, as gthread does with every request.
"""

from __future__ import annotations

import selectors
import ssl
import time
from functools import partial
from typing import Any

from .answering import closes_after, whole_answer
from .gunicorn_adapter import STOP_KEEPALIVE_LINGER, get_parser
from .plainreview import HeadLimits, plain_review
from .replies import DEFERRED

ANSWER_HERE_MAX = 64 * 1024  # a request up to this size (a review is a few KiB) is answered on the
# event loop; a larger one, whose review takes longer, goes to a thread
_READ = selectors.EVENT_READ


class OnLoop:
    """The worker's hand-over of a received request (a mixin of WebhookWorker)."""

    # set by the worker (gunicorn's ThreadWorker and WebhookWorker)
    alive: bool
    log: Any
    limits: Any
    tpool: Any
    poller: Any
    method_queue: Any
    keepalived_conns: Any
    handle: Any
    finish_request: Any
    on_client_socket_readable: Any
    enqueue_req: Any
    _release: Any
    cfg: Any
    nr: int
    direct_reply: Any  # the app's review replies (app.WebhookFlask.direct_reply), None: gunicorn reads every request
    head_limits: HeadLimits
    _unwatch: Any
    _close: Any

    def _received(self, conn: Any, complete: bool) -> None:
        """The loop is done reading this request: its slot, timer, buffer and scanner are freed."""
        self._release(conn)
        conn.timer, conn.complete, conn.buf = 0, complete, bytearray()
        conn.scanner.reset()

    def _hand_over(self, conn: Any, complete: bool, request: bytes) -> None:
        """From the loop's reading to gunicorn's parser: the bytes received become its input."""
        self._received(conn, complete)
        if conn.parser is None:
            conn.parser = get_parser(self.cfg, conn.sock, conn.client)
            conn.initialized = True
        conn.parser.unreader.unread(request)

    def _answer_here(self, conn: Any) -> None:
        """A whole review request in the API server's plain shape is answered here, its review told
        it may not wait for the API server (DEFERRED: it needs to; it goes to a thread from its
        bytes). Any other request goes to a thread."""
        request = bytes(conn.buf)
        plain = plain_review(request, self.head_limits) if self.direct_reply is not None else None
        if plain is None:
            return self._to_thread(conn, request)
        reply = self.direct_reply(plain.environ, may_wait=False)
        if reply is None or reply is DEFERRED:
            return self._to_thread(conn, request)
        self._received(conn, True)
        self.nr += 1
        closes = closes_after(self, conn, plain.closes)
        self._send_answer(conn, whole_answer(reply.code, reply.headers(), reply.body, closes), not closes)

    def _to_thread(self, conn: Any, request: bytes, complete: bool = True) -> None:
        """The request's bytes to gunicorn's parser, and the connection to a pool thread."""
        self._unwatch(conn)
        self._hand_over(conn, complete, request)
        self.enqueue_req(conn)

    def _send_answer(self, conn: Any, answer: bytes, keep: bool) -> None:
        """Send without blocking; the rest, if any, from a thread. Then keep or close."""
        try:
            sent = conn.sock.send(answer) if answer else 0
        except (ssl.SSLWantWriteError, BlockingIOError):
            sent = 0  # over TLS the same bytes must be offered again, whole
        except (OSError, ValueError) as exc:
            self.log.debug("connection from %s failed: %s", conn.client, exc)
            self._close(conn)
            return
        if sent < len(answer):
            self._unwatch(conn)
            fs = self.tpool.submit(self._send_rest, conn, answer[sent:], keep)
            fs.add_done_callback(lambda fut: self.method_queue.defer(self.finish_request, conn, fut))
            return
        if not keep:
            self._close(conn, linger=True)
            return
        if conn.parser is not None:
            conn.buf = bytearray(conn.parser.unreader.take_buffered())  # empty: nothing came after the request
        conn.continued = False
        self._keep_idle(conn)

    def _keep_idle(self, conn: Any) -> None:
        """An idle keep-alive connection: gunicorn's list and timeouts, as before, watched by its callback."""
        conn.set_timeout()
        if not self.alive:
            conn.timeout = min(conn.timeout, time.monotonic() + STOP_KEEPALIVE_LINGER)
        self.keepalived_conns.append(conn)
        callback = partial(self.on_client_socket_readable, conn)
        if conn.events:
            self.poller.modify(conn.sock, _READ, callback)  # still registered (answered on the loop): no system call
        else:
            self.poller.register(conn.sock, _READ, callback)
        conn.events = 0

    def _send_rest(self, conn: Any, data: bytes, keep: bool) -> bool:
        """In a thread: the part of an answer the socket did not take at once, blocking within the
        request timeout (a client that stopped reading holds this thread, not the loop)."""
        try:
            conn.sock.settimeout(self.limits.request_timeout)
            conn.sock.sendall(data)
        except (OSError, ValueError) as exc:
            self.log.debug("connection from %s failed: %s", conn.client, exc)
            return False
        return keep
