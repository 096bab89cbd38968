"""Settings of `serve`, whose config file `check`, `audit` and `smoke` read too

A layer of its own, below every command and above the packages its groups come from: the
webhook's ConfigMap is read by `check`, `audit` and `smoke` too (they must know its keys to ignore
them), and no command imports another. Its own groups (the listener, Kubernetes lookups, the
review log) are composed with the certificate group (webhook/certs/settings.py), the policy
settings (webhook/policies/settings.py) and the shared groups of webhook/config.py, one field per
concern. Declarations only; the `setting()` machinery is webhook/config.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .certs.settings import CertSettings
from .config import (
    ConfigError,
    KubernetesVersionSettings,
    KubeSettings,
    LogSettings,
    byte_size,
    choice,
    float_range,
    group,
    int_range,
    non_empty,
    parse_bool,
    setting,
)
from .policies.settings import PolicySettings


@dataclass(frozen=True)
class ListenerSettings:
    """The HTTPS listener: address, workers, limits and the TLS files it serves."""

    host: str = setting("0.0.0.0", non_empty, "address to listen on")
    port: int = setting(8443, int_range(1, 65535), "HTTPS port")
    certs_dir: Path = setting(Path("certs"), lambda raw: Path(non_empty(raw)), "folder with tls.crt/tls.key (and ca.crt); generated when missing")
    workers: int = setting(2, int_range(1, 64), "gunicorn worker processes")
    threads: int = setting(
        8, int_range(1, 256), "threads per worker, for requests over 64 KiB or pipelined and for reviews waiting on a lookup (the event loop answers the rest)"
    )
    keepalive: int = setting(120, int_range(30, 3600), "seconds an idle keep-alive connection stays open (the API server's client idles 90 s)")
    graceful_timeout: int = setting(20, int_range(1, 600), "seconds in-flight reviews get to finish on SIGTERM")
    max_body_bytes: int = setting(7 * 1024 * 1024, byte_size, "largest AdmissionReview body accepted (413 above)")
    request_timeout: int = setting(
        10, int_range(1, 300), "seconds a client has to finish the TLS handshake and send a whole request (408 after); idle keep-alive time is not counted"
    )
    tls_min_version: str = setting("1.2", choice("1.2", "1.3"), "minimum TLS version")
    client_ca_file: str = setting(
        "",
        str,
        "CA certificates (PEM) that sign the clients allowed to call the HTTPS port: when set, a client without a certificate signed by one of them is refused at the TLS handshake (the API server presents one when its admission configuration names a kubeconfig for the webhook); default: any client",
    )
    cert_reload_seconds: int = setting(10, int_range(1, 3600), "how often the certificate files are checked for a change")
    metrics_dir: str = setting("", str, "folder for multi-process metrics (emptied at start); default: a fresh temporary folder")
    metrics_port: int = setting(
        9090, int_range(0, 65535), "plain-HTTP port of /metrics, on the same host (0: off); the HTTPS port serves only reviews and health"
    )

    def check(self) -> None:
        if self.metrics_port == self.port:
            raise ConfigError(f"--metrics-port {self.metrics_port}: the same as --port, the HTTPS port; give the metrics port another number")


@dataclass(frozen=True)
class LookupSettings:
    """Whether rules may read other objects from the API server (the webhook only; `check` reads files)."""

    kube_lookups: str = setting(
        "auto", choice("auto", "on", "off"), "read other objects (ModelServings) from the API server: auto = when a kubeconfig or in-cluster config is found"
    )
    lookup_budget_seconds: float = setting(
        0.5,
        float_range(0.05, 1.5),
        "seconds a review may wait for the API server when an object it reads is not in the watch-fed cache; past it the rule allows with a warning (pod webhooks time out after 2 s)",
    )
    lookup_resync_seconds: int = setting(
        600, int_range(30, 86400), "seconds between full lists of the looked-up kinds (ModelServings, AutoscalingPolicies) behind the watch"
    )


@dataclass(frozen=True)
class ReviewLogSettings:
    """How much of the review traffic the log shows: denials, errors and audit findings always, other allowed reviews on request."""

    log_every_review: bool = setting(
        False, parse_bool, "log an info line for every review, allowed ones without audit findings too (debugging); by default those are logged at debug only"
    )


@dataclass(frozen=True)
class ServeSettings:
    """`serve`: the listener, the certificate keeper, the policy settings, the Kubernetes version, Kubernetes access, logging."""

    listener: ListenerSettings = group(ListenerSettings)
    certs: CertSettings = group(CertSettings)
    policies: PolicySettings = group(PolicySettings)
    lookups: LookupSettings = group(LookupSettings)
    version: KubernetesVersionSettings = group(KubernetesVersionSettings)
    kube: KubeSettings = group(KubeSettings)
    log: LogSettings = group(LogSettings)
    review_log: ReviewLogSettings = group(ReviewLogSettings)
