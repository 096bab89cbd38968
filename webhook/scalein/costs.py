"""Deletion costs for NPU-compacting scale-in: the cost formula, the HyperNode ranks of
`--compaction-scope hypernode`, and the lift of costs that a controller sums. Pure: numbers in,
numbers out; no I/O, no clock. What the numbers are counted from is accounting.py; how
controllers parse the values written is goints.py.

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
have not written yet (0) goes after every one we have (scalein/reconcile/writequeue.py).
"""

from __future__ import annotations

import zlib

from .goints import INT32_MAX, INT32_MIN

LEVELS = 1000  # utilization resolution (per mille)
IDLE_CAP = 999  # the tie-break must stay below one level step
MIN_COST = -(LEVELS * 1000 + IDLE_CAP)
# A pod annotated remove-last: the highest cost the API server accepts. It is above every other
# cost we write (at most -1, or HN_OFFSET - 1 lifted by `summed`) and above "unset" (0), so the
# pod goes last in its workload; and a Kthena ServingGroup or Role replica holding one sums to
# more than any group of its size without one (up to 2,145 pods, in node scope), so the whole
# unit goes last. A constant, not "the workload's highest plus one", so an event still re-scores
# one node and nothing else.
REMOVE_LAST_COST = INT32_MAX
OFFSET = -MIN_COST + 1  # lifts the cost of a pod whose controller sums costs to 1 or more


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
