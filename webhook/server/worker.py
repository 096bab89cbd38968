"""The gunicorn worker: an event loop reads every request and answers reviews itself (onloop.py);
gthread's thread pool runs the application for the rest.

gthread hands every new connection to a thread, which then blocks in the TLS handshake and in
reading the request for as long as the client cares to take: 16 stalled clients held all 2 x 8
threads. Here the worker's main thread, which already polls the listening socket and the idle
keep-alive connections, also does the handshake and reads the request (head and body) without
blocking, and hands a connection on only once its whole request is in memory: to its
`HandOver` (onloop.py, an object the worker holds, not a base class), which answers a plain review
on the loop or gives the request to a thread.
A client gets `Limits.request_timeout` seconds to finish its handshake and send a request; past
that it gets a 408 (or, before sending anything, just a close).

What the event loop owns besides: answers it gives without the application (a body over the
limit 413, malformed chunked framing 400, a head too large 431, a timeout 408, and every error
gunicorn's parser raises), all JSON `Status` bodies like the application's; explicit
`Connection: close` whenever the connection will not be kept; and the close itself, which sends
the answer, half-closes and reads (discarding) what the client still sends, so that a client
still sending a refused body can read the answer instead of a reset.

Each loop system call waits for the GIL, so a readable kept-alive connection only changes callback.
"""

from __future__ import annotations

import errno
import heapq
import io
import itertools
import os
import selectors
import socket
import ssl
import threading
import time
from contextlib import suppress
from functools import partial
from typing import Any

from ..serving import metrics
from .answering import CONTINUE, closes_after, run_application, status_answer
from .framing import COMPLETE, MORE, REFUSE, WAIT, Limits, RequestScanner
from .gunicorn_adapter import NoMoreData, ParseException, TConn, ThreadWorker, parse_error_status, tls_context
from .onloop import ANSWER_HERE_MAX, HandOver
from .plainreview import HeadLimits

_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
_RECV = 65536
SMALL_REQUEST = 256 * 1024  # buffered by any connection without a large-request slot


class Conn(TConn):
    """gunicorn's connection, plus what the event loop knows while it reads a request."""

    def __init__(self, cfg: Any, sock: Any, client: Any, server: Any, limits: Limits):
        super().__init__(cfg, sock, client, server)
        self.buf = bytearray()
        self.scanner = RequestScanner(limits.max_head, limits.max_body)
        self.handshaken = not cfg.is_ssl
        self.complete = False  # the request given to a thread was received whole
        self.continued = False  # "100 Continue" was sent for this request
        self.events = 0  # what the poller watches for, 0 when not registered with our callbacks
        self.timer = 0  # sequence number of the live timer entry (0: none)
        self.lingering = False
        self.large = False  # holds one of the worker's slots for a request larger than SMALL_REQUEST


