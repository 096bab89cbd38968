"""Settings of `audit`: the policy settings (so it judges as the webhook does), its own loop,
reports and leader election, Kubernetes access and logging.

Like `check`, it reads a `serve` config file (the webhook's settings, `--rule-actions` among
them) and ignores that file's other keys: pointing both at one file is how the auditor and the
webhook agree on each rule's action (`serve`'s settings are webhook/servesettings.py,
declarations only)."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass

from ..config import KubernetesVersionSettings, KubeSettings, LogSettings, group, int_range, non_empty, parse_bool, setting
from ..policies.settings import PolicySettings
from ..servesettings import ServeSettings

_DURATION = re.compile(r"(\d+)(h|m|s)")
_UNIT = {"h": 3600, "m": 60, "s": 1}


def duration(raw: str) -> int:
    """`10m`, `1h30m`, `90s`, `600` (seconds) or `0` (off) -> seconds."""
    text = str(raw).strip()
    if text.isdigit():
        return int(text)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("must be a duration such as 10m, 1h30m, 90s, or 0 (off)")
    return sum(int(n) * _UNIT[u] for n, u in parts)


def _default_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{os.getpid()}"


@dataclass(frozen=True)
class AuditorSettings:
    """What `audit` lists, how often, and what it writes besides its report."""

    namespace: str = setting("", str, "audit this namespace only (default: every namespace)")
    page_size: int = setting(500, int_range(1, 10000), "objects per list request (the `limit` of each page)")
    write_reports: bool = setting(
        False, parse_bool, "write one wgpolicyk8s.io PolicyReport `servinggate` per namespace with findings, and delete ours where none is left"
    )
    every: int = setting(0, duration, "audit again after this long, forever (e.g. 10m; 0: audit once and exit with the verdict)", metavar="DURATION")
    leader_elect: bool = setting(False, parse_bool, "with --every: audit only while holding a coordination.k8s.io/v1 Lease")
    lease_name: str = setting("servinggate-audit", non_empty, "name of the auditor's Lease")
    lease_namespace: str = setting("servinggate-system", non_empty, "namespace of the auditor's Lease")
    health_host: str = setting("0.0.0.0", non_empty, "address of the /healthz and /metrics endpoint")
    health_port: int = setting(0, int_range(0, 65535), "port of the /healthz and /metrics endpoint (0: off)")

    def holder_identity(self) -> str:
        return _default_identity()


@dataclass(frozen=True)
class AuditSettings:
    """`audit`: the policy settings and the Kubernetes version (shared with `serve`), the auditor's own, Kubernetes access, logging."""

    policies: PolicySettings = group(PolicySettings)
    auditor: AuditorSettings = group(AuditorSettings)
    version: KubernetesVersionSettings = group(KubernetesVersionSettings)
    kube: KubeSettings = group(KubeSettings)
    log: LogSettings = group(LogSettings)


SHARES_FILE_WITH = ServeSettings  # `config.load(..., shared_with=)`: the webhook's keys it tolerates in its file
