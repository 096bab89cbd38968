"""What pods and nodes hold of accelerators, as the scheduler counts them: which resource names are
accelerators (`AcceleratorMatcher`), a pod's requests of them (`effective_requests`, through
podrequests.py), a node's allocatable ones, and whether a pod still holds its devices. Pure: plain
dicts in, whole device counts out. The costs (costs.py) are computed from these counts."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from .. import podrequests
from ..quantity import parse_quantity

TERMINATED_PHASES = frozenset({"Succeeded", "Failed"})

# HAMi exposes device memory and core share next to the card count; a glob such as
# "huawei.com/Ascend910*" must not mistake MiB for cards. An exact name still matches.
_COMPANION_SUFFIXES = ("-memory", "-core", "-cores", "-mem")


class AcceleratorMatcher:
    """Decides (and caches) whether a resource name is an accelerator."""

    def __init__(self, patterns: Iterable[str]):
        self.exact = frozenset(p for p in patterns if not any(c in p for c in "*?["))
        self.globs = tuple(p for p in patterns if p not in self.exact)
        self._cache: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        hit = self._cache.get(name)
        if hit is None:
            hit = name in self.exact or (not name.endswith(_COMPANION_SUFFIXES) and any(fnmatch.fnmatchcase(name, g) for g in self.globs))
            self._cache[name] = hit
        return hit

    def amounts(self, resources: Mapping[str, Any]) -> dict[str, Decimal]:
        """The accelerators of a ResourceList (a container's requests, the pod's overhead), each
        as an exact Decimal (summed before rounding, as the scheduler sums quantities)."""
        out = {}
        known = self._cache
        for name, raw in resources.items():
            hit = known.get(name)
            if hit or (hit is None and self(name)):
                value = podrequests.decimal_quantity(raw)
                if value is not None:
                    out[name] = value
        return out


def quantity_units(raw: Any) -> int:
    """A resource quantity as whole units, rounded up like the scheduler; malformed -> 0."""
    value = parse_quantity(raw)
    if value is None or value <= 0:
        return 0
    return int(math.ceil(value))


def effective_requests(spec: Mapping[str, Any], is_accel: AcceleratorMatcher) -> dict[str, int]:
    """Accelerator requests as the scheduler counts them (podrequests.pod_requests: its
    PodRequests, sidecars and overhead included), each rounded up to whole units as the
    scheduler holds an extended resource. Pod-level `spec.resources` is honoured whenever a pod
    has it: the API server drops it from pods created while PodLevelResources is off, and it
    takes only cpu, memory and hugepages, which no accelerator pattern names."""
    out = {}
    for name, amount in podrequests.pod_requests(spec, is_accel.amounts, pod_level=True).items():
        units = math.ceil(amount)
        if units > 0:
            out[name] = units
    return out


def node_accelerators(node: Mapping[str, Any], is_accel: AcceleratorMatcher) -> dict[str, int]:
    alloc = ((node.get("status") or {}).get("allocatable")) or {}
    out = {}
    for name, q in alloc.items():
        if is_accel(name):
            units = quantity_units(q)
            if units:
                out[name] = units
    return out


def holds_devices(pod: Mapping[str, Any]) -> bool:
    """Whether a pod counts toward its node's utilization. We leave out terminated pods
    (Succeeded/Failed) and pods being deleted (deletionTimestamp set): the scheduler still
    reserves a terminating pod's devices, but they are about to come free, and the next
    scale-in should see the node as it will be."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return (pod.get("status") or {}).get("phase") not in TERMINATED_PHASES