class WebhookWorker(ThreadWorker):
    limits = Limits(max_body=7 * 1024 * 1024)

    def init_process(self) -> None:
        self._timers: list[tuple[float, int, Conn]] = []
        self._seq = itertools.count(1)
        self._local = threading.local()
        self._large = 0  # connections reading a request beyond SMALL_REQUEST (Limits.read_budget)
        self._parked: list[Conn] = []  # connections waiting for such a slot, not read meanwhile
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        app: Any = getattr(self, "wsgi")  # noqa: B009 - set by gunicorn at run time, untyped
        # Review requests read without gunicorn's parser (plainreview.py), unless a setting
        # changes how gunicorn reads every request (a PROXY header, a SCRIPT_NAME prefix).
        plain = self.cfg.proxy_protocol == "off" and not os.environ.get("SCRIPT_NAME")
        self.hand_over = HandOver(self, getattr(app, "direct_reply", None) if plain else None, HeadLimits.of(self.cfg))

        def honour_close(environ: dict[str, Any], start_response: Any) -> Any:
            # gunicorn drops an application's Connection header (hop-by-hop) and would keep a
            # connection open after announcing keep-alive; the decision is taken here instead,
            # before the head goes out, so the client always learns it.
            conn: Conn = self._local.conn
            resp = getattr(start_response, "__self__", None)
            if conn.complete and environ.get("HTTP_TRANSFER_ENCODING"):
                # A chunked body is all in memory: de-chunk it here, so that a framing error is
                # this worker's 400, not an exception inside the application.
                environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read())

            def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                asked = any(k.lower() == "connection" and "close" in v.lower() for k, v in headers)
                if resp is not None and closes_after(self, conn, asked or resp.req.should_close()):
                    resp.force_close()
                return start_response(status, headers, exc_info)

            return app(environ, start)

        self.wsgi = honour_close

    # ---- accepting ---------------------------------------------------------------------------

    def accept(self, listener: Any) -> None:
        try:
            client_sock, client_addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        with suppress(OSError):  # as Go's servers: an answer never waits for the client's delayed ACK
            client_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Conn(self.cfg, client_sock, client_addr, listener.getsockname(), self.limits)
        try:
            if self.cfg.is_ssl:
                conn.sock = tls_context(self.cfg).wrap_socket(
                    client_sock, server_side=True, do_handshake_on_connect=False, suppress_ragged_eofs=self.cfg.suppress_ragged_eofs
                )
        except (OSError, ValueError) as exc:  # ssl.SSLError included: no usable certificate
            self.log.error("cannot set up TLS for a new connection: %s", exc)
            self._close(conn)
            return
        self._read(conn, time.monotonic() + self.limits.request_timeout)

    # ---- reading a request in the event loop ----------------------------------------------

    def _watch(self, conn: Conn, events: int) -> None:
        if conn.events == events:
            return
        callback = partial(self._on_linger if conn.lingering else self._on_io, conn)
        if conn.events:
            self.poller.modify(conn.sock, events, callback)
        else:
            self.poller.register(conn.sock, events, callback)
        conn.events = events

    def _unwatch(self, conn: Conn) -> None:
        if conn.events:
            conn.events = 0
            try:
                self.poller.unregister(conn.sock)
            except (KeyError, ValueError, OSError):
                pass

    def _set_timer(self, conn: Conn, deadline: float) -> None:
        conn.timer = next(self._seq)
        heapq.heappush(self._timers, (deadline, conn.timer, conn))

    def _read(self, conn: Conn, deadline: float) -> None:
        self._set_timer(conn, deadline)
        self._on_io(conn)  # it registers with the poller only when it must wait: a kept-alive
        # client's next request is usually all there, and two epoll_ctl calls a request are saved

    def _on_io(self, conn: Conn, _fileobj: Any = None) -> None:
        try:
            if not conn.handshaken:
                conn.sock.do_handshake()
                conn.handshaken = True
            outcome = conn.scanner.scan(conn.buf) if conn.buf else WAIT
            budget = 4 * _RECV
            while outcome.kind == MORE:
                if outcome.expect_continue and not conn.continued:
                    conn.continued = True
                    conn.sock.send(CONTINUE)
                if budget <= 0 and not (self.cfg.is_ssl and conn.sock.pending()):
                    self._watch(conn, _READ)
                    return  # let other connections have a turn; the poller brings us back
                if len(conn.buf) >= SMALL_REQUEST and not conn.large and not self._take_large_slot(conn):
                    self._park(conn)
                    return  # memory is reserved for other large requests: this client waits
                data = conn.sock.recv(_RECV)
                if not data:
                    self._close(conn)  # the client left before finishing a request
                    return
                budget -= len(data)
                conn.buf += data
                outcome = conn.scanner.scan(conn.buf)
        except ssl.SSLWantReadError:
            self._watch(conn, _READ)
            return
        except ssl.SSLWantWriteError:
            self._watch(conn, _WRITE)
            return
        except (OSError, ValueError) as exc:  # ssl.SSLError included: a failed handshake
            self.log.debug("connection from %s dropped while reading: %s", conn.client, exc)
            self._close(conn)
            return
        if outcome.kind == REFUSE:
            self._refuse(conn, outcome.code, outcome.message)
        elif outcome.kind == COMPLETE and outcome.end == len(conn.buf) <= ANSWER_HERE_MAX and self.alive:
            self.hand_over.answer_here(conn)
        else:
            self.hand_over.to_thread(conn, bytes(conn.buf), complete=outcome.kind == COMPLETE)

    # Memory for unfinished requests: every connection may buffer SMALL_REQUEST bytes (a review
    # is a few KiB, so reviews never wait here); beyond that a request needs one of
    # read_budget // max_body slots, or its connection is not read (TCP pushes back on the
    # client) until a slot frees. A slot holder always finishes, so this cannot deadlock.

    def _take_large_slot(self, conn: Conn) -> bool:
        if self._large >= max(1, self.limits.read_budget // self.limits.max_body):
            return False
        self._large += 1
        conn.large = True
        return True

    def _release(self, conn: Conn) -> None:
        if conn.large:
            conn.large = False
            self._large -= 1

    def _park(self, conn: Conn) -> None:
        self._unwatch(conn)  # its request timer keeps running: a parked client can still get a 408
        self._parked.append(conn)

    def _unpark(self) -> None:
        """Read parked connections again, oldest first, while slots are free."""
        while self._parked and self._large < max(1, self.limits.read_budget // self.limits.max_body):
            conn = self._parked.pop(0)
            if conn.timer and not conn.lingering:
                self._on_io(conn)

    def _refuse(self, conn: Conn, code: int, message: str) -> None:
        """Answer without the application (the answer fits any socket buffer) and close."""
        metrics.refused(code)
        self.log.info("refused a request from %s: %d %s", conn.client[0] if conn.client else "", code, message)
        try:
            conn.sock.send(status_answer(code, message))
        except (OSError, ValueError) as exc:
            self.log.debug("could not send %d: %s", code, exc)
        self._close(conn, linger=True)

    # ---- in a thread: one complete request ------------------------------------------------

    def handle(self, conn: Conn) -> bool:
        """One request, in a thread."""
        self._local.conn = conn
        req = None
        try:
            # Blocking, but bounded: a read here only happens for a request dispatched
            # incomplete, and a write only for a client that stopped reading.
            conn.sock.settimeout(self.limits.request_timeout)
            req = next(conn.parser)
            if conn.continued:
                req._expected_100_continue = False  # the event loop has sent it
            keep = run_application(self, req, conn)
            # Kept only when the request came whole: what the application left unread is then
            # in memory, and dropping it cannot block.
            return bool(keep and conn.complete and conn.parser.finish_body())
        except (NoMoreData, StopIteration) as exc:
            self.log.debug("closing connection: %s", exc)
        except ParseException as exc:
            self.handle_error(req, conn.sock, conn.client, exc)
        except OSError as exc:  # ssl.SSLError, timeouts, resets
            self.log.debug("connection from %s failed: %s", conn.client, exc)
        except Exception as exc:
            self.handle_error(req, conn.sock, conn.client, exc)
        return False

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        code = parse_error_status(exc)
        message = "internal error in the webhook; see its log" if code == 500 else str(exc)[:200] or type(exc).__name__
        if code == 500:
            self.log.exception("error handling request")
        else:
            self.log.warning("invalid request from %s: %s", (addr or ("",))[0], message)
        metrics.refused(code)
        try:
            client.sendall(status_answer(code, message))
        except (OSError, ValueError):
            self.log.debug("failed to send an error answer")

    # ---- back in the event loop: keep, read the next request, or close ---------------------

    def finish_request(self, conn: Conn, fs: Any) -> None:
        keep = not fs.cancelled() and fs.exception() is None and bool(fs.result())
        if not keep:
            self._close(conn, linger=True)
            return
        try:
            conn.sock.setblocking(False)
            conn.buf = bytearray(conn.parser.unreader.take_buffered() if conn.parser is not None else b"")  # None: read by plainreview
            conn.continued = False
        except OSError:
            self._close(conn)
            return
        if conn.buf:  # the client has started its next request already
            self._read(conn, time.monotonic() + self.limits.request_timeout)
            return
        self.hand_over.keep_idle(conn)

    def on_client_socket_readable(self, conn: Conn, client: Any) -> None:
        self.keepalived_conns.remove(conn)
        conn.events = _READ  # still registered for reading: a new callback costs no system call
        self.poller.modify(client, _READ, partial(self._on_io, conn))
        self._read(conn, time.monotonic() + self.limits.request_timeout)

    def _close(self, conn: Conn, linger: bool = False) -> None:
        self._unwatch(conn)
        self._release(conn)
        conn.buf, conn.parser = bytearray(), None  # now: the timer heap may keep conn up to request_timeout
        if conn in self._parked:
            self._parked.remove(conn)
        conn.timer = 0
        if linger and conn.handshaken and not conn.lingering:
            try:
                conn.sock.setblocking(False)
                if isinstance(conn.sock, ssl.SSLSocket):
                    try:
                        conn.sock.unwrap()  # sends close_notify; the client's is not awaited
                    except (ssl.SSLError, OSError, ValueError):
                        pass
                conn.sock.shutdown(socket.SHUT_WR)
                conn.lingering = True
                self._set_timer(conn, time.monotonic() + self.limits.linger)
                self._watch(conn, _READ)
                self._on_linger(conn)
                return
            except (OSError, ValueError):
                pass
        conn.close()
        self.nr_conns -= 1

    def _on_linger(self, conn: Conn, _fileobj: Any = None) -> None:
        """Read and drop what a client still sends after a closing answer, until it closes too."""
        try:
            for _ in range(16):
                if not socket.socket.recv(conn.sock, _RECV):  # the raw bytes: no need to decrypt them
                    break
            else:
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        conn.lingering = False
        self._close(conn)

    # ---- timers ----------------------------------------------------------------------------
    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, seq, conn = heapq.heappop(self._timers)
            if conn.timer != seq:
                continue  # the connection moved on since this timer was set
            if conn.buf and conn.handshaken and not conn.lingering:
                self._refuse(conn, 408, f"request not received within {self.limits.request_timeout:g} s")
            else:
                conn.lingering = False
                self._close(conn)

    def _cap_keepalive(self, deadline: float) -> None:
        """Stopping: connections that have not started a request get no longer than kept-alive ones."""
        super()._cap_keepalive(deadline)
        for when, seq, conn in list(self._timers):
            if conn.timer == seq and not conn.buf and not conn.lingering and when > deadline:
                self._set_timer(conn, deadline)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        now = time.monotonic()
        if self._timers:
            timeout = min(timeout, max(self._timers[0][0] - now, 0.0))
        try:
            for key, _ in self.poller.select(timeout):
                key.data(key.fileobj)
        except OSError as e:  # as gunicorn's loop: an interrupted wait is just a short one
            if e.errno != errno.EINTR:
                raise
        self._unpark()
