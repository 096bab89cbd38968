"""Rotation decisions for the self-managed certificate: pure functions of bytes, dicts and a clock.

The keeper (keeper.py) reads the Secret and the webhook configurations and writes them back; every
choice in between is made here: whether a Secret is ours to rewrite, whether it needs a new CA, a
new serving certificate or only dropping an expired previous CA, what the Secret holds afterwards,
which CAs `caBundle` must trust during a CA rollover, and the smallest patch that puts them there.
Keeping them free of I/O lets the tests walk a certificate through ten years of clock without an
API server.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping
from typing import Any, Literal

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from .issuing import Pair, generate_ca, generate_serving

MANAGED_BY_KEY = "servinggate.io/managed-by"
MANAGED_BY_VALUE = "servinggate-webhook"
TLS_CRT, TLS_KEY, CA_CRT, CA_KEY, PREVIOUS_CA = "tls.crt", "tls.key", "ca.crt", "ca.key", "ca-previous.crt"

Action = Literal["keep", "prune", "leaf", "ca"]


def is_ours(secret: Mapping[str, Any]) -> bool:
    """A Secret we created (and may rewrite). Anything else is the user's and is only read."""
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    return annotations.get(MANAGED_BY_KEY) == MANAGED_BY_VALUE


def decode(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """The Secret's data as bytes; a value that is not base64 is left out rather than trusted."""
    out = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[key] = base64.b64decode(value, validate=True)
        except (ValueError, TypeError):
            continue
    return out


def encode(data: Mapping[str, bytes]) -> dict[str, str]:
    """The Secret's `data` field (sorted, so equal contents give equal patches)."""
    return {k: base64.b64encode(v).decode("ascii") for k, v in sorted(data.items())}


def _load(pem: bytes | None) -> x509.Certificate | None:
    if not pem:
        return None
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError:
        return None


def _load_all(pem: bytes | None) -> list[x509.Certificate]:
    if not pem:
        return []
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        return []


def expiring(cert: x509.Certificate | None, now: dt.datetime, renew_before: dt.timedelta) -> bool:
    """True when the certificate is missing or expires within `renew_before` of `now`."""
    return cert is None or cert.not_valid_after_utc - renew_before <= now


def covers(cert: x509.Certificate, hosts: list[str]) -> bool:
    """True when every host is among the certificate's DNS names (a renamed Service needs a new one)."""
    try:
        names = set(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        return False
    return set(hosts) <= names


def signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    """True when `ca` issued `cert` (a serving certificate left over from another CA is replaced)."""
    try:
        cert.verify_directly_issued_by(ca)
    except Exception:  # InvalidSignature, wrong key type, wrong issuer name
        return False
    return True


def decide(data: Mapping[str, bytes], hosts: list[str], now: dt.datetime, renew_before: dt.timedelta) -> Action:
    """What a managed Secret needs: nothing, dropping an expired previous CA, a new serving
    certificate, or a new CA (and serving certificate)."""
    ca = _load(data.get(CA_CRT))
    if ca is None or not data.get(CA_KEY) or expiring(ca, now, renew_before):
        return "ca"
    leaf = _load(data.get(TLS_CRT))
    if leaf is None or not data.get(TLS_KEY) or expiring(leaf, now, renew_before) or not covers(leaf, hosts) or not signed_by(leaf, ca):
        return "leaf"
    if data.get(PREVIOUS_CA) and still_valid(data.get(PREVIOUS_CA), now) != data.get(PREVIOUS_CA):
        return "prune"
    return "keep"


def still_valid(pem: bytes | None, now: dt.datetime) -> bytes | None:
    """The certificates of `pem` that have not expired yet (None if none)."""
    kept = [c for c in _load_all(pem) if c.not_valid_after_utc > now]
    if not kept:
        return None
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in kept)


def issue(data: Mapping[str, bytes], action: Action, hosts: list[str], now: dt.datetime) -> dict[str, bytes]:
    """The Secret's new data after `action`. A replaced CA that is still valid moves to
    `ca-previous.crt`; an expired previous CA is dropped."""
    new = dict(data)
    if action == "ca":
        old_ca = data.get(CA_CRT) if _load(data.get(CA_CRT)) is not None else None
        ca = generate_ca(now=now)
        new[CA_CRT], new[CA_KEY] = ca.cert_pem, ca.key_pem
        previous = still_valid(old_ca, now)
    else:
        ca = Pair(data[CA_CRT], data[CA_KEY])
        previous = data.get(PREVIOUS_CA)
    previous = still_valid(previous, now)
    if previous:
        new[PREVIOUS_CA] = previous
    else:
        new.pop(PREVIOUS_CA, None)
    if action in ("ca", "leaf"):
        leaf = generate_serving(ca, hosts, now=now)
        new[TLS_CRT], new[TLS_KEY] = leaf.cert_pem, leaf.key_pem
    return new


def trusted_bundle(data: Mapping[str, bytes], now: dt.datetime) -> bytes:
    """What `caBundle` must hold: the current CA, then the previous one while it is valid."""
    bundle = data.get(CA_CRT) or b""
    previous = still_valid(data.get(PREVIOUS_CA), now)
    if previous and previous not in bundle:
        bundle = bundle.rstrip(b"\n") + b"\n" + previous
    return bundle


def disk_files(data: Mapping[str, bytes], now: dt.datetime) -> dict[str, tuple[bytes, int]]:
    """The files the server reads (the CA key stays in the Secret)."""
    files = {TLS_KEY: (data[TLS_KEY], 0o600), TLS_CRT: (data[TLS_CRT], 0o644)}
    bundle = trusted_bundle(data, now)
    if bundle:
        files[CA_CRT] = (bundle, 0o644)
    return files


def bundle_patch(configuration: Mapping[str, Any], bundle: bytes, service: str, namespace: str) -> dict[str, Any] | None:
    """A strategic merge patch that sets `caBundle` on the entries of `configuration` that call
    our Service, and only on those whose bundle differs; None when nothing needs to change. The
    `resourceVersion` makes the patch fail (409) if the configuration changed since it was read."""
    wanted = base64.b64encode(bundle).decode("ascii")
    entries = []
    for hook in configuration.get("webhooks") or ():
        svc = ((hook.get("clientConfig") or {}).get("service")) or {}
        if svc.get("name") != service or svc.get("namespace") != namespace:
            continue
        if (hook.get("clientConfig") or {}).get("caBundle") != wanted:
            entries.append({"name": hook["name"], "clientConfig": {"caBundle": wanted}})
    if not entries:
        return None
    meta = configuration.get("metadata") or {}
    return {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "webhooks": entries}
