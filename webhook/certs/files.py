"""Certificates on disk: atomic writes, and the development pair `serve` and `certs` create.

The server reads `tls.crt`/`tls.key` from `certs_dir` and re-reads them when they change
(certs/source.py), so every write must be atomic: a reader sees the old file or the new one, never
half of either.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import OperatorError
from .issuing import Pair, default_hosts, generate_ca, generate_serving


class CertFilesError(OperatorError):
    """The certificate folder cannot be used (not writable, or a CA there that does not load)."""


def write_file(path: Path, data: bytes, mode: int) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a certificate."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def ensure_dev_certs(certs_dir: Path, service: str, namespace: str, *, force: bool = False) -> bool:
    """Create ca.* and tls.* in `certs_dir` unless a serving pair is already there. True if written.

    A folder that cannot be written, or a CA there that does not load, is the operator's to fix:
    `CertFilesError` names the folder (the flag is `--certs-dir` for both commands that call this)."""
    certs_dir = Path(certs_dir)
    try:
        return _ensure_dev_certs(certs_dir, service, namespace, force=force)
    except OSError as exc:
        raise CertFilesError(f"--certs-dir {certs_dir}: cannot write certificates there: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CertFilesError(f"--certs-dir {certs_dir}: ca.crt/ca.key there do not load ({exc}); fix or remove them") from None


def _ensure_dev_certs(certs_dir: Path, service: str, namespace: str, *, force: bool) -> bool:
    crt, key = certs_dir / "tls.crt", certs_dir / "tls.key"
    if not force and crt.exists() and key.exists():
        return False
    ca_crt, ca_key = certs_dir / "ca.crt", certs_dir / "ca.key"
    if ca_crt.exists() and ca_key.exists() and not force:
        ca = Pair(ca_crt.read_bytes(), ca_key.read_bytes())
    else:
        ca = generate_ca()
        write_file(ca_key, ca.key_pem, 0o600)
        write_file(ca_crt, ca.cert_pem, 0o644)
    serving = generate_serving(ca, default_hosts(service, namespace))
    write_file(key, serving.key_pem, 0o600)
    write_file(crt, serving.cert_pem, 0o644)
    return True
