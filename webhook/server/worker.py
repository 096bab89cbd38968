"""The gunicorn worker: one `selectors` loop over non-blocking TLS connections, a thread pool for
the application.

A class of our own on `gunicorn.workers.base.Worker`, gunicorn's documented extension point:
gunicorn keeps the master, the signals (SIGTERM sets `alive` false), reloads and the heartbeat
(`notify`). The loop accepts, handshakes, reads each request whole (http1.py, the one reader),
gives every request to the one seam (site.py: the route table, which answers on the loop or
leaves what may wait for a thread, calls.py), writes every answer (answers.py, the one head
writer) and decides once whether the connection is kept (`_closes`).
It never blocks on a client: a client has `Limits.request_timeout` seconds to finish its handshake
and send a request (then a 408, or a close if it sent nothing); nothing more is read from a
connection while its answer is being written; a closing answer is followed by a linger (conns.py).
"""

from __future__ import annotations

import os
import selectors
import socket
import ssl
import time
from collections import deque
from contextlib import suppress
from typing import Any

from gunicorn.workers.base import Worker

from ..serving import metrics
from ..serving.answer import Answer
from .answers import CONTINUE, status_answer, whole
from .calls import Pool
from .conns import BUSY, LINGERING, READING, RECV, SMALL_REQUEST, WRITING, Conn, Slots, drain, half_close, watch
from .http1 import HttpRequest, Limits, Refusal
from .site import Site

_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
STOP_IDLE = 2.0  # stopping: seconds an idle connection is still kept (a request may be on its way)
TICK = 0.25  # seconds between looks at the connections' deadlines


