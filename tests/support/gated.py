"""Pods judged with chosen feature gates on: the options a newer API server validates with."""

from __future__ import annotations

import copy
from typing import Any

from webhook.kubeversion import KubeVersion
from webhook.podvalidation import apply_pod_defaults, validate_pod_create
from webhook.podvalidation.options import PodOptions


def options(*gates: str) -> PodOptions:
    return PodOptions(version=KubeVersion(1, 34), gates=frozenset(gates))


def _restore_gated(original: dict[str, Any], defaulted: dict[str, Any]) -> None:
    """The defaults mirror 1.28, which drops the fields whose gates are off there
    (`resourceClaims`, container `resources.claims`, an init container's `restartPolicy`).
    A newer server keeps them, so they are put back as written. (Once the defaults follow the
    options, this changes nothing.)"""
    spec, out = original.get("spec", {}), defaulted.get("spec", {})
    if "resourceClaims" in spec:
        out["resourceClaims"] = copy.deepcopy(spec["resourceClaims"])
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c, d in zip(spec.get(key) or [], out.get(key) or []):
            if not isinstance(c, dict) or not isinstance(d, dict):
                continue
            if key == "initContainers" and "restartPolicy" in c:
                d["restartPolicy"] = c["restartPolicy"]
            claims = (c.get("resources") or {}).get("claims") if isinstance(c.get("resources"), dict) else None
            if claims is not None and isinstance(d.get("resources"), dict):
                d["resources"]["claims"] = copy.deepcopy(claims)


def gated_errors(pod: dict[str, Any], *gates: str) -> list[str]:
    """Every error of the defaulted Pod, judged with exactly `gates` on."""
    defaulted = apply_pod_defaults(copy.deepcopy(pod))
    _restore_gated(pod, defaulted)
    return [str(e) for e in validate_pod_create(defaulted, opts=options(*gates))]
