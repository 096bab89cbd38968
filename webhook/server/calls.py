"""From a parsed request to the application's `Answer`: a review to `WebhookFlask.direct_reply`,
anything else to the Flask application through WSGI (PEP 3333: an environ we build, the answer
collected whole), in a thread (`Pool`). A small review is answered on the event loop, told it may
not wait for the API server; one that must (`DEFERRED`) runs again in a thread from the same parse.
"""

from __future__ import annotations

import io
import socket
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from werkzeug.http import is_hop_by_hop_header
from werkzeug.wrappers import Response

from ..serving.reviewing import DEFERRED, internal_error
from .http1 import Request

ON_LOOP_MAX = 64 * 1024  # a review body up to this size (a review is a few KiB) is answered on the loop


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole answer: status, the application's fields (no hop-by-hop ones), body; `closes`: the
    application asked for the connection to be closed after it."""

    code: int
    fields: list[tuple[str, str]]
    body: bytes
    closes: bool = False


def split_target(target: bytes) -> tuple[str, str]:
    """PATH_INFO (percent-decoded to a WSGI string) and QUERY_STRING of a request target, as
    gunicorn's wsgi.py makes them (an absolute URI gives its path)."""
    text = target.decode("latin-1")
    if not text.startswith("/"):
        parts = urlsplit(text)
        text = (parts.path or text) + ("?" + parts.query if parts.query else "")
    path, _, query = text.partition("?")
    path = path.partition("#")[0]
    return (unquote(path, "latin-1") if "%" in path else path), query.partition("#")[0]


def wsgi_environ(req: Request, client: Any, server: Any) -> dict[str, Any]:
    """The WSGI environ of a request (PEP 3333), as gunicorn's wsgi.py makes it; a field name with
    `_` is dropped, as gunicorn's default header_map does, so that it cannot pose as one spelt with `-`."""
    path, query = split_target(req.target)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": req.method.decode("latin-1"),
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "RAW_URI": req.target.decode("latin-1"),
        "SERVER_PROTOCOL": f"HTTP/{req.version[0]}.{req.version[1]}",
        "SERVER_NAME": str(server[0]) if server else "",
        "SERVER_PORT": str(server[1]) if server else "",
        "REMOTE_ADDR": str(client[0]) if client else "",
        "REMOTE_PORT": str(client[1]) if client else "",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "https",
        "wsgi.input": io.BytesIO(req.body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.input_terminated": True,
    }
    for name, value in req.headers:
        key, text = name.decode("latin-1").upper(), value.decode("latin-1")
        if key in ("CONTENT-TYPE", "CONTENT-LENGTH"):
            environ[key.replace("-", "_")] = text
        elif "_" not in key:
            key = "HTTP_" + key.replace("-", "_")
            environ[key] = environ[key] + "," + text if key in environ else text
    return environ


def content_type(req: Request) -> str:
    """The request's Content-Type (the last, as in a WSGI environ), or ""."""
    found = [value for name, value in req.headers if name.lower() == b"content-type"]
    return found[-1].decode("latin-1") if found else ""


class Application:
    """The worker's application: its direct review replies (if it has them) and the WSGI callable."""

    def __init__(self, wsgi: Any):
        self.wsgi = wsgi
        self.direct_reply = getattr(wsgi, "direct_reply", None)

    def review(self, req: Request, may_wait: bool) -> Answer | None:
        """The answer to a review, or None: the request is not one, or needs Flask's path."""
        if self.direct_reply is None or req.method != b"POST":
            return None
        reply = self.direct_reply(split_target(req.target)[0], content_type(req), req.body, may_wait)
        return None if reply is None or reply is DEFERRED else Answer(reply.code, reply.headers(), reply.body)

    def on_loop(self, req: Request) -> Answer | None:
        """The answer to a small review, or None: the request goes to a thread (`in_thread`)."""
        return self.review(req, may_wait=False) if len(req.body) <= ON_LOOP_MAX else None

    def in_thread(self, req: Request, client: Any, server: Any) -> Answer:
        """In a pool thread: a review that may wait, or the Flask application."""
        try:
            return self.review(req, may_wait=True) or self._call_wsgi(wsgi_environ(req, client, server))
        except Exception:
            reply = internal_error(repr(req.target[:200]))
            return Answer(reply.code, reply.headers(), reply.body, closes=True)

    def _call_wsgi(self, environ: dict[str, Any]) -> Answer:
        """The Flask application's answer, collected whole (werkzeug's `Response.from_app`, which
        also closes what the application returned)."""
        answer = Response.from_app(self.wsgi, environ, buffered=True)
        body, headers = answer.get_data(), answer.headers
        fields = [(name, value) for name, value in headers.items() if not is_hop_by_hop_header(name)]
        if "Content-Length" not in headers:
            fields.append(("Content-Length", str(len(body))))
        return Answer(answer.status_code, fields, body, closes="close" in headers.get("Connection", "").lower())


class Pool:
    """The application's threads; an answer goes back to the loop, which alone writes, through a
    queue and a socket the loop watches (`woken`)."""

    def __init__(self, threads: int):
        self.threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="app")
        self.done: deque[tuple[Any, Request, Future[Answer]]] = deque()
        self.woken, self._wake = socket.socketpair()
        self.woken.setblocking(False)

    def submit(self, call: Callable[..., Answer], conn: Any, req: Request) -> None:
        future = self.threads.submit(call, req, conn.client, conn.server)
        future.add_done_callback(lambda f: self._done(conn, req, f))

    def _done(self, conn: Any, req: Request, future: Future[Answer]) -> None:
        self.done.append((conn, req, future))
        with suppress(OSError):
            self._wake.send(b"\0")

    def finished(self) -> Iterator[tuple[Any, Request, Answer]]:
        """In the loop: the answers ready (`in_thread` contains the application's errors)."""
        with suppress(OSError):
            self.woken.recv(4096)
        while self.done:
            conn, req, future = self.done.popleft()
            yield conn, req, future.result()