class WebhookWorker(Worker):
    alive: bool  # gunicorn's base worker sets it (and sockets, cfg, log, wsgi, nr, ppid: gunicorn/workers/base.py, 27.0)
    limits = Limits(max_body=7 * 1024 * 1024)
    certificates: Any = None  # webhook/certs/source.CertificateSource, set by launch.py's post_fork
    site: Site

    def load_wsgi(self) -> None:
        """What gunicorn loaded (launch.py's `WebhookServer.load`) must be a Site, checked again
        now (a hook or route added to Flask after the Site was made): else the worker fails to boot."""
        super().load_wsgi()
        if not isinstance(self.wsgi, Site):
            raise TypeError(f"WebhookWorker serves a webhook.server.site.Site, not {type(self.wsgi).__name__}")
        self.wsgi.check()
        self.site = self.wsgi

    def run(self) -> None:
        self.limits = self.limits.with_gunicorn(self.cfg)
        self.pool = Pool(self.cfg.threads)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.pool.woken, _READ, self._finished)
        self.conns: set[Conn] = set()
        self.idle = 0  # kept connections between requests
        self.slots, self.look_at = Slots(self.limits), 0.0
        self.ready: deque[Conn] = deque()  # kept connections whose next request has begun
        self.listening = False
        self._listen(True)
        beat, stop_by = 0.0, 0.0  # stop_by: set by the first turn after SIGTERM
        while not stop_by or (self.conns and time.monotonic() < stop_by):
            if time.monotonic() - beat >= 1.0:
                beat = time.monotonic()
                self.notify()
                self.alive = self.alive and self.ppid == os.getppid()
            if not self.alive and not stop_by:
                stop_by = time.monotonic() + self.cfg.graceful_timeout
                self._stop()
            for key, events in self.selector.select(0.0 if self.ready else TICK):
                if isinstance(key.data, Conn):
                    self._on_io(key.data)
                else:
                    key.data(key.fileobj, events)
            self._turn()
        self.pool.threads.shutdown(wait=False, cancel_futures=True)

    def _turn(self) -> None:
        """After the events: pipelined requests, deadlines (every TICK), parked connections."""
        while self.ready:
            conn = self.ready.popleft()
            if conn in self.conns and conn.state == READING:
                tail, conn.tail = conn.tail, b""
                self._read(conn, tail)
        now = time.monotonic()
        if now >= self.look_at:
            self.look_at = now + TICK
            for conn in [conn for conn in self.conns if 0 < conn.deadline <= now]:
                conn.deadline = 0
                if conn.state == READING and conn.reader.started and conn.handshaken:
                    self._refuse(conn, Refusal(408, f"request not received within {self.limits.request_timeout:g} s"))
                else:
                    self._close(conn)
        for conn in self.slots.unparked():
            if conn in self.conns and conn.state == READING:
                self._read(conn)

    # ---- accepting and stopping -------------------------------------------------------------

    def _listen(self, on: bool) -> None:
        if on == self.listening or (on and not self.alive):
            return
        for listener in self.sockets:
            if on:
                listener.setblocking(False)
                self.selector.register(listener, _READ, self._accept)
            else:
                self.selector.unregister(listener)
        self.listening = on

    def _accept(self, listener: Any, _events: int) -> None:
        """One connection per readiness, as gthread: every worker is woken, so a burst of clients
        spreads over the workers instead of all landing on the first to wake."""
        try:
            sock, client = listener.accept()
        except OSError:  # another worker took it (EAGAIN), or a client that left first
            return
        sock.setblocking(False)
        with suppress(OSError):  # as Go's servers: an answer never waits for the client's delayed ACK
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            tls = self.certificates.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except (OSError, ValueError) as exc:  # ssl.SSLError included: no usable certificate
            self.log.error("cannot set up TLS for a new connection: %s", exc)
            sock.close()
            return
        conn = Conn(tls, client, listener.getsockname(), self.limits)
        self.conns.add(conn)
        conn.expire_in(self.limits.request_timeout)
        if len(self.conns) >= self.cfg.worker_connections and not self._make_room(conn):
            self._listen(False)  # gunicorn's worker_connections: the rest wait in the backlog
        self._read(conn)

    def _make_room(self, new: Conn) -> bool:
        """At `worker_connections`, close the connection that has waited longest with no request
        under way (one that never sent a request first, then kept-alive ones), as nginx reuses idle
        connections when it runs out: else silent clients hold every slot, and a review on a new
        connection waits in the backlog past its webhook timeout. False: every other one is busy."""
        begun = set(self.ready)  # kept connections whose next request has arrived, to be read this turn
        waiting = [c for c in self.conns if c is not new and c.state == READING and not c.reader.started and c not in begun]
        if waiting:
            self._close(min(waiting, key=lambda c: (c.idle, c.deadline)))
        return bool(waiting)

    def _stop(self) -> None:
        """SIGTERM: no new connection; those that have not started a request get STOP_IDLE seconds."""
        self._listen(False)
        for conn in list(self.conns):
            if conn.state == READING and not conn.reader.started:
                conn.expire_in(STOP_IDLE)

    # ---- reading ------------------------------------------------------------------------------

    def _on_io(self, conn: Conn) -> None:
        if conn.state == READING:
            self._read(conn)
        elif conn.state == WRITING:
            self._flush(conn)
        elif conn.state == LINGERING and drain(conn):
            self._close(conn)

    def _read(self, conn: Conn, tail: bytes = b"") -> None:
        reader = conn.reader
        try:
            if not conn.handshaken:
                conn.sock.do_handshake()
                conn.handshaken = True
            if tail:
                reader.feed(tail)
            budget = 4 * RECV
            while not reader.complete:
                if reader.expects_continue and not conn.continued:
                    conn.continued = True
                    conn.sock.send(CONTINUE)
                if budget <= 0 and not conn.sock.pending():
                    watch(self.selector, conn, _READ)
                    return  # other connections have a turn; the selector brings us back
                if len(reader.body) >= SMALL_REQUEST and not self.slots.take(conn):
                    watch(self.selector, conn, 0)  # its deadline stays: a parked client can still get a 408
                    self.slots.parked.append(conn)
                    return
                data = conn.sock.recv(RECV)
                if not data:
                    self._close(conn)  # the client left before finishing a request
                    return
                if conn.idle:
                    self._busy(conn)
                    conn.expire_in(self.limits.request_timeout)  # idle time is not counted
                budget -= len(data)
                reader.feed(data)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError) as want:
            watch(self.selector, conn, _WRITE if isinstance(want, ssl.SSLWantWriteError) else _READ)
        except Refusal as refusal:
            self._refuse(conn, refusal)
        except (OSError, ValueError) as exc:  # ssl.SSLError included: a failed handshake
            self.log.debug("connection from %s dropped while reading: %s", conn.client, exc)
            self._close(conn)
        else:
            self._dispatch(conn)

    # ---- answering ----------------------------------------------------------------------------

    def _dispatch(self, conn: Conn) -> None:
        """A whole request to the Site: answered now, or what may wait goes to a thread."""
        self.slots.release(conn)
        conn.deadline, conn.continued = 0, False
        req = conn.reader.request(conn.client, conn.server)
        self.nr += 1
        result = self.site.answer(req)
        if isinstance(result, Answer):
            return self._answer(conn, req, result)
        watch(self.selector, conn, 0)
        conn.state = BUSY
        self.pool.submit(result, conn, req)

    def _finished(self, _sock: Any, _events: int) -> None:
        for conn, req, answer in self.pool.finished():
            if conn in self.conns:
                self._answer(conn, req, answer)

    def _closes(self, req: HttpRequest, answer: Answer) -> bool:
        """The one decision whether a connection closes after this answer, taken before its head
        goes out so that the head announces it: the client or the application asked, or the worker
        is stopping, has keep-alive off or keeps as many idle connections as gthread would
        (`worker_connections - threads`: ThreadWorker.handle_request, gunicorn/workers/gthread.py, 23.0)."""
        max_idle = self.cfg.worker_connections - self.cfg.threads
        return not req.keep_alive or answer.closes or not self.alive or not self.cfg.keepalive or self.idle >= max_idle

    def _answer(self, conn: Conn, req: HttpRequest, answer: Answer) -> None:
        closes = self._closes(req, answer)
        self._send(conn, whole(answer, closes, req.version, with_body=req.method != b"HEAD"), keep=not closes)

    def _refuse(self, conn: Conn, refusal: Refusal) -> None:
        """Answer without the application, and close."""
        metrics.refused(refusal.code)
        self.log.info("refused a request from %s: %d %s", conn.client[0] if conn.client else "", refusal.code, refusal.message)
        self.slots.release(conn)
        self._send(conn, status_answer(refusal.code, refusal.message), keep=False)

    def _send(self, conn: Conn, data: bytes, keep: bool) -> None:
        conn.state, conn.out, conn.keep = WRITING, data, keep
        self._flush(conn)

    def _flush(self, conn: Conn) -> None:
        """Write what is pending without blocking; the selector brings back the rest."""
        try:
            sent = conn.sock.send(conn.out)
        except (ssl.SSLWantWriteError, BlockingIOError):
            sent = 0  # over TLS the same bytes must be offered again, whole
        except ssl.SSLWantReadError:
            return watch(self.selector, conn, _READ)
        except (OSError, ValueError) as exc:
            self.log.debug("connection from %s failed: %s", conn.client, exc)
            return self._close(conn)
        conn.out = conn.out[sent:]
        if conn.out:
            if not conn.deadline:
                conn.expire_in(self.limits.request_timeout)  # a client that stopped reading is closed
            watch(self.selector, conn, _WRITE)
        elif not conn.keep:
            self._close(conn, linger=True)
        else:
            self._kept(conn)

    def _kept(self, conn: Conn) -> None:
        """The answer is out and the connection kept: its next request, or idle until it comes."""
        conn.state = READING
        conn.tail = conn.reader.next()
        if conn.tail or conn.sock.pending():
            conn.expire_in(self.limits.request_timeout)  # the client's next request has begun
            self.ready.append(conn)  # read by the loop's turn, not here: pipelined requests do not recurse
            return
        conn.idle, self.idle = True, self.idle + 1
        conn.expire_in(self.cfg.keepalive if self.alive else STOP_IDLE)
        watch(self.selector, conn, _READ)

    def _busy(self, conn: Conn) -> None:
        conn.idle, self.idle = False, self.idle - 1

    # ---- closing ------------------------------------------------------------------------------

    def _close(self, conn: Conn, linger: bool = False) -> None:
        """Close now, or (`linger`) after what the client still sends has been read and dropped."""
        watch(self.selector, conn, 0)
        self.slots.release(conn)
        conn.deadline, conn.out, conn.tail = 0, b"", b""
        conn.reader.close()  # its buffers and parser go now, even if a thread's answer still refers to conn
        if conn.idle:
            self._busy(conn)
        if linger and conn.handshaken and conn.state != LINGERING and half_close(conn):
            conn.state = LINGERING
            conn.expire_in(self.limits.linger)
            watch(self.selector, conn, _READ)
            if drain(conn):
                self._close(conn)
            return
        with suppress(OSError):
            conn.sock.close()
        self.conns.discard(conn)
        self._listen(len(self.conns) < self.cfg.worker_connections)
