"""`serve`'s start, before gunicorn runs: worker memory, the metrics folder, the serving certificate.

Everything here happens once, in gunicorn's master, before the fork: every worker inherits it.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import ssl
import sys
from pathlib import Path

from ..certs.files import ensure_dev_certs
from ..certs.source import CertificateSource, require_client_certificates
from ..config import ConfigError
from ..servesettings import ServeSettings
from . import memory
from .metricsport import prepare_metrics_dir

log = logging.getLogger("servinggate.tls")


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
    from .lookups import require_api

    require_api(settings)  # `--kube-lookups on` without API access: said before anything reads the API
    if settings.certs.cert_management == "self":
        from ..certs import keeper

        # A refused permission or an unreachable API server stops the start with one line (exit 2).
        keeper.bootstrap(settings)
        keeper.start_renewer(settings)
    elif ensure_dev_certs(Path(settings.listener.certs_dir), settings.certs.service_name, settings.certs.service_namespace):
        where = settings.listener.certs_dir
        log.info({"msg": "generated a development CA and serving certificate", "certsDir": str(where), "trust": f"{where}/ca.crt"})
    if settings.listener.client_ca_file:
        try:
            require_client_certificates(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), Path(settings.listener.client_ca_file))
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            reason = exc.strerror if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.strerror else f"no PEM CA certificate in it ({exc})"
            raise ConfigError(f"--client-ca-file {settings.listener.client_ca_file}: {reason}; give a readable PEM file of CA certificates") from None
    certificates = CertificateSource.for_settings(settings.listener, on_load=metrics.certificate_loaded)
    try:
        certificates.load()
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        fix = "replace them with a PEM certificate and its key"
        if settings.certs.cert_management == "files":
            fix += " (or remove both: a development pair is generated)"
        raise ConfigError(f"--certs-dir {settings.listener.certs_dir}: no usable tls.crt/tls.key: {_unusable(exc)}; {fix}") from None
    return certificates


def _unusable(exc: OSError | ValueError) -> str:
    """Why the serving certificate did not load: the file and its error, or what is wrong in it."""
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)
