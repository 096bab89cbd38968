"""The master's plain-HTTP port (/metrics and the kubelet's probes) and the folder of the workers'
multi-process metrics it reads; nothing here imports prometheus_client before that folder is set."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from ..config import ConfigError
from ..settings.serve import ServeSettings


def plain_routes(certificates: Any) -> dict[str, Any]:
    """The master's plain-HTTP port: /metrics aggregated over the workers' multiprocess files, so
    the admission port answers reviews and health only; and /healthz and /readyz (the serving
    certificate's state) for the kubelet's probes, which present no client certificate: with
    --client-ca-file the admission port refuses them at the handshake."""
    from . import metrics

    def render() -> tuple[int, bytes, str]:
        body, content_type = metrics.render()
        return 200, body, content_type

    def ready() -> tuple[int, bytes, str]:
        ok, detail = certificates.ready()
        return (200 if ok else 503), f"{'ok' if ok else 'not ready'}: {detail}\n".encode(), "text/plain"

    return {"/metrics": render, "/healthz": lambda: (200, b"ok\n", "text/plain"), "/readyz": ready}


def prepare_metrics_dir(settings: ServeSettings) -> str:
    """Point prometheus_client at an empty folder before it is imported (multiprocess mode)."""
    try:
        path = settings.listener.metrics_dir or tempfile.mkdtemp(prefix="servinggate-metrics-")
        if os.path.isdir(path):
            for entry in os.listdir(path):
                full = os.path.join(path, entry)
                if os.path.isdir(full):
                    shutil.rmtree(full)
                else:
                    os.unlink(full)
        else:
            os.makedirs(path)
    except OSError as exc:
        raise ConfigError(f"--metrics-dir {settings.listener.metrics_dir or tempfile.gettempdir()}: {exc.strerror or exc}") from None
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    return path
