"""Pods judged with chosen feature gates on: the options a newer API server validates with."""

from __future__ import annotations

import copy
from typing import Any

from webhook.kubeversion import KubeVersion
from webhook.podvalidation import apply_pod_defaults, validate_pod_create
from webhook.podvalidation.options import PodOptions


def options(*gates: str) -> PodOptions:
    """A 1.34 server with exactly `gates` on and no gate off: a field is dropped only where 1.34's
    schema does not know it, so each check is judged on what the test wrote."""
    return PodOptions(version=KubeVersion(1, 34), gates=frozenset(gates))


def gated_errors(pod: dict[str, Any], *gates: str) -> list[str]:
    """Every error of the defaulted Pod, judged with exactly `gates` on."""
    opts = options(*gates)
    return [str(e) for e in validate_pod_create(apply_pod_defaults(copy.deepcopy(pod), opts), opts=opts)]
