"""The master's plain-HTTP port (/metrics and the kubelet's probes) and the folder of the workers'
multi-process metrics it reads; nothing here imports prometheus_client before that folder is set."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from ..config import ConfigError
from ..servesettings import ServeSettings
from .answer import Answer


def plain_routes(certificates: Any) -> dict[str, Any]:
    """The master's plain-HTTP port: /metrics aggregated over the workers' multiprocess files, so
    the admission port answers reviews and the probes only; and the kubelet's probes /healthz and
    /readyz (probes.py: the same answers as on the admission port, without a worker's detail), which
    present no client certificate: with --client-ca-file the admission port refuses them at the handshake."""
    from . import metrics
    from .probes import HEALTHY, readiness

    def render() -> tuple[int, bytes, str]:
        body, content_type = metrics.render()
        return 200, body, content_type

    def plain(answer: Answer) -> tuple[int, bytes, str]:
        return answer.code, answer.body, answer.content_type

    return {"/metrics": render, "/healthz": lambda: plain(HEALTHY), "/readyz": lambda: plain(readiness(certificates))}


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
