"""A tiny plain-HTTP server for GET endpoints beside the real work: the webhook's /metrics port
and the /healthz and /metrics of the reconciler and the auditor.

Plain `http.server` on a daemon thread: a few GETs a minute from Prometheus and the kubelet do
not justify a second web stack, and keeping them off the admission port means the HTTPS port
answers reviews and its own health only.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Mapping
from typing import Any

import prometheus_client as prom

# path -> () -> (status, body, content type)
Route = Callable[[], tuple[int, bytes, str]]


def serve(host: str, port: int, routes: Mapping[str, Route], name: str = "plain-http") -> http.server.ThreadingHTTPServer:
    """Start answering GET on `routes` (404 elsewhere, 405 for other methods) on a daemon thread."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = routes.get(self.path.split("?")[0])
            code, body, ctype = route() if route is not None else (404, b"not found\n", "text/plain")
            self._answer(code, body, ctype)

        def _refuse(self) -> None:
            self._answer(405, b"method not allowed\n", "text/plain")

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

        def _answer(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # scrapes and probes are not worth a log line
            pass

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server


def serve_health(host: str, port: int, healthy: Callable[[], bool], registry: prom.CollectorRegistry) -> http.server.ThreadingHTTPServer:
    """Start answering /healthz (200 while `healthy()`, else 503) and /metrics (`registry`) on a
    daemon thread: the endpoint of the commands that run beside the webhook (reconcile, audit)."""

    def health() -> tuple[int, bytes, str]:
        return (200, b"ok\n", "text/plain") if healthy() else (503, b"unhealthy\n", "text/plain")

    def render() -> tuple[int, bytes, str]:
        return 200, prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST

    return serve(host, port, {"/healthz": health, "/metrics": render}, name="health")
