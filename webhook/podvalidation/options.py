"""What a Pod validation depends on besides the pod: the Kubernetes minor it mirrors and the
feature gates on at that minor (upstream's `PodValidationOptions` and `utilfeature.DefaultFeatureGate`,
`pkg/api/pod/util.go` GetValidationOptionsFromPodSpecAndMeta).

Every validator that a gate or a version changes takes `opts` and asks `opts.on(GATE)`; the
versions at which each gate turns on live in one table (`versions.py`), never in comparisons of
version numbers scattered through the checks; the few changes no gate guards ask `opts.since(CHANGE)`
of the same module's SINCE table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..kubeversion import OLDEST, KubeVersion, judged_as
from .versions import GATES, gate_default, since


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

    def since(self, change: str) -> bool:
        """Whether the minor judged as has `change`, one of the ungated changes of versions.SINCE."""
        return since(change, self.version)


@cache
def options_for(version: KubeVersion, gates: tuple[tuple[str, bool], ...] = ()) -> PodOptions:
    """The options a Pod is judged with on a cluster of `version`: the gates on and off by default
    at the minor it is judged as (`judged_as`), then as the cluster's `--feature-gates` set them
    (`gates`: (name, on) pairs; a gate Pod validation does not read changes nothing), and the
    cluster's own minor when that differs."""
    judged = judged_as(version)
    defaults = {gate: gate_default(gate, judged) for gate in GATES}
    for gate, on in gates:
        if gate in defaults:
            defaults[gate] = on
    return PodOptions(
        version=judged,
        gates=frozenset(g for g, on in defaults.items() if on),
        off=frozenset(g for g, on in defaults.items() if on is False),
        cluster=version if version != judged else None,
    )


# What a caller that names no minor gets: 1.28 (OLDEST), the minor of the recorded corpus.
DEFAULT_OPTIONS = options_for(OLDEST)
