"""What runs beside the worker's loop: the Flask application, called through WSGI (PEP 3333: an
environ built from the parsed request, the answer collected whole into an `Answer`), and the
thread pool (`Pool`) where whatever may wait runs (a `Later`: webhook/serving/answer.py).
"""

from __future__ import annotations

import io
import socket
import sys
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from typing import Any
from urllib.parse import unquote, urlsplit

from werkzeug.http import is_hop_by_hop_header
from werkzeug.wrappers import Response

from ..serving.answer import Answer, Later
from .http1 import HttpRequest


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


def wsgi_environ(req: HttpRequest) -> dict[str, Any]:
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
        "SERVER_NAME": str(req.server[0]) if req.server else "",
        "SERVER_PORT": str(req.server[1]) if req.server else "",
        "REMOTE_ADDR": str(req.client[0]) if req.client else "",
        "REMOTE_PORT": str(req.client[1]) if req.client else "",
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


def call_wsgi(wsgi: Any, req: HttpRequest) -> Answer:
    """The WSGI application's answer, collected whole (werkzeug's `Response.from_app`, which also
    closes what the application returned)."""
    answer = Response.from_app(wsgi, wsgi_environ(req), buffered=True)
    body, headers = answer.get_data(), answer.headers
    fields = tuple((name, value) for name, value in headers.items() if not is_hop_by_hop_header(name) and name.lower() not in _WRITTEN)
    closes = "close" in headers.get("Connection", "").lower()
    return Answer(answer.status_code, body, headers.get("Content-Type", "application/octet-stream"), fields, closes)


_WRITTEN = ("content-type", "content-length")  # the head writer writes them from the `Answer`


class Pool:
    """The application's threads; an answer goes back to the loop, which alone writes, through a
    queue and a socket the loop watches (`woken`)."""

    def __init__(self, threads: int):
        self.threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="app")
        self.done: deque[tuple[Any, HttpRequest, Future[Answer]]] = deque()
        self.woken, self._wake = socket.socketpair()
        self.woken.setblocking(False)

    def submit(self, later: Later, conn: Any, req: HttpRequest) -> None:
        future = self.threads.submit(later.resume)
        future.add_done_callback(lambda f: self._done(conn, req, f))

    def _done(self, conn: Any, req: HttpRequest, future: Future[Answer]) -> None:
        self.done.append((conn, req, future))
        with suppress(OSError):
            self._wake.send(b"\0")

    def finished(self) -> Iterator[tuple[Any, HttpRequest, Answer]]:
        """In the loop: the answers ready (a `Later` from the Site contains the application's errors)."""
        with suppress(OSError):
            self.woken.recv(4096)
        while self.done:
            conn, req, future = self.done.popleft()
            yield conn, req, future.result()
