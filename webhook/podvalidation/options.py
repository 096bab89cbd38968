"""What a Pod validation depends on besides the pod: the Kubernetes minor it mirrors and the
feature gates on at that minor (upstream's `PodValidationOptions` and `utilfeature.DefaultFeatureGate`,
`pkg/api/pod/util.go` GetValidationOptionsFromPodSpecAndMeta).

Every validator that a gate or a version changes takes `opts` and asks `opts.on(GATE)`; the
versions at which each gate turns on live in one table (`versions.py`), never in comparisons of
version numbers scattered through the checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kubeversion import OLDEST, KubeVersion


@dataclass(frozen=True, slots=True)
class PodOptions:
    """`version`: the minor judged as; `gates`: the gates on at it; `off`: the gates that exist
    there and are off (a gate in neither does not exist yet, so nothing is dropped for it);
    `cluster`: the cluster's own minor when it is newer than any we judge by (else None)."""

    version: KubeVersion = OLDEST
    gates: frozenset[str] = frozenset()
    off: frozenset[str] = frozenset()
    cluster: KubeVersion | None = None

    def on(self, gate: str) -> bool:
        return gate in self.gates

    def is_off(self, gate: str) -> bool:
        return gate in self.off


# The table needs PodOptions first; 1.28 (OLDEST) is what a caller that names no version gets.
from .versions import options_for  # noqa: E402

DEFAULT_OPTIONS = options_for(OLDEST)
