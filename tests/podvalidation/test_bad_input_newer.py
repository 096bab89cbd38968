"""Wrong types in the 1.29-1.34 fields, every gate on: field errors at their paths, never a crash."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from support.gated import gated_errors
from support.pods import BASE_POD

GATES = (
    "AppArmorFields",
    "SupplementalGroupsPolicy",
    "SELinuxChangePolicy",
    "SELinuxMount",
    "RecursiveReadOnlyMounts",
    "ImageVolume",
    "MatchLabelKeysInPodAffinity",
    "DynamicResourceAllocation",
    "PodLevelResources",
    "HostnameOverride",
)
WRONG = [1, True, -1.5, "x", [1], [None]]


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def place(pod: dict[str, Any]) -> None:
        holder = pod
        for key in path[:-1]:
            holder = holder[key][0] if isinstance(holder.get(key), list) else holder.setdefault(key, {})
        holder[path[-1]] = value

    return place


PLACES = {
    "spec.securityContext.appArmorProfile": ("spec", "securityContext", "appArmorProfile"),
    "spec.securityContext.supplementalGroupsPolicy": ("spec", "securityContext", "supplementalGroupsPolicy"),
    "spec.securityContext.seLinuxChangePolicy": ("spec", "securityContext", "seLinuxChangePolicy"),
    "spec.containers[0].securityContext.appArmorProfile": ("spec", "containers", "securityContext", "appArmorProfile"),
    "spec.containers[0].resources.claims": ("spec", "containers", "resources", "claims"),
    "spec.resourceClaims": ("spec", "resourceClaims"),
    "spec.resources": ("spec", "resources"),
    "spec.hostnameOverride": ("spec", "hostnameOverride"),
}


@pytest.mark.parametrize("where", sorted(PLACES))
@pytest.mark.parametrize("value", WRONG, ids=repr)
def test_wrong_types_are_reported_where_they_are(where: str, value: Any) -> None:
    pod = copy.deepcopy(BASE_POD)
    _set(PLACES[where], value)(pod)
    errs = gated_errors(pod, *GATES)
    if value == "x" and where.endswith(("Policy", "hostnameOverride")):
        return  # a string is the right type there; an unknown policy is an Unsupported value, tested elsewhere
    assert errs and all(e.startswith(where) for e in errs), errs


@pytest.mark.parametrize("value", WRONG, ids=repr)
def test_wrong_types_in_mounts_image_volumes_and_affinity_terms(value: Any) -> None:
    pod = copy.deepcopy(BASE_POD)
    pod["spec"]["volumes"] = [{"name": "img", "image": value}, {"name": "i2", "image": {"reference": value}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "i2", "mountPath": "/a", "recursiveReadOnly": value}]
    term = {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "z", "matchLabelKeys": value, "mismatchLabelKeys": value}
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    errs = gated_errors(pod, *GATES)
    assert any(e.startswith("spec.volumes[0]") for e in errs)
    assert any(e.startswith("spec.containers[0].volumeMounts") for e in errs)
    assert any(e.startswith("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]") for e in errs)
