"""The one counting of a pod's requests (webhook/podrequests.py) on the scheduler's own cases.

Ported from k8s.io/component-helpers `resource/helpers_test.go` (v0.34.0; v0.36.3 and master
1961876 hold the same cases for what is ported here) and from k8s.io/kubernetes
`pkg/scheduler/framework/plugins/noderesources/fit_test.go` (the revision with pod-level
resources and DRA extended resources, 1.34 on). Each case is named `Test.../case name` after
the upstream test it comes from. Upstream builds v1.Pod structs that skip the API server's
defaults, so these run with `defaulted=True`; what our defaulting adds is tested below them.

Not ported, and why: the cases with `UseStatusResources` (in-place resize: status is not read,
see the module docstring), `Reuse` (a Go allocation detail), PodLimits and the limits half of
TestPodRequestsAndLimits (not ported: no caller needs a pod's limits), IsPodLevelResourcesSet
and IsPodLevelLimitsSet (helpers of PodLimits and of the defaults), the DRA claim-status tests
(1.36 on, status only), and the fit_test cases about the node side (ignored resources, resource
groups, DRA-backed extended resources, `Too many pods`). Upstream's `ExcludeOverhead` is not an
option here (the scheduler's Filter never sets it): the cases that set it are ported with the
overhead added to the figure they expect, and say so. fit_test's pods are made by
`newResourcePod`, which writes a zero for each of cpu, memory, pods and ephemeral-storage a case
does not name; those zeros are left out here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from webhook.podrequests import aggregate, decimal_amounts, pod_requests, supported_at_pod_level
from webhook.quantity import parse_quantity
from webhook.shapes import as_dict

EXT_A = "example.com/aaa"  # fit_test.go extendedResourceA
HP_2M = "hugepages-2Mi"  # fit_test.go hugePageResourceA
HP_1G = "hugepages-1Gi"


def c(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, *, sidecar: bool = False, name: str = "") -> dict[str, Any]:
    """A container; `sidecar`: a restartable init container (restartPolicy Always)."""
    out: dict[str, Any] = {"name": name, "resources": {}}
    if requests is not None:
        out["resources"]["requests"] = dict(requests)
    if limits is not None:
        out["resources"]["limits"] = dict(limits)
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def pod(
    containers: tuple[dict[str, Any], ...] = (),
    inits: tuple[dict[str, Any], ...] = (),
    *,
    overhead: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod spec; `requests`, `limits`: the pod-level `resources`."""
    spec: dict[str, Any] = {"containers": list(containers)}
    if inits:
        spec["initContainers"] = list(inits)
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if requests is not None or limits is not None:
        spec["resources"] = {k: dict(v) for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return spec


def q(amounts: dict[str, str]) -> dict[str, Decimal]:
    out = {}
    for name, text in amounts.items():
        value = parse_quantity(text)
        assert value is not None, text
        out[name] = value
    return out


def get_pod(r: dict[str, dict[str, str]], overhead: dict[str, str]) -> dict[str, Any]:
    """helpers_test.go getPod: one container and one init container with the same resources."""
    return pod((c(r.get("requests"), r.get("limits")),), (c(r.get("requests"), r.get("limits")),), overhead=overhead)


# (upstream test/case, spec, pod_level, expected requests)
CASES: list[tuple[str, dict[str, Any], bool, dict[str, str]]] = [
    # ---- helpers_test.go TestPodRequestsAndLimits (the requests half) ----
    ("TestPodRequestsAndLimits/just-limit-no-overhead", get_pod({"limits": {"cpu": "9"}}, {}), False, {}),
    ("TestPodRequestsAndLimits/just-overhead", get_pod({}, {"cpu": "5", "memory": "5"}), False, {"cpu": "5", "memory": "5"}),
    (
        "TestPodRequestsAndLimits/req-and-overhead",
        get_pod({"requests": {"cpu": "1", "memory": "10"}}, {"cpu": "5", "memory": "5"}),
        False,
        {"cpu": "6", "memory": "15"},
    ),
    (
        "TestPodRequestsAndLimits/all-req-lim-and-overhead",
        get_pod({"requests": {"cpu": "1", "memory": "10"}, "limits": {"cpu": "2", "memory": "12"}}, {"cpu": "5", "memory": "5"}),
        False,
        {"cpu": "6", "memory": "15"},
    ),
    (
        "TestPodRequestsAndLimits/req-some-lim-and-overhead",
        get_pod({"requests": {"cpu": "1", "memory": "10"}, "limits": {"cpu": "2"}}, {"cpu": "5", "memory": "5"}),
        False,
        {"cpu": "6", "memory": "15"},
    ),
    # ---- helpers_test.go TestPodRequestsAndLimitsWithoutOverhead (ExcludeOverhead: overhead added here) ----
    (
        "TestPodRequestsAndLimitsWithoutOverhead/two container no overhead - should just be sum of containers",
        pod((c({"cpu": "1", "memory": "5"}, {"cpu": "2", "memory": "10"}), c({"cpu": "4", "memory": "12"}, {"cpu": "8", "memory": "24"}))),
        False,
        {"cpu": "5", "memory": "17"},
    ),
    (
        "TestPodRequestsAndLimitsWithoutOverhead/two container with overhead - shouldn't consider overhead",
        pod(
            (c({"cpu": "1", "memory": "5"}, {"cpu": "2", "memory": "10"}), c({"cpu": "4", "memory": "12"}, {"cpu": "8", "memory": "24"})),
            overhead={"cpu": "3", "memory": "8"},
        ),
        False,
        {"cpu": "8", "memory": "25"},  # upstream 5 and 17, without the overhead
    ),
    (
        "TestPodRequestsAndLimitsWithoutOverhead/two container with overhead, massive init - should just be the largest init",
        pod(
            (c({"cpu": "1", "memory": "5"}, {"cpu": "2", "memory": "10"}), c({"cpu": "4", "memory": "12"}, {"cpu": "8", "memory": "24"})),
            (c({"cpu": "1", "memory": "5"}, {"cpu": "1", "memory": "5"}), c({"cpu": "40", "memory": "120"}, {"cpu": "80", "memory": "240"})),
            overhead={"cpu": "3", "memory": "8"},
        ),
        False,
        {"cpu": "43", "memory": "128"},  # upstream 40 and 120, without the overhead
    ),
    # ---- helpers_test.go TestPodResourceRequests ----
    ("TestPodResourceRequests/nil options, larger init container", pod((c({"cpu": "1"}),), (c({"cpu": "4"}),)), False, {"cpu": "4"}),
    ("TestPodResourceRequests/nil options, larger containers", pod((c({"cpu": "2"}), c({"cpu": "3"})), (c({"cpu": "2"}),)), False, {"cpu": "5"}),
    (
        "TestPodResourceRequests/pod overhead excluded",
        pod((c({"cpu": "2"}), c({"cpu": "3"})), (c({"cpu": "2"}),), overhead={"cpu": "1"}),
        False,
        {"cpu": "6"},  # upstream 5, without the overhead
    ),
    (
        "TestPodResourceRequests/pod overhead included",
        pod((c({"cpu": "2"}), c({"cpu": "3"})), (c({"cpu": "2"}, {"cpu": "2"}),), overhead={"cpu": "1", "memory": "1Gi"}),
        False,
        {"cpu": "6", "memory": "1Gi"},
    ),
    # (the pod's status, a resize reported Infeasible with 2 cpu actuated, is no input here at all)
    ("TestPodResourceRequests/resized, infeasible, but don't use status", pod((c({"cpu": "4"}, name="container-1"),)), False, {"cpu": "4"}),
    (
        "TestPodResourceRequests/resized, restartable init container, infeasible, but don't use status",
        pod((), (c({"cpu": "4"}, sidecar=True, name="restartable-init-1"),)),
        False,
        {"cpu": "4"},
    ),
    (
        "TestPodResourceRequests/restartable init container",
        pod((c({"cpu": "1"}),), (c({"cpu": "1"}, sidecar=True),)),
        False,
        {"cpu": "2"},  # restartable init + regular container
    ),
    (
        "TestPodResourceRequests/multiple restartable init containers",
        pod((c({"cpu": "1"}),), (c({"cpu": "5"}), c({"cpu": "1"}, sidecar=True), c({"cpu": "2"}, sidecar=True), c({"cpu": "3"}, sidecar=True))),
        False,
        {"cpu": "7"},  # max(5, restartable init containers (3+2+1) + regular (1))
    ),
    (
        "TestPodResourceRequests/multiple restartable and regular init containers",
        pod(
            (c({"cpu": "1"}),), (c({"cpu": "5"}), c({"cpu": "1"}, sidecar=True), c({"cpu": "2"}, sidecar=True), c({"cpu": "5"}), c({"cpu": "3"}, sidecar=True))
        ),
        False,
        {"cpu": "8"},  # init-2 needs 5 + the sidecars before it (1+2); the one after it does not count
    ),
    (
        "TestPodResourceRequests/restartable-init, init and regular",
        pod((c({"cpu": "100"}),), (c({"cpu": "10"}, sidecar=True), c({"cpu": "200"}))),
        False,
        {"cpu": "210"},
    ),
    # ---- helpers_test.go TestPodLevelResourceRequests (SkipPodLevelResources true: pod_level False) ----
    ("TestPodLevelResourceRequests/nil", pod(requests={}), True, {}),
    ("TestPodLevelResourceRequests/pod level memory resource with SkipPodLevelResources true", pod(requests={"memory": "2Mi"}), False, {}),
    ("TestPodLevelResourceRequests/pod level memory resource with SkipPodLevelResources false", pod(requests={"memory": "2Mi"}), True, {"memory": "2Mi"}),
    (
        "TestPodLevelResourceRequests/pod level memory and container level cpu resources with SkipPodLevelResources false",
        pod((c({"cpu": "2m"}),), requests={"memory": "2Mi"}),
        True,
        {"memory": "2Mi", "cpu": "2m"},
    ),
    (
        "TestPodLevelResourceRequests/pod level unsupported resources set at both pod-level and container-level with SkipPodLevelResources false",
        pod((c({"storage": "3Mi"}),), requests={"storage": "2Mi"}),
        True,
        {"storage": "3Mi"},
    ),
    (
        "TestPodLevelResourceRequests/pod level unsupported resources set at pod-level with SkipPodLevelResources false",
        pod((c({"memory": "3Mi"}),), requests={"storage": "2Mi"}),
        True,
        {"memory": "3Mi"},
    ),
    (
        "TestPodLevelResourceRequests/only container level resources set with SkipPodLevelResources false",
        pod((c({"memory": "3Mi", "cpu": "2m"}),)),
        True,
        {"memory": "3Mi", "cpu": "2m"},
    ),
    (
        "TestPodLevelResourceRequests/both container-level and pod-level resources set with SkipPodLevelResources false",
        pod((c({"memory": "3Mi", "cpu": "2m"}),), requests={"memory": "6Mi", "cpu": "8m"}),
        True,
        {"memory": "6Mi", "cpu": "8m"},
    ),
    (
        "TestPodLevelResourceRequests/container-level resources and init container set with SkipPodLevelResources false",
        pod((c({"memory": "3Mi", "cpu": "2m"}),), (c({"memory": "5Mi", "cpu": "4m"}),), requests={}),
        True,
        {"memory": "5Mi", "cpu": "4m"},
    ),
    (  # upstream names this one "... SkipPodLevelResources false" too, as the one before
        "TestPodLevelResourceRequests/container-level resources and init container set with SkipPodLevelResources true",
        pod((c({"memory": "3Mi", "cpu": "2m"}),), (c({"memory": "5Mi", "cpu": "4m"}),), requests={}),
        False,
        {"memory": "5Mi", "cpu": "4m"},
    ),
    (
        "TestPodLevelResourceRequests/container-level resources and sidecar container set with SkipPodLevelResources false",
        pod((c({"memory": "3Mi", "cpu": "2m"}),), (c({"memory": "5Mi", "cpu": "4m"}, sidecar=True),), requests={}),
        True,
        {"memory": "8Mi", "cpu": "6m"},
    ),
    (
        "TestPodLevelResourceRequests/container-level resources, init and sidecar container set with SkipPodLevelResources false",
        pod((c({"memory": "3Mi", "cpu": "2m"}),), (c({"memory": "5Mi", "cpu": "4m"}, sidecar=True), c({"memory": "6Mi", "cpu": "8m"})), requests={}),
        True,
        {"memory": "11Mi", "cpu": "12m"},
    ),
    (
        "TestPodLevelResourceRequests/pod-level resources, container-level resources, init and sidecar container set with SkipPodLevelResources false",
        pod(
            (c({"memory": "3Mi", "cpu": "2m"}),),
            (c({"memory": "5Mi", "cpu": "4m"}, sidecar=True), c({"memory": "6Mi", "cpu": "8m"})),
            requests={"memory": "15Mi", "cpu": "18m"},
        ),
        True,
        {"memory": "15Mi", "cpu": "18m"},
    ),
    (
        "TestPodLevelResourceRequests/pod-level resources, hugepage request/limit single page size",
        pod(requests={"memory": "10Mi", HP_2M: "2Mi"}, limits={HP_2M: "2Mi"}),
        True,
        {"memory": "10Mi", HP_2M: "2Mi"},
    ),
    (
        "TestPodLevelResourceRequests/pod-level resources, hugepage request/limit multiple page sizes",
        pod(requests={"cpu": "1", HP_2M: "2Mi", HP_1G: "1Gi"}, limits={HP_2M: "2Mi", HP_1G: "1Gi"}),
        True,
        {"cpu": "1", HP_2M: "2Mi", HP_1G: "1Gi"},
    ),
    (
        "TestPodLevelResourceRequests/pod-level resources, container-level resources, hugepage request/limit single page size",
        pod((c({HP_2M: "6Mi"}, {HP_2M: "6Mi"}),), requests={"cpu": "1", HP_2M: "10Mi"}, limits={HP_2M: "10Mi"}),
        True,
        {"cpu": "1", HP_2M: "10Mi"},
    ),
    (
        "TestPodLevelResourceRequests/pod-level resources, container-level resources, hugepage request/limit multiple page sizes",
        pod((c({"cpu": "1", HP_1G: "2Gi"}, {HP_1G: "2Gi"}),), requests={"cpu": "1", HP_2M: "10Mi", HP_1G: "2Gi"}, limits={HP_2M: "10Mi", HP_1G: "2Gi"}),
        True,
        {"cpu": "1", HP_2M: "10Mi", HP_1G: "2Gi"},
    ),
    (
        "TestPodLevelResourceRequests/pod-level resources, container-level resources, hugepage request/limit multiple page sizes between pod-level and container-level",
        pod((c({"memory": "4Mi", HP_1G: "1Gi"}, {HP_1G: "1Gi"}),), requests={"cpu": "1", HP_2M: "10Mi"}, limits={HP_2M: "10Mi"}),
        True,
        {"cpu": "1", "memory": "4Mi", HP_2M: "10Mi", HP_1G: "1Gi"},
    ),
    # ---- fit_test.go TestEnoughRequests: the pod's request of the resource each case is about ----
    (
        "TestEnoughRequests/too many resources fails due to init container cpu",
        pod((c({"cpu": "1m", "memory": "1"}),), (c({"cpu": "3m", "memory": "1"}),)),
        False,
        {"cpu": "3m", "memory": "1"},
    ),
    (
        "TestEnoughRequests/too many resources fails due to highest init container cpu",
        pod((c({"cpu": "1m", "memory": "1"}),), (c({"cpu": "3m", "memory": "1"}), c({"cpu": "2m", "memory": "1"}))),
        False,
        {"cpu": "3m", "memory": "1"},
    ),
    (
        "TestEnoughRequests/too many resources fails due to init container memory",
        pod((c({"cpu": "1m", "memory": "1"}),), (c({"cpu": "1m", "memory": "3"}),)),
        False,
        {"cpu": "1m", "memory": "3"},
    ),
    (
        "TestEnoughRequests/too many resources fails due to highest init container memory",
        pod((c({"cpu": "1m", "memory": "1"}),), (c({"cpu": "1m", "memory": "3"}), c({"cpu": "1m", "memory": "2"}))),
        False,
        {"cpu": "1m", "memory": "3"},
    ),
    (
        "TestEnoughRequests/init container fits because it's the max, not sum, of containers and init containers",
        pod((c({"cpu": "1m", "memory": "1"}),), (c({"cpu": "1m", "memory": "1"}),)),
        False,
        {"cpu": "1m", "memory": "1"},
    ),
    (
        "TestEnoughRequests/multiple init containers fit because it's the max, not sum, of containers and init containers",
        pod((c({"cpu": "1m", "memory": "1"}),), (c({"cpu": "1m", "memory": "1"}), c({"cpu": "1m", "memory": "1"}))),
        False,
        {"cpu": "1m", "memory": "1"},
    ),
    (
        "TestEnoughRequests/equal edge case for init container",
        pod((c({"cpu": "4m", "memory": "1"}),), (c({"cpu": "5m", "memory": "1"}),)),
        False,
        {"cpu": "5m", "memory": "1"},
    ),
    ("TestEnoughRequests/extended resource fits for init container", pod((c({}),), (c({EXT_A: "1"}),)), False, {EXT_A: "1"}),
    (
        "TestEnoughRequests/extended resource allocatable enforced for multiple containers",
        pod((c({"cpu": "1m", "memory": "1", EXT_A: "3"}), c({"cpu": "1m", "memory": "1", EXT_A: "3"}))),
        False,
        {"cpu": "2m", "memory": "2", EXT_A: "6"},
    ),
    (
        "TestEnoughRequests/extended resource allocatable admits multiple init containers",
        pod((c({}),), (c({"cpu": "1m", "memory": "1", EXT_A: "3"}), c({"cpu": "1m", "memory": "1", EXT_A: "3"}))),
        False,
        {"cpu": "1m", "memory": "1", EXT_A: "3"},
    ),
    (
        "TestEnoughRequests/extended resource allocatable enforced for multiple init containers",
        pod((c({}),), (c({"cpu": "1m", "memory": "1", EXT_A: "6"}), c({"cpu": "1m", "memory": "1", EXT_A: "3"}))),
        False,
        {"cpu": "1m", "memory": "1", EXT_A: "6"},
    ),
    (
        "TestEnoughRequests/hugepages resource allocatable enforced for multiple containers",
        pod((c({"cpu": "1m", "memory": "1", HP_2M: "3"}), c({"cpu": "1m", "memory": "1", HP_2M: "3"}))),
        False,
        {"cpu": "2m", "memory": "2", HP_2M: "6"},
    ),
    (
        "TestEnoughRequests/resources + pod overhead fits",
        pod((c({"cpu": "1m", "memory": "1"}),), overhead={"cpu": "3m", "memory": "13"}),
        False,
        {"cpu": "4m", "memory": "14"},
    ),
    (
        "TestEnoughRequests/requests + overhead does not fit for memory",
        pod((c({"cpu": "1m", "memory": "1"}),), overhead={"cpu": "1m", "memory": "15"}),
        False,
        {"cpu": "2m", "memory": "16"},
    ),
    (
        "TestEnoughRequests/both pod-level and container-level resources fit",
        pod((c({"cpu": "1m", "memory": "1"}),), requests={"cpu": "1m", "memory": "2"}),
        True,
        {"cpu": "1m", "memory": "2"},
    ),
    (
        "TestEnoughRequests/pod-level cpu resource not fit",
        pod((c({"cpu": "1m", "memory": "1"}),), requests={"cpu": "7m", "memory": "2"}),
        True,
        {"cpu": "7m", "memory": "2"},
    ),
    (
        "TestEnoughRequests/pod-level memory resource not fit",
        pod((c({"cpu": "1m", "memory": "1"}),), requests={"cpu": "3m", "memory": "2"}),
        True,
        {"cpu": "3m", "memory": "2"},
    ),
    (
        "TestEnoughRequests/pod-level hugepages resource fit",
        pod(requests={"cpu": "3m", "memory": "2", HP_2M: "5"}),
        True,
        {"cpu": "3m", "memory": "2", HP_2M: "5"},
    ),
    (
        "TestEnoughRequests/both pod-level and container-level hugepages resource fit",
        pod((c({"cpu": "1m", "memory": "1", HP_2M: "3"}),), requests={"cpu": "3m", "memory": "2", HP_2M: "5"}),
        True,
        {"cpu": "3m", "memory": "2", HP_2M: "5"},
    ),
    (
        "TestEnoughRequests/pod-level hugepages resource not fit",
        pod(requests={"cpu": "3m", "memory": "2", HP_2M: "10"}),
        True,
        {"cpu": "3m", "memory": "2", HP_2M: "10"},
    ),
    (
        "TestEnoughRequests/one pod-level cpu resource fits and all init and non-init containers resources fit",
        pod((c({"cpu": "1m", "memory": "1"}),), (c({"cpu": "1m", "memory": "1"}),), requests={"cpu": "3m", "memory": "2"}),
        True,
        {"cpu": "3m", "memory": "2"},
    ),
    # ---- fit_test.go TestRestartableInitContainers (node allocatable: 2m cpu) ----
    (
        "TestRestartableInitContainers/allow pod if the total requested resources do not exceed the node's allocatable resources",
        pod((c({"cpu": "1m"}),), (c({"cpu": "1m"}, sidecar=True),)),
        False,
        {"cpu": "2m"},
    ),
    (
        "TestRestartableInitContainers/not allow pod if the total requested resources do exceed the node's allocatable resources",
        pod((c({"cpu": "1m"}),), (c({"cpu": "2m"}, sidecar=True),)),
        False,
        {"cpu": "3m"},
    ),
    # ---- fit_test.go TestFitScore: node1's existing pod, as NodeInfo counts it ----
    (
        "TestFitScore/test case for ScoringStrategy MostAllocated with sidecar container",
        pod((c({"cpu": "1000", "memory": "2000"}),), (c({"cpu": "1000", "memory": "2000"}, sidecar=True),)),
        False,
        {"cpu": "2000", "memory": "4000"},
    ),
    (
        "TestFitScore/test case for ScoringStrategy LeastAllocated with sidecar container",
        pod((c({"cpu": "1000", "memory": "2000"}),), (c({"cpu": "1000", "memory": "2000"}, sidecar=True),)),
        False,
        {"cpu": "2000", "memory": "4000"},
    ),
]


@pytest.mark.parametrize(("spec", "pod_level", "want"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_pod_requests_as_upstream(spec, pod_level, want):
    assert pod_requests(spec, decimal_amounts, pod_level=pod_level, defaulted=True) == q(want)


def _part(part: str):
    return lambda container: decimal_amounts(as_dict(as_dict(container.get("resources")).get(part)))


# helpers_test.go TestAggregateContainerRequestsAndLimits: (case, spec, requests, limits)
AGGREGATES: list[tuple[str, dict[str, Any], dict[str, str], dict[str, str]]] = [
    ("one container with limits", pod((c(None, {"cpu": "9"}),)), {}, {"cpu": "9"}),
    ("two containers with limits", pod((c(None, {"cpu": "9"}), c(None, {"cpu": "9"}))), {}, {"cpu": "18"}),
    ("one container with requests", pod((c({"cpu": "9"}),)), {"cpu": "9"}, {}),
    ("two containers with requests", pod((c({"cpu": "9"}), c({"cpu": "9"}))), {"cpu": "18"}, {}),
    ("regular and init containers with requests", pod((c({"cpu": "9"}),), (c({"cpu": "9"}),)), {"cpu": "9"}, {}),
    ("regular, init and sidecar containers with requests", pod((c({"cpu": "9"}),), (c({"cpu": "8"}, sidecar=True), c({"cpu": "6"}))), {"cpu": "17"}, {}),
    ("regular and init containers with limits", pod((c(None, {"cpu": "9"}),), (c(None, {"cpu": "9"}),)), {}, {"cpu": "9"}),
    (
        "regular, init and sidecar containers with limits",
        pod((c(None, {"cpu": "9"}),), (c(None, {"cpu": "8"}, sidecar=True), c(None, {"cpu": "6"}))),
        {},
        {"cpu": "17"},
    ),
]


@pytest.mark.parametrize(
    ("spec", "requests", "limits"), [case[1:] for case in AGGREGATES], ids=[f"TestAggregateContainerRequestsAndLimits/{case[0]}" for case in AGGREGATES]
)
def test_aggregate_as_upstream(spec, requests, limits):
    assert aggregate(spec, _part("requests")) == q(requests)
    assert aggregate(spec, _part("limits")) == q(limits)


SUPPORTED = [("cpu", True), ("memory", True), ("ephemeral-storage", False), (HP_2M, True), (HP_1G, True)]


@pytest.mark.parametrize(("name", "supported"), SUPPORTED, ids=[f"TestIsSupportedPodLevelResource/{name}" for name, _ in SUPPORTED])
def test_supported_at_pod_level_as_upstream(name, supported):
    assert supported_at_pod_level(name) is supported


# ---- ours: the API server's defaults (SetDefaults_Pod), applied unless `defaulted` ----


def test_a_container_limit_stands_for_its_missing_request():
    spec = get_pod({"limits": {"cpu": "9"}}, {})
    assert pod_requests(spec, decimal_amounts, pod_level=False) == q({"cpu": "9"})
    # a request it has keeps its own value, even beside a larger limit
    spec = pod((c({"cpu": "1"}, {"cpu": "2", EXT_A: "4"}),))
    assert pod_requests(spec, decimal_amounts, pod_level=False) == q({"cpu": "1", EXT_A: "4"})
    assert pod_requests(spec, decimal_amounts, pod_level=False, defaulted=True) == q({"cpu": "1"})


def test_a_pod_level_limit_stands_for_its_missing_pod_level_request():
    # nothing in the containers: the pod's limit is its request
    assert pod_requests(pod(limits={"cpu": "4", "memory": "1Gi"}), decimal_amounts, pod_level=True) == q({"cpu": "4", "memory": "1Gi"})
    # cpu the containers request defaults to their aggregate instead; memory they do not, to its limit
    spec = pod((c({"cpu": "1"}), c({"cpu": "500m"})), limits={"cpu": "4", "memory": "1Gi"})
    assert pod_requests(spec, decimal_amounts, pod_level=True) == q({"cpu": "1500m", "memory": "1Gi"})
    # hugepages take the pod's limit over the containers'; unsupported names stay the containers'
    spec = pod((c({HP_2M: "2Mi", "ephemeral-storage": "1Gi"}),), limits={HP_2M: "8Mi", "ephemeral-storage": "5Gi"})
    assert pod_requests(spec, decimal_amounts, pod_level=True) == q({HP_2M: "8Mi", "ephemeral-storage": "1Gi"})
    # an explicit pod-level request wins over the limit; with the gate off none of it counts
    spec = pod((c({"cpu": "1"}),), requests={"cpu": "2"}, limits={"cpu": "4"})
    assert pod_requests(spec, decimal_amounts, pod_level=True) == q({"cpu": "2"})
    assert pod_requests(spec, decimal_amounts, pod_level=False) == q({"cpu": "1"})
    assert pod_requests(pod(limits={"cpu": "4"}), decimal_amounts, pod_level=True, defaulted=True) == {}


def test_what_does_not_read_as_a_request_is_left_out():
    spec = pod((c({"cpu": "lots", "memory": "-1", EXT_A: True}, {"cpu": "2"}),), overhead={"cpu": None})
    assert pod_requests(spec, decimal_amounts, pod_level=True) == {}  # a request written, however badly, is not the limit's
    odd = {"containers": [5, {"resources": []}, {"resources": {"requests": []}}], "initContainers": "x", "resources": [], "overhead": 3}
    assert pod_requests(odd, decimal_amounts, pod_level=True) == {}
