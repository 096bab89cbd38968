"""Deletion costs for NPU-compacting scale-in. Pure: plain dicts and numbers in, numbers and
write decisions out; no I/O, no clock (the JSON Patch that writes a cost is built in
patching.py, where it is sent).

The cost of a scored pod on node n (accelerators: A allocatable, U requested by the pods that
hold devices there, k requested by the pod itself):

    level = floor(1000 * min(U, A) / A)                  utilization in per mille, 0..1000
    idle  = min(A - min(U, A) + k, 999)                  idle devices once the pod is gone
    cost  = -((1000 - level) * 1000 + idle)              -1_000_999 .. -1

Lower cost goes first, so the pods on the emptiest nodes go first; at equal utilization the pod
whose removal frees the larger block goes first. Only the pod's own node enters the formula.

Pods whose controller sums their costs (Kthena, per ServingGroup and Role replica) get the cost
lifted above 0 (`summed`: 1 .. 1_000_999). A group whose pods are all gone sums to 0, and it must
still go before every group that has pods, as Kthena's own index order puts it without costs:
when a delete in Kthena's group deletion fails (3cc05728 deleteServingGroup), the half-deleted
group is rolled back to Running, and with costs below 0 every live group summed lower and Kthena
removed a live one instead (tests/e2e/test_faults.py). Other pods keep costs below 0, so a pod we
have not written yet (0) goes after every one we have (scalein/writequeue.py).
"""

from __future__ import annotations

import fnmatch
import math
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .. import podrequests
from ..kthena import MODELSERVING
from ..quantity import parse_quantity

LEVELS = 1000  # utilization resolution (per mille)
IDLE_CAP = 999  # the tie-break must stay below one level step
MIN_COST = -(LEVELS * 1000 + IDLE_CAP)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# A pod annotated remove-last: the highest cost the API server accepts. It is above every other
# cost we write (at most -1, or HN_OFFSET - 1 lifted by `summed`) and above "unset" (0), so the
# pod goes last in its workload; and a Kthena ServingGroup or Role replica holding one sums to
# more than any group of its size without one (up to 2,145 pods, in node scope), so the whole
# unit goes last. A constant, not "the workload's highest plus one", so an event still re-scores
# one node and nothing else.
REMOVE_LAST_COST = INT32_MAX
OFFSET = -MIN_COST + 1  # lifts the cost of a pod whose controller sums costs to 1 or more

REPLICASET = ("apps", "ReplicaSet")
BUILTIN_TYPES = frozenset({REPLICASET, MODELSERVING})
SUMMED_TYPES = frozenset({MODELSERVING})  # controllers that sum their pods' costs per unit

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


