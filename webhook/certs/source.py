"""The TLS context gunicorn wraps each new connection with, rebuilt only when the files change.

gunicorn calls its `ssl_context` hook for every accepted connection; building a context there
re-reads and re-parses the key each time. We keep one context per worker process and re-check
the files at most every `reload_seconds`: a digest of the certificate and key bytes (and of the
client CA, when one is set) decides whether to rebuild (so rotated files are served to new
connections without a restart), and a failed read or parse keeps the last good context, logging
once per distinct failure.

With a client CA (`--client-ca-file`), the context requires a client certificate signed by it,
as controller-runtime's webhook server does with its `ClientCAName`: only a caller holding such a
certificate (the API server, configured through its AdmissionConfiguration) completes a handshake.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509

log = logging.getLogger("servinggate.tls")

_MIN_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True)
class ServingCertificate:
    """A certificate and key read from disk: the TLS context serving them, the digest of the
    files it was built from, and the serial and expiry that logs, /readyz and metrics report."""

    context: ssl.SSLContext
    digest: str
    serial: int
    not_after: dt.datetime


def require_client_certificates(context: ssl.SSLContext, ca_file: Path) -> None:
    """Make `context` refuse, during the handshake, a client without a certificate that one of the
    CAs in `ca_file` signed. Raises OSError, ssl.SSLError or ValueError for an unusable file."""
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cafile=str(ca_file))
    if not context.get_ca_certs():
        raise ValueError(f"no CA certificate in {ca_file}")


class CertificateSource:
    def __init__(self, certs_dir: Path, *, min_version: str = "1.2", reload_seconds: float = 10.0, on_load=None, client_ca_file: str | Path = ""):
        self.cert_file = Path(certs_dir) / "tls.crt"
        self.key_file = Path(certs_dir) / "tls.key"
        self.client_ca_file = Path(client_ca_file) if client_ca_file else None
        self.min_version = _MIN_VERSIONS[min_version]
        self.reload_seconds = reload_seconds
        self._on_load = on_load
        self._lock = threading.Lock()
        self._loaded: ServingCertificate | None = None
        self._checked_at = 0.0
        self._last_error: str | None = None

    @classmethod
    def for_settings(cls, settings: Any, on_load: Any = None) -> CertificateSource:
        """The source `serve` uses: the files, TLS floor, reload period and client CA its settings name."""
        return cls(
            settings.certs_dir,
            min_version=settings.tls_min_version,
            reload_seconds=settings.cert_reload_seconds,
            on_load=on_load,
            client_ca_file=settings.client_ca_file,
        )

    def _build(self, cert_pem: bytes, digest: str) -> ServingCertificate:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = self.min_version
        # Prefer AEAD suites with forward secrecy (TLS 1.3 suites are always AEAD).
        context.set_ciphers("ECDHE+AESGCM:ECDHE+CHACHA20")
        context.options |= ssl.OP_NO_COMPRESSION
        # No TLS 1.3 session tickets (OpenSSL sends two per connection): the API server's webhook
        # client keeps no session cache, so they would be built, sent and decrypted for nothing.
        context.num_tickets = 0
        try:
            cert = x509.load_pem_x509_certificate(cert_pem)
        except ValueError:
            raise ValueError(f"{self.cert_file.name} is not a PEM certificate") from None
        try:
            context.load_cert_chain(certfile=str(self.cert_file), keyfile=str(self.key_file))
        except ssl.SSLError as exc:  # OpenSSL's words ("PEM lib") do not say which file is wrong
            if exc.reason == "KEY_VALUES_MISMATCH":
                raise ValueError(f"{self.key_file.name} is not the key of {self.cert_file.name}") from None
            raise ValueError(f"{self.key_file.name} is not an unencrypted PEM private key") from None
        if self.client_ca_file is not None:
            require_client_certificates(context, self.client_ca_file)
        return ServingCertificate(context, digest, cert.serial_number, cert.not_valid_after_utc)

    def load(self) -> ServingCertificate:
        """Read the files now, for the start: unlike `refresh`, a file that cannot be used raises
        (OSError, ssl.SSLError or ValueError) instead of being logged and waited out."""
        with self._lock:
            self._checked_at = time.monotonic()
            return self._reload()

    def _reload(self) -> ServingCertificate:
        cert_pem = self.cert_file.read_bytes()
        key_pem = self.key_file.read_bytes()
        client_ca = self.client_ca_file.read_bytes() if self.client_ca_file is not None else b""
        digest = hashlib.sha256(cert_pem + b"\0" + key_pem + b"\0" + client_ca).hexdigest()
        if self._loaded is None or digest != self._loaded.digest:
            loaded = self._build(cert_pem, digest)
            previous, self._loaded = self._loaded, loaded
            self._last_error = None
            log.info("serving certificate loaded: serial %x, expires %s", loaded.serial, loaded.not_after.isoformat())
            if self._on_load is not None:
                self._on_load(loaded, previous)
        return self._loaded

    def refresh(self) -> ServingCertificate | None:
        """Re-read the files now; returns the current (possibly unchanged) certificate."""
        try:
            self._reload()
        except (OSError, ssl.SSLError, ValueError) as exc:
            message = f"{type(exc).__name__}: {exc}"
            if message != self._last_error:
                self._last_error = message
                state = "keeping the previous certificate" if self._loaded else "no certificate loaded"
                log.error("cannot load the serving certificate from %s (%s); %s", self.cert_file.parent, message, state)
            if self._on_load is not None:
                self._on_load(None, self._loaded)
        return self._loaded

    def current(self) -> ServingCertificate | None:
        now = time.monotonic()
        if self._loaded is None or now - self._checked_at >= self.reload_seconds:
            with self._lock:
                if self._loaded is None or now - self._checked_at >= self.reload_seconds:
                    self._checked_at = now
                    self.refresh()
        return self._loaded

    def context(self) -> ssl.SSLContext:
        loaded = self.current()
        if loaded is None:
            raise ssl.SSLError(f"no usable serving certificate in {self.cert_file.parent}")
        return loaded.context

    def ready(self) -> tuple[bool, str]:
        loaded = self.current()
        if loaded is None:
            return False, self._last_error or "no certificate loaded"
        if loaded.not_after <= dt.datetime.now(dt.UTC):
            return False, f"certificate expired at {loaded.not_after.isoformat()}"
        return True, f"certificate serial {loaded.serial:x} valid until {loaded.not_after.isoformat()}"
