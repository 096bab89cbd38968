"""Who the serving certificate names and whether `serve` keeps it itself: the certificate group of
`serve`'s settings, and what the keeper reads of them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..config import KubeSettings, choice, csv_list, int_range, non_empty, setting

WEBHOOK_CONFIGURATION_KINDS = ("validating", "mutating")


def webhook_configuration(entry: str) -> tuple[str, str]:
    """`mutating/NAME` -> ("mutating", NAME). The kind is spelled out because it decides which API
    holds the configuration; guessing it from the name sent any other name to the wrong API."""
    kind, slash, name = entry.strip().partition("/")
    if not slash or kind not in WEBHOOK_CONFIGURATION_KINDS or not name or "/" in name:
        raise ValueError(f"{entry!r} must be validating/NAME or mutating/NAME")
    return kind, name


def webhook_configurations(raw: str) -> tuple[str, ...]:
    """Comma-separated `KIND/NAME` entries, each checked by `webhook_configuration`."""
    entries = csv_list(raw)
    for entry in entries:
        webhook_configuration(entry)
    return entries


@dataclass(frozen=True)
class CertSettings:
    """Who the serving certificate names, and whether we keep it ourselves (cert-management=self)."""

    service_name: str = setting("servinggate-webhook", non_empty, "Service name, for the generated certificate's SANs")
    service_namespace: str = setting("servinggate-system", non_empty, "Service namespace, for the generated certificate's SANs")
    cert_management: str = setting("files", choice("files", "self"), "files: serve the files in certs-dir; self: keep them in a Secret, inject caBundle, renew")
    cert_secret_name: str = setting("servinggate-webhook-tls", non_empty, "Secret that holds the serving certificate (cert-management=self)")
    webhook_config_names: tuple[str, ...] = setting(
        ("validating/servinggate-validating", "mutating/servinggate-mutating"),
        webhook_configurations,
        "webhook configurations whose caBundle we keep current, as validating/NAME or mutating/NAME, comma-separated (cert-management=self)",
        metavar="KIND/NAME,...",
    )
    renew_before_days: int = setting(30, int_range(1, 3650), "renew the serving certificate this many days before it expires")


class _Folder(Protocol):
    """The listener's folder of certificate files."""

    @property
    def certs_dir(self) -> Path: ...


class KeeperSettings(Protocol):
    """What the keeper reads: the certificate group, the kubeconfig and the folder it writes the
    files to (the listener's). `serve`'s settings have them all; naming them here keeps certs/ from
    importing the settings of the server that uses it."""

    @property
    def certs(self) -> CertSettings: ...
    @property
    def kube(self) -> KubeSettings: ...
    @property
    def listener(self) -> _Folder: ...
