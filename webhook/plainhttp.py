"""The ports the commands listen on, and a tiny plain-HTTP server for GETs beside the real work.

The server answers the webhook's /metrics port and the /healthz and /metrics of the reconciler and
the auditor.

Every port is bound by `bind`, at start: a port already taken, a host that is not one of this
machine's addresses or a port the process may not open stops the command with one line naming the
setting to change (`PortError`, exit 2), the webhook's HTTPS port included: bound here, then
handed to gunicorn (webhook/server/launch.py), which would otherwise retry for five seconds.

Plain `http.server` on a daemon thread: a few GETs a minute from Prometheus and the kubelet do
not justify a second web stack, and keeping them off the admission port means the HTTPS port
answers reviews and its own health only.
"""

from __future__ import annotations

import errno
import http.server
import socket
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import OperatorError

if TYPE_CHECKING:  # imported when used: `serve` binds its ports before its metrics folder is set
    import prometheus_client as prom

# path -> () -> (status, body, content type)
Route = Callable[[], tuple[int, bytes, str]]

HEALTH_FLAGS = ("--health-host", "--health-port")  # the health endpoint's settings, in `reconcile` and `audit` alike
BACKLOG = 64  # connections waiting to be accepted on a plain-HTTP port (a scrape, a probe)


class PortError(OperatorError):
    """A port cannot be listened on as configured: the one line names the setting to change."""


def bind(host: str, port: int, flags: tuple[str, str], *, listen: bool = True) -> socket.socket:
    """A TCP socket bound to `host`:`port` and, unless `listen` is false, listening. `flags`: the
    host's and the port's settings, named by the `PortError` raised when the address cannot be had.

    SO_REUSEADDR, as gunicorn and http.server set it: a port a previous run left in TIME_WAIT is
    free, one that something listens on is not."""
    host_flag, port_flag = flags
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        if listen:
            sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise PortError(_cannot_listen(host, port, host_flag, port_flag, exc)) from None
    return sock


def _cannot_listen(host: str, port: int, host_flag: str, port_flag: str, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EADDRINUSE:
        return f"{port_flag} {port}: {host}:{port} is already in use; stop what listens there or choose another {port_flag}"
    if exc.errno == errno.EACCES:
        return f"{port_flag} {port}: not allowed to listen on {host}:{port} ({reason}); ports below 1024 need CAP_NET_BIND_SERVICE: choose a port from 1024"
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return f"{host_flag} {host}: not an address of this machine ({reason}); give one of its addresses, or 0.0.0.0 for all"
    return f"{host_flag} {host}, {port_flag} {port}: cannot listen there ({reason})"


def serve(listener: socket.socket, routes: Mapping[str, Route], name: str = "plain-http") -> http.server.ThreadingHTTPServer:
    """Start answering GET on `routes` (404 elsewhere, 405 for other methods) on a daemon thread,
    on `listener`, a socket `bind` returned (this server owns it from now on)."""

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

    # The server on the socket already bound (its address: host and port): its own socket,
    # created but never bound, is replaced before use.
    server = http.server.ThreadingHTTPServer(listener.getsockname()[:2], Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = listener
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server


def serve_health(host: str, port: int, healthy: Callable[[], bool], registry: prom.CollectorRegistry) -> http.server.ThreadingHTTPServer:
    """Start answering /healthz (200 while `healthy()`, else 503) and /metrics (`registry`) on a
    daemon thread: the endpoint of the commands that run beside the webhook (reconcile, audit),
    on `host`:`port` (`HEALTH_FLAGS`; a `PortError` when that cannot be listened on)."""
    import prometheus_client as prom

    def health() -> tuple[int, bytes, str]:
        return (200, b"ok\n", "text/plain") if healthy() else (503, b"unhealthy\n", "text/plain")

    def render() -> tuple[int, bytes, str]:
        return 200, prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST

    return serve(bind(host, port, HEALTH_FLAGS), {"/healthz": health, "/metrics": render}, name="health")