def controller_ref(pod: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(apiVersion, kind, name) of the pod's controller owner."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("apiVersion", ""), ref.get("kind", ""), ref.get("name", "")
    return None


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def cost(used: int, allocatable: int, own: int) -> int:
    """The cost of a pod holding `own` devices on a node with `used` of `allocatable` taken."""
    if allocatable <= 0:
        return 0
    used = min(max(used, 0), allocatable)
    level = used * LEVELS // allocatable
    idle = min(allocatable - used + max(own, 0), IDLE_CAP)
    return -((LEVELS - level) * 1000 + idle)


# ---- HyperNode scope ----------------------------------------------------------------------------
#
# With --compaction-scope hypernode, among nodes that are equally full the pods of the node in the
# emptier tier-1 HyperNode go first:
#
#     step  = floor(HN_STEPS * free devices of the HyperNode / its devices)     0..HN_STEPS
#     rank  = step * HN_SLOTS + crc32(HyperNode name) mod HN_SLOTS            (0: in no HyperNode)
#     cost  = -((1000 - level) * HN_RANKS * 1000 + rank * 1000 + idle)
#
# The node's level still comes first. Ordering by HyperNode first would spend a scale-in on the
# pods of fuller nodes in the emptiest HyperNode while nearly idle nodes elsewhere stay: on a
# randomly filled 5,000-node cluster it freed 35-63 % as many whole nodes for the first
# thousands of pods removed (benchmarks/scalein.py). Level first frees exactly the whole nodes
# node scope frees, and among nodes of one level it takes the HyperNode closest to empty, one
# HyperNode after the other (the slot, a fixed number per HyperNode, keeps HyperNodes of one step
# from interleaving), so whole HyperNodes come free as soon as their last nodes' level is reached.
# A HyperNode's pods are all rewritten when its step changes: the step is coarse so that a pod
# event rewrites its own node's pods and only rarely its HyperNode's, and a HyperNode keeps its
# step until its free share is HN_HYSTERESIS of a step beyond it, so that a pod deleted and
# another scheduled at a step boundary do not rewrite the HyperNode twice. The lowest cost,
# MIN_HN_COST, is within int32; the highest is -1.

HN_STEPS = 20
HN_SLOTS = 102
HN_RANKS = (HN_STEPS + 1) * HN_SLOTS
HN_HYSTERESIS = 0.25  # of a step
MIN_HN_COST = -(LEVELS * HN_RANKS * 1000 + (HN_RANKS - 1) * 1000 + IDLE_CAP)
HN_OFFSET = -MIN_HN_COST + 1
assert MIN_HN_COST >= INT32_MIN and HN_OFFSET - 1 < REMOVE_LAST_COST


def hypernode_rank(used: int, total: int, name: str, previous: int | None = None) -> int:
    """How early the pods of a HyperNode with `used` of `total` devices taken go among nodes of
    equal level (higher: earlier). `previous`: the rank its pods carry now, kept while the free
    share stays within HN_HYSTERESIS of a step of it."""
    if total <= 0:
        return 0
    free = total - min(max(used, 0), total)
    step = free * HN_STEPS // total
    if previous is not None and step != previous // HN_SLOTS:
        held = previous // HN_SLOTS
        if held - HN_HYSTERESIS <= free * HN_STEPS / total < held + 1 + HN_HYSTERESIS:
            step = held
    return step * HN_SLOTS + zlib.crc32(name.encode()) % HN_SLOTS


def in_hypernode(node_cost: int, rank: int) -> int:
    """A pod's cost in HyperNode scope, from its node cost (`cost`) and its HyperNode's rank."""
    level_part, idle = divmod(-node_cost, 1000)
    return -(level_part * HN_RANKS * 1000 + rank * 1000 + idle)


def summed(value: int, hypernode: bool) -> int:
    """The cost written for a pod whose controller sums its pods' costs (Kthena): `value` (from
    `cost`, or `in_hypernode`) lifted to 1 or more, its order kept (see the module docstring)."""
    return value + (HN_OFFSET if hypernode else OFFSET)


def parse_cost(raw: str | None) -> int | None:
    """An annotation value as the ReplicaSet controller and the API server read it (kubernetes
    `pkg/apis/core/helper/helpers.go` GetDeletionCostFromPodAnnotations: a first character that is
    '-', a digit other than '0', or "0" alone, then strconv.ParseInt(value, 10, 32)): no '+', no
    leading zeros, int32; "-007" is -7 there. None when it refuses the value."""
    if raw is None or not raw or not (raw[0] == "-" or raw == "0" or raw[0] in "123456789"):
        return None
    value = go_int(raw)
    return value if value is not None and INT32_MIN <= value <= INT32_MAX else None


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def go_int(raw: str) -> int | None:
    """strconv.ParseInt(raw, 10, 64) without its range check: an optional sign, then ASCII digits."""
    digits = raw[1:] if raw[:1] in ("+", "-") else raw
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    return int(raw)


def kthena_cost(raw: str | None) -> int | None:
    """An annotation value as Kthena reads it (kthena `pkg/model-serving-controller/controller/
    binpack_scaledown.go` getPodDeletionCost: strconv.Atoi, a Go int of 64 bits): "+5" is 5,
    "007" is 7, "-3" is -3; " 5", "" and a value beyond int64 are refused. None when refused."""
    if raw is None:
        return None
    value = go_int(raw)
    return value if value is not None and INT64_MIN <= value <= INT64_MAX else None


def go_sum(values: Iterable[int]) -> int:
    """Σ values as Go's int adds them: wrapping at 64 bits (Kthena sums costs in an int)."""
    total = sum(values) & (2**64 - 1)
    return total - 2**64 if total > INT64_MAX else total


def ranking_cost(raw: str | None, parse: Callable[[str | None], int | None] = parse_cost) -> int:
    """The cost a controller ranks by (`parse`: the ReplicaSet controller's reading, or
    `kthena_cost`): missing or invalid values count as 0."""
    value = parse(raw)
    return 0 if value is None else value


# ---- who owns a value, and what to write ------------------------------------------------------

NONE, WRITE, OVERWRITE, FOREIGN = "none", "write", "overwrite", "foreign"


@dataclass(frozen=True)
class CostAction:
    """What to do with one pod's cost annotation, and what it will hold afterwards."""

    action: str  # none | write | overwrite | foreign (left alone)
    value: str | None  # what the annotation will hold after we act


def decide(current: str | None, record: str | None, desired: int, priority: str) -> CostAction:
    """Compare the pod's annotations with the desired cost. A value that differs from our
    record was set by someone else: `wl` leaves it, `binpack` overwrites it (and the caller logs)."""
    want = str(desired)
    if current == want:
        return CostAction(NONE, current)
    if current is None or current == record:
        return CostAction(WRITE, want)
    if priority == "wl":
        return CostAction(FOREIGN, current)
    return CostAction(OVERWRITE, want)
