"""Settings of `plan` and `reconcile`, named after CCE's Volcano add-on options."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass

from ..config import ConfigError, KubeSettings, LogSettings, choice, csv_list, group, int_range, non_empty, parse_bool, setting

COST_KEY = "controller.kubernetes.io/pod-deletion-cost"
KNOWN_COST_KEYS = (COST_KEY, "openvessel.io/workload-balancer-score")
RECORD_KEY = "servinggate.io/deletion-cost"
REMOVE_LAST_KEY = "servinggate.io/remove-last"  # "true": the pod gets costs.REMOVE_LAST_COST

DEFAULT_ACCELERATORS = ("huawei.com/Ascend910*", "huawei.com/Ascend310*", "huawei.com/ascend-310", "huawei.com/ascend-1980", "nvidia.com/gpu")

_TYPE_RE = re.compile(r"^(?P<group>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)/(?P<version>v[0-9]+[a-z0-9]*)/(?P<resource>[a-z0-9]([-a-z0-9]*[a-z0-9])?)$")


def parse_third_party_type(entry: str) -> tuple[str, str, str]:
    """`apps.kruise.io/v1alpha1/clonesets` -> (group, version, resource); ValueError if malformed."""
    m = _TYPE_RE.match(entry.strip())
    if not m:
        raise ValueError(f"third-party type {entry!r} is not group/version/resources (e.g. apps.kruise.io/v1alpha1/clonesets)")
    return m["group"], m["version"], m["resource"]


@dataclass(frozen=True)
class ScoringSettings:
    """What decides a cost; shared by `plan` and `reconcile` so both compute the same numbers."""

    enable_scale_in_score: bool = setting(False, parse_bool, "write deletion costs at all (off: nothing is written and existing costs stay, as in CCE)")
    scale_in_priority: str = setting(
        "binpack", choice("binpack", "wl"), "binpack: our cost wins over a value someone else set (logged); wl: a value set by someone else is left alone"
    )
    score_annotation_key: str = setting(COST_KEY, choice(*KNOWN_COST_KEYS), "annotation the cost is written to")
    third_party_types: tuple[str, ...] = setting(
        (), csv_list, "more scored workload types as group/version/resources, comma-separated (e.g. apps.kruise.io/v1alpha1/clonesets)"
    )
    accelerator_resources: tuple[str, ...] = setting(DEFAULT_ACCELERATORS, csv_list, "accelerator resource names or glob patterns (comma-separated)")
    contest_backoff_seconds: int = setting(
        3600,
        int_range(1, 7 * 86400),
        "another writer changes a cost we wrote: overwrite it at most once per pod in this window, and when it changes again leave the pod alone (and post an Event) for the window",
    )
    compaction_scope: str = setting(
        "auto",
        choice("node", "hypernode", "auto"),
        "node: the emptiest nodes go first; hypernode: also, among equally full nodes, those of the emptiest tier-1 HyperNode (Volcano network topology) first, one HyperNode after the other; auto: hypernode when the cluster has HyperNode objects",
    )

    def check(self) -> None:
        for entry in self.third_party_types:
            try:
                parse_third_party_type(entry)
            except ValueError as exc:
                raise ConfigError(f"--third-party-types: {exc}") from None
        if not self.accelerator_resources:
            raise ConfigError("--accelerator-resources: must name at least one resource")

    def third_party(self) -> tuple[tuple[str, str, str], ...]:
        return tuple(parse_third_party_type(e) for e in self.third_party_types)


def _default_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{os.getpid()}"


@dataclass(frozen=True)
class RuntimeSettings:
    """How `reconcile` runs: how fast it writes, leader election, its health endpoint, resync and watch."""

    scoring_qps: int = setting(100, int_range(1, 100000), "most pod patches per second")
    dry_run: bool = setting(False, parse_bool, "compute and log the costs, write nothing")
    leader_elect: bool = setting(False, parse_bool, "elect one active replica through a coordination.k8s.io/v1 Lease")
    lease_name: str = setting("servinggate-scale-in", non_empty, "name of the leader-election Lease")
    lease_namespace: str = setting("servinggate-system", non_empty, "namespace of the leader-election Lease")
    lease_duration_seconds: int = setting(15, int_range(2, 3600), "how long a lease is valid without renewal")
    renew_deadline_seconds: int = setting(10, int_range(1, 3600), "the leader stops writing if it could not renew for this long")
    retry_period_seconds: int = setting(2, int_range(1, 600), "how often the lease is tried or renewed")
    identity: str = setting("", str, "holder identity in the Lease (default: pod or host name and pid)")
    health_host: str = setting("0.0.0.0", non_empty, "address of the /healthz and /metrics endpoint")
    health_port: int = setting(8081, int_range(0, 65535), "port of the /healthz and /metrics endpoint (0: off)")
    resync_seconds: int = setting(600, int_range(0, 86400), "full recompute from the cache this often (0: never)")
    watch_timeout_seconds: int = setting(300, int_range(1, 3600), "server-side timeout of one watch request")

    def check(self) -> None:
        if self.renew_deadline_seconds >= self.lease_duration_seconds:
            raise ConfigError("--renew-deadline-seconds: must be less than --lease-duration-seconds")
        if self.retry_period_seconds >= self.renew_deadline_seconds:
            raise ConfigError("--retry-period-seconds: must be less than --renew-deadline-seconds")

    def holder_identity(self) -> str:
        return self.identity or _default_identity()


@dataclass(frozen=True)
class PlanSettings:
    """`plan`: scoring only (it reads a snapshot or a cluster given by its own arguments)."""

    scoring: ScoringSettings = group(ScoringSettings)


@dataclass(frozen=True)
class ReconcileSettings:
    """`reconcile`: scoring (shared with `plan`), how it runs, Kubernetes access, logging."""

    scoring: ScoringSettings = group(ScoringSettings)
    runtime: RuntimeSettings = group(RuntimeSettings)
    kube: KubeSettings = group(KubeSettings)
    log: LogSettings = group(LogSettings)
