"""`python -m webhook serve`: gunicorn run as a library, TLS only, every option set in one place.

Both ports are bound before anything else starts (plainhttp.bind): a port taken or a host not this
machine's stops the start at once with one line. gunicorn gets the HTTPS port bound (`fd://`), so
its own bind, which retries a taken port five times a second apart, never runs.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger as GunicornLogger

from .. import logs, plainhttp
from ..config import ConfigError, parse_args
from ..servesettings import ServeSettings
from ..serving import memory, startup
from ..serving.metricsport import plain_routes


class JsonLogger(GunicornLogger):
    """gunicorn's own lines (start, workers, errors) as one JSON object per line, like ours: the
    class gunicorn documents for `logger_class`, whose lines go to the `gunicorn.error` logger."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for handler in logging.getLogger("gunicorn.error").handlers:
            handler.setFormatter(logs.JsonFormatter())


class Ports:
    """`serve`'s two ports, bound at start: the HTTPS port (handed to gunicorn, which listens on
    it) and the plain-HTTP metrics port (already listening; None when `--metrics-port 0`)."""

    FLAGS = ("--host", "--port")
    METRICS_FLAGS = ("--host", "--metrics-port")

    def __init__(self, settings: ServeSettings) -> None:
        listener = settings.listener
        self.https = plainhttp.bind(listener.host, listener.port, self.FLAGS, listen=False)
        try:
            self.metrics = plainhttp.bind(listener.host, listener.metrics_port, self.METRICS_FLAGS) if listener.metrics_port else None
        except plainhttp.PortError:
            self.https.close()
            raise


def gunicorn_options(settings: ServeSettings, certificates: Any, ports: Ports | None = None) -> dict[str, Any]:
    """Every gunicorn setting we rely on; an unknown key is an error, not a silent no-op.
    `ports`: bound by `main`; without them (the benchmarks) gunicorn binds host:port itself and
    the metrics port is bound when gunicorn is ready."""
    host = f"[{settings.listener.host}]" if ":" in settings.listener.host else settings.listener.host
    from ..serving.limits import Limits
    from .forks import catch_early_stop, hold_stops_over_fork
    from .worker import WebhookWorker

    limits = Limits(max_body=settings.listener.max_body_bytes, request_timeout=settings.listener.request_timeout)

    def pre_fork(server: Any, worker: Any) -> None:
        memory.freeze_startup_heap()

    def child_exit(server: Any, worker: Any) -> None:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(worker.pid)

    def post_fork(server: Any, worker: Any) -> None:
        catch_early_stop(worker)  # first: until gunicorn's handlers, a SIGTERM would be lost
        # TLS from the certificate source, which rebuilds its context when the files change.
        worker.limits, worker.certificates = limits, certificates
        # A fifth of the default GIL switch interval: a review ready while another thread computes
        # waits less, which cuts the tail latency at little throughput cost.
        sys.setswitchinterval(0.001)
        memory.start_heap_trimmer()  # threads do not survive the fork: one per worker

    def when_ready(server: Any) -> None:
        # In the master, once, before the first fork.
        hold_stops_over_fork()
        # The plain-HTTP port (see `plain_routes`).
        metrics_port = ports.metrics if ports is not None else None
        if metrics_port is None and settings.listener.metrics_port:
            metrics_port = plainhttp.bind(settings.listener.host, settings.listener.metrics_port, Ports.METRICS_FLAGS)
        if metrics_port is not None:
            plainhttp.serve(metrics_port, plain_routes(certificates), name="metrics")

    return {
        "when_ready": when_ready,
        "pre_fork": pre_fork,
        "post_fork": post_fork,
        # The HTTPS port bound by `main`, handed over (gunicorn closes our descriptor of it).
        "bind": [f"fd://{ports.https.detach()}"] if ports is not None else [f"{host}:{settings.listener.port}"],
        "workers": settings.listener.workers,
        "worker_class": WebhookWorker,  # `threads`: its pool for the application
        "threads": settings.listener.threads,
        # The API server reuses connections; a long keep-alive spares a TLS handshake per review.
        "keepalive": settings.listener.keepalive,
        "graceful_timeout": settings.listener.graceful_timeout,
        "timeout": 30,
        "child_exit": child_exit,
        "preload_app": True,
        "accesslog": None,
        "errorlog": "-",
        "logger_class": JsonLogger,
        "loglevel": settings.log.log_level,
        "proc_name": "servinggate-webhook",
        "worker_tmp_dir": "/dev/shm" if os.path.isdir("/dev/shm") else None,
        # Never recycle workers: prometheus multiprocess files would pile up (client_python#275).
        "max_requests": 0,
        # No gunicornc control socket: it would write under $HOME, which is read-only in the pod.
        "control_socket_disable": True,
    }


class WebhookServer(BaseApplication):
    """gunicorn run as a library; what it loads and gives each worker is the Site (site.py)."""

    def __init__(self, app: Any, options: dict[str, Any]):
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if key not in self.cfg.settings:
                raise ConfigError(f"unknown gunicorn setting {key!r}")
            if value is not None:
                self.cfg.set(key, value)

    def load(self) -> Any:
        return self.application


def main(argv: list[str]) -> int:
    settings = parse_args(ServeSettings, argv, "python -m webhook serve", "Run the ServingGate admission webhook over HTTPS.")
    logs.configure(settings.log.log_level)
    ports = Ports(settings)  # first: a port that cannot be had stops the start before any work
    certificates = startup.prepare(settings)
    from .app import create_app  # only now: the metrics it imports must see the metrics folder

    WebhookServer(create_app(settings, certificates=certificates), gunicorn_options(settings, certificates, ports)).run()
    return 0
