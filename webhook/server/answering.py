"""Running the application for one request and sending its answer in one write.

gunicorn's response sends its head as soon as the application starts the body, then each body
chunk: over TLS that is two records (two encryptions, two system calls) for every review, about
a quarter of a worker's time in `SSLSocket.send` under load. `Answer` keeps the head until the
first body bytes (or the end of the answer) and sends them together. Its Date header is
formatted once a second, not once an answer.

`run_application` is the worker's per-request step (gthread's `handle_request` minus what this
server never enables: access log, request hooks, worker recycling, sendfile over TLS).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import orjson

from ..admission.status import Status
from ..serving.reviewing import JSON
from .gunicorn_adapter import SERVER, close_graceful, wsgi
from .gunicorn_adapter import http_date as format_http_date
from .replies import status_line

_date: tuple[int, str] = (0, "")


def http_date() -> str:
    """The Date header's value, recomputed when the second changes (benign race between threads:
    two may format the same second)."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, format_http_date(now))
    return _date[1]


# The interim answer to "Expect: 100-continue": a status line only, no fields (RFC 9110 15.2).
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def http_head(code: int, headers: list[tuple[str, str]], connection: str, version: tuple[int, int] = (1, 1), chunked: bool = False) -> bytes:
    """The one writer of an answer's head, whoever answers (a review read without gunicorn's
    parser, the application through gunicorn's response, a refusal of the event loop): the status
    line with the standard reason phrase, Server, Date and Connection in gunicorn's order, then
    the answer's own fields."""
    lines = [f"HTTP/{version[0]}.{version[1]} {status_line(code)}\r\n", f"Server: {SERVER}\r\n", f"Date: {http_date()}\r\n", f"Connection: {connection}\r\n"]
    if chunked:
        lines.append("Transfer-Encoding: chunked\r\n")
    lines.extend(f"{name}: {value}\r\n" for name, value in headers)
    lines.append("\r\n")
    return "".join(lines).encode("latin-1")


def whole_answer(code: int, headers: list[tuple[str, str]], body: bytes, closes: bool) -> bytes:
    """An HTTP/1.1 answer, head and body, byte for byte as `Answer` writes it."""
    return http_head(code, headers, "close" if closes else "keep-alive") + body


def status_answer(code: int, message: str) -> bytes:
    """A whole answer carrying a metav1.Status, as the application answers errors; always closes
    (the event loop's refusals and what gunicorn's parser refuses)."""
    body = orjson.dumps(Status(code, message).http_dict())
    return whole_answer(code, [("Content-Type", JSON), ("Content-Length", str(len(body)))], body, closes=True)


def closes_after(worker: Any, conn: Any, asked: bool) -> bool:
    """The one decision whether a connection closes after the answer about to be written, taken
    before its head goes out so that the head announces it: the client or the application asked
    (`asked`), the request was handed over before it was all received (what follows it is
    unknown), or the worker is stopping, has keep-alive off or keeps as many idle connections as
    it may. A refusal (`status_answer`) always closes."""
    return asked or not conn.complete or not worker.alive or not worker.cfg.keepalive or len(worker.keepalived_conns) >= worker.max_keepalived


class Answer(wsgi.Response):
    """gunicorn's response with its head held back until it can leave with the body."""

    _head = b""
    headers_sent: bool  # set by gunicorn's __init__
    status_code: int  # set by gunicorn's start_response

    def send_headers(self) -> None:
        if self.headers_sent:
            return
        connection = "upgrade" if self.upgrade else "close" if self.should_close() else "keep-alive"
        self._head = http_head(self.status_code, self.headers, connection, self.req.version, self.chunked)
        self.headers_sent = True

    def _take_head(self) -> bytes:
        head, self._head = self._head, b""
        return head

    def _emit_body(self, data: bytes) -> None:
        if self.chunked:
            data = b"%X\r\n%s\r\n" % (len(data), data)
        self.sock.sendall(self._take_head() + data)

    def close(self) -> None:
        if not self.headers_sent:
            self.send_headers()
        out = self._take_head() + (b"0\r\n\r\n" if self.chunked else b"")
        if out:
            self.sock.sendall(out)


def run_application(worker: Any, req: Any, conn: Any) -> bool:
    """Run the WSGI application for one parsed request and send its answer; True when the
    connection may be kept for another request. An exception before the answer started goes back
    to the caller (which answers 500); after, the connection is closed, as gthread does."""
    resp, environ = wsgi.create(req, conn.sock, conn.client, conn.server, worker.cfg, response_class=Answer)
    environ["wsgi.multithread"] = True
    worker.nr += 1
    body = worker.wsgi(environ, resp.start_response)
    try:
        for chunk in body:
            resp.write(chunk)
        resp.close()
    except OSError:
        raise
    except (Exception, SystemExit):
        if not resp.headers_sent:
            raise
        worker.log.exception("error after the answer started")
        close_graceful(conn.sock)
        raise StopIteration() from sys.exc_info()[1]
    finally:
        if hasattr(body, "close"):
            body.close()
    return not resp.should_close()
