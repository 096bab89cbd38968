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
    version: KubeVersion = OLDEST
    gates: frozenset[str] = frozenset()

    def on(self, gate: str) -> bool:
        return gate in self.gates


DEFAULT_OPTIONS = PodOptions()
