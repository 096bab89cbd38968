"""`serve`'s start, before gunicorn runs: worker memory, the metrics folder, the serving certificate.

Everything here happens once, in gunicorn's master, before the fork: every worker inherits it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import ssl
import sys
from pathlib import Path

from ..certs.files import ensure_dev_certs
from ..certs.serving import CertificateSource, require_client_certificates
from ..config import ConfigError
from ..settings.serve import ServeSettings
from . import memory
from .metricsport import prepare_metrics_dir


def prepare(settings: ServeSettings) -> CertificateSource:
    """Memory settings, an emptied metrics folder (removed at exit when it is our own), and the
    serving certificate: kept by the keeper (`--cert-management self`) or a development pair made
    when missing; a bad client CA file or no usable certificate stops the start with one line."""
    memory.keep_large_blocks_unmapped()
    if "prometheus_client" in sys.modules and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        raise ConfigError("internal: prometheus_client was imported before the metrics folder was set")
    metrics_dir = prepare_metrics_dir(settings)
    if not settings.listener.metrics_dir:
        master = os.getpid()
        atexit.register(lambda: shutil.rmtree(metrics_dir, ignore_errors=True) if os.getpid() == master else None)
    from . import metrics  # imported only now: it must see PROMETHEUS_MULTIPROC_DIR

    if settings.certs.cert_management == "self":
        from ..certs import keeper

        # A refused permission or an unreachable API server stops the start with one line (exit 2).
        keeper.bootstrap(settings)
        keeper.start_renewer(settings)
    elif ensure_dev_certs(Path(settings.listener.certs_dir), settings.certs.service_name, settings.certs.service_namespace):
        print(
            f"generated a development CA and serving certificate in {settings.listener.certs_dir}/ (trust {settings.listener.certs_dir}/ca.crt)",
            file=sys.stderr,
        )
    if settings.listener.client_ca_file:
        try:
            require_client_certificates(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), Path(settings.listener.client_ca_file))
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"--client-ca-file {settings.listener.client_ca_file}: {exc}") from None
    certificates = CertificateSource.for_settings(settings.listener, on_load=metrics.certificate_loaded)
    if certificates.current() is None:
        raise ConfigError(f"--certs-dir {settings.listener.certs_dir}: no usable tls.crt/tls.key")
    return certificates
