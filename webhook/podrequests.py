"""What a pod asks the scheduler for, per resource: the one counting rule of the product.

`pod_requests` is `PodRequests` of k8s.io/component-helpers/resource (helpers.go, v0.32.0 to
v0.36.3 for Kubernetes 1.32 to 1.36, and master at 1961876, the 1.37 line; for 1.28 to 1.31 the
same loop, sidecars included, is k8s.io/kubernetes pkg/api/v1/resource/helpers.go), which the
kube-scheduler's NodeResourcesFit calls for a pod it places (`computePodResourceRequest`,
pkg/scheduler/framework/plugins/noderesources/fit.go) and for the pods a node holds (NodeInfo).
For each resource name:

- the app containers' requests are summed; each init container counts alone, as a peak, beside
  the restartable init containers (sidecars, `restartPolicy: Always`) started before it; a
  sidecar adds to the sum and to the peak of every init container after it; the larger of the
  sum and the highest peak wins (`aggregate`, upstream's AggregateContainerRequests);
- with `pod_level` (the PodLevelResources gate: alpha and off in 1.32 and 1.33, beta and on from
  1.34; `PodOptions.on("PodLevelResources")`), a request in the pod's own `spec.resources` of a
  resource supported there (cpu, memory, `hugepages-*`: IsSupportedPodLevelResource; 1.32 knew
  only cpu and memory, and its validation refuses any other pod-level name) replaces the
  containers' figure for that resource alone; other names there change nothing;
- `spec.overhead` (PodOverhead, set from the RuntimeClass) is added to every name it has.

What is not mirrored, and why:

- upstream's `UseStatusResources` (in-place resize: the larger of the spec, the allocated and the
  actuated resources of each container, and from 1.35 of the pod; the scheduler asks it for pods
  already on a node): only cpu and memory can be resized, so for the accelerators the reconciler
  counts the spec is the figure; a pod being placed has no status (fit.go: "pod hasn't scheduled
  yet");
- the DRA node-allocatable claim status of 1.37 (`UseDRANodeAllocatableResourceClaimStatus`), off
  in the scheduler's Filter, and a pod's status only;
- `NonMissingContainerRequests` (the scorers' defaults for unset cpu and memory): not the
  Filter's figure;
- the fields the API server drops while a gate is off are the Pod validation port's to drop
  (podvalidation/drops.py): an init container's `restartPolicy` is read as given, also where
  SidecarContainers is off (1.28's default), and only `spec.resources` follows its gate
  (`pod_level`, which the scheduler reads too).

Upstream reads a pod as the API server stores it: defaulted. Unless `defaulted` says the spec
already is, the defaults that change what is counted are applied as SetDefaults_Pod would
(pkg/apis/core/v1/defaults.go): a container's limit stands for its missing request; with
`pod_level`, a pod-level limit of a supported resource stands for its missing pod-level request,
except that a pod-level cpu or memory request the containers request is defaulted from their
aggregate (and so changes nothing). Either is a no-op on a stored pod.

Quantities are read by the caller's `read` (a ResourceList, such as `requests` or `overhead`, to
the amounts it counts by name): exact Decimals (`decimal_amounts`, for `modelservings.fits`) or
only some names (the reconciler's accelerators); the Pod validation port calls `aggregate` with
amounts that keep the text of each sum for its messages. Each resource name is counted apart from
every other, so leaving names out before counting gives the figures of the names kept. Pure:
plain dicts in, dicts out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Protocol, Self, TypeVar

from .quantity import parse_quantity


class _Amount(Protocol):
    """What the counting needs of an amount: a sum and a comparison (Decimal, int, ...)."""

    def __add__(self, other: Self) -> Self: ...

    def __gt__(self, other: Self) -> bool: ...


A = TypeVar("A", bound=_Amount)

# The resources a pod's own `spec.resources` may hold (IsSupportedPodLevelResource).
POD_LEVEL = frozenset({"cpu", "memory"})
HUGEPAGES = "hugepages-"


def supported_at_pod_level(name: str) -> bool:
    """IsSupportedPodLevelResource (1.33 on): cpu, memory and hugepages of any page size."""
    return name in POD_LEVEL or name.startswith(HUGEPAGES)


def _add(into: dict[str, A], more: Mapping[str, A]) -> None:
    """addResourceList: `into` += `more`, name by name, the amount already there on the left (as
    Quantity.Add keeps its receiver's format)."""
    for name, amount in more.items():
        have = into.get(name)
        into[name] = amount if have is None else have + amount


def _max(into: dict[str, A], more: Mapping[str, A]) -> None:
    """maxResourceList: each name of `more` raised in `into` to `more`'s amount when larger."""
    for name, amount in more.items():
        have = into.get(name)
        if have is None or amount > have:
            into[name] = amount


def aggregate(spec: Mapping[str, Any], amounts: Callable[[dict[str, Any]], Mapping[str, A]]) -> dict[str, A]:
    """AggregateContainerRequests (or, given each container's limits, AggregateContainerLimits):
    `amounts` reads one container (an object of `containers` or `initContainers`)."""
    total: dict[str, A] = {}
    containers = spec.get("containers")
    if isinstance(containers, list):
        for c in containers:
            if isinstance(c, dict):
                own = amounts(c)
                if not total:
                    total.update(own)  # the first container's: nothing to add to yet
                elif own:
                    _add(total, own)
    inits = spec.get("initContainers")
    if isinstance(inits, list) and inits:
        sidecars: dict[str, A] = {}
        peak: dict[str, A] = {}
        for c in inits:
            if not isinstance(c, dict):
                continue
            own = amounts(c)
            if c.get("restartPolicy") == "Always":
                _add(total, own)
                _add(sidecars, own)
                _max(peak, sidecars)
            else:
                running = dict(own)
                _add(running, sidecars)
                _max(peak, running)
        _max(total, peak)
    return total


def container_requests(read: Callable[[Mapping[str, Any]], dict[str, A]], defaulted: bool = False) -> Callable[[dict[str, Any]], dict[str, A]]:
    """The reader of one container's requests, for `aggregate`: unless `defaulted`, a container's
    limits stand for the requests it lacks."""

    def requests_of(container: dict[str, Any]) -> dict[str, A]:
        resources = container.get("resources")
        if not isinstance(resources, dict):
            return {}
        requests = resources.get("requests")
        if not isinstance(requests, dict):
            requests = {}
        own = read(requests) if requests else {}
        limits = resources.get("limits")
        if not defaulted and isinstance(limits, dict):
            missing = None
            for name in limits:
                if name not in requests:
                    missing = missing or {}
                    missing[name] = limits[name]
            if missing:
                own.update(read(missing))
        return own

    return requests_of


def pod_requests(spec: Mapping[str, Any], read: Callable[[Mapping[str, Any]], dict[str, A]], *, pod_level: bool, defaulted: bool = False) -> dict[str, A]:
    """PodRequests (see the module docstring): the pod's request of each resource it names."""
    total = aggregate(spec, container_requests(read, defaulted))
    if pod_level:
        resources = spec.get("resources")
        if isinstance(resources, dict):
            requests = resources.get("requests")
            requests = requests if isinstance(requests, dict) else {}
            chosen = {name: raw for name, raw in requests.items() if supported_at_pod_level(name)}
            limits = resources.get("limits")
            if not defaulted and isinstance(limits, dict):
                for name, raw in limits.items():
                    if name not in requests and supported_at_pod_level(name) and not (name in POD_LEVEL and name in total):
                        chosen[name] = raw
            if chosen:
                total.update(read(chosen))
    overhead = spec.get("overhead")
    if isinstance(overhead, dict) and overhead:
        _add(total, read(overhead))
    return total


@functools.lru_cache(maxsize=4096)
def _decimal(raw: str | int | float) -> Decimal | None:
    """parse_quantity, remembered (specs repeat a handful of quantity strings); None for what is
    not a quantity, or not one that can be requested (negative: validation refuses it)."""
    value = parse_quantity(raw)
    return value if value is not None and value.is_finite() and value >= 0 else None


def decimal_quantity(raw: Any) -> Decimal | None:
    """A requested quantity as an exact Decimal; None when it does not read as one."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        return None
    return _decimal(raw)


def decimal_amounts(resources: Mapping[str, Any]) -> dict[str, Decimal]:
    """A ResourceList as exact Decimals; a quantity that does not read is left out (the Pod
    validation port reports it)."""
    out = {}
    for name, raw in resources.items():
        value = decimal_quantity(raw)
        if value is not None:
            out[str(name)] = value
    return out
