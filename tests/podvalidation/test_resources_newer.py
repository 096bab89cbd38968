"""Dynamic Resource Allocation claims and pod-level resources (1.31-1.34).

The DRA cases are upstream's TestValidateDynamicResourceAllocation
(pkg/apis/core/validation/validation_test.go at commit 000f2605); the pod-level cases follow
validatePodResources and validatePodResourceConsistency of the same commit (the stored test
file pages read had no table for them), replayed with the gates on and off.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.gated import gated_errors
from support.pods import BASE_POD

DRA = "DynamicResourceAllocation"
PLR = "PodLevelResources"


def _claims_pod(pod_claims: list[dict[str, Any]], container_claims: list[dict[str, Any]] | None = None, init: bool = False) -> dict[str, Any]:
    pod = copy.deepcopy(BASE_POD)
    pod["spec"]["resourceClaims"] = pod_claims
    if container_claims is not None:
        key = "initContainers" if init else "containers"
        container = {"name": "ctr-init" if init else "main", "image": "busybox", "resources": {"claims": container_claims}}
        if init:
            pod["spec"]["initContainers"] = [container]
        else:
            pod["spec"][key] = [container]
    return pod


REF = {"resourceClaimName": "some-claim"}
TEMPLATE = {"resourceClaimTemplateName": "some-claim-template"}


@pytest.mark.parametrize(
    "pod",
    [
        _claims_pod([{"name": "my-claim-reference"} | REF], [{"name": "my-claim-reference"}]),  # resource claim reference
        _claims_pod([{"name": "my-claim-template"} | TEMPLATE], [{"name": "my-claim-template"}]),  # resource claim template
        _claims_pod([{"name": "my-claim"} | REF, {"name": "another-claim"} | REF], [{"name": "my-claim"}, {"name": "another-claim"}]),  # multiple claims
        _claims_pod(
            [{"name": "my-claim"} | REF, {"name": "another-claim"} | REF],
            [{"name": "my-claim", "request": "req-0"}, {"name": "another-claim", "request": "req-0"}],
        ),  # with requests
        _claims_pod(
            [{"name": "my-claim"} | REF], [{"name": "my-claim", "request": "req-0"}, {"name": "my-claim", "request": "req-1"}]
        ),  # single claim, requests
        _claims_pod([{"name": "my-claim"} | REF], [{"name": "my-claim"}], init=True),  # init container
    ],
)
def test_valid_claims_TestValidateDynamicResourceAllocation(pod: dict[str, Any]) -> None:
    assert gated_errors(pod, DRA) == []


CLAIMS = "spec.containers[0].resources.claims"


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (_claims_pod([{"name": "../my-claim"} | REF]), ['spec.resourceClaims[0].name: Invalid value: "../my-claim": a lowercase RFC 1123 label']),
        (_claims_pod([{"name": "my/claim"} | REF]), ['spec.resourceClaims[0].name: Invalid value: "my/claim": a lowercase RFC 1123 label']),
        (_claims_pod([{"name": ""} | REF]), ["spec.resourceClaims[0].name: Required value"]),
        (_claims_pod([{"name": "my-claim"} | REF, {"name": "my-claim"} | REF]), ['spec.resourceClaims[1].name: Duplicate value: "my-claim"']),
        (
            _claims_pod([{"name": "my-claim"}]),
            [
                'spec.resourceClaims[0]: Invalid value: core.PodResourceClaim{Name:"my-claim", ResourceClaimName:(*string)(nil), '
                "ResourceClaimTemplateName:(*string)(nil)}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            ],
        ),
        (
            _claims_pod([{"name": "my-claim"} | REF | TEMPLATE], [{"name": "my-claim"}]),
            [
                'spec.resourceClaims[0]: Invalid value: core.PodResourceClaim{Name:"my-claim", ResourceClaimName:(*string)(0x{pointer}), '
                "ResourceClaimTemplateName:(*string)(0x{pointer})}: at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                "may be specified"
            ],
        ),
        (_claims_pod([{"name": "my-claim"} | REF], [{"name": "no-such-claim"}]), [f'{CLAIMS}[0]: Not found: "no-such-claim"']),
        (_claims_pod([{"name": "my-claim"} | REF], [{"name": ""}]), [f"{CLAIMS}[0]: Required value"]),
        (_claims_pod([{"name": "my-claim"} | REF], [{"name": "my-claim"}, {"name": "my-claim"}]), [f'{CLAIMS}[1]: Duplicate value: "my-claim"']),
        (
            _claims_pod([{"name": "my-claim"} | REF], [{"name": "my-claim"}, {"name": "my-claim", "request": "req-0"}]),
            [f'{CLAIMS}[1]: Duplicate value: "my-claim"'],
        ),
        (
            _claims_pod([{"name": "my-claim"} | REF], [{"name": "my-claim", "request": "req-0"}, {"name": "my-claim"}]),
            [f'{CLAIMS}[1]: Duplicate value: "my-claim"'],
        ),
        (
            _claims_pod([{"name": "my-claim"} | REF], [{"name": "my-claim", "request": "req-0"}, {"name": "my-claim", "request": "req-0"}]),
            [f'{CLAIMS}[1]: Duplicate value: "my-claim/req-0"'],
        ),
        (
            _claims_pod([{"name": "my-claim"} | REF], [{"name": "my-claim", "request": "*$@%^"}]),
            [f'{CLAIMS}[0].request: Invalid value: "*$@%^": a lowercase RFC 1123 label'],
        ),
        (_claims_pod([], [{"name": "my-claim"}]), [f'{CLAIMS}[0]: Not found: "my-claim"']),
        (
            _claims_pod([{"name": "my-claim"} | {"resourceClaimTemplateName": ".foo_bar"}]),
            ['spec.resourceClaims[0].resourceClaimTemplateName: Invalid value: ".foo_bar": a lowercase RFC 1123 subdomain'],
        ),
        (
            _claims_pod([{"name": "my-claim"} | {"resourceClaimName": ".foo_bar"}]),
            ['spec.resourceClaims[0].resourceClaimName: Invalid value: ".foo_bar": a lowercase RFC 1123 subdomain'],
        ),
    ],
)
def test_invalid_claims_TestValidateDynamicResourceAllocation(pod: dict[str, Any], expected: list[str]) -> None:
    errs = gated_errors(pod, DRA)
    assert len(errs) == len(expected)
    for got, want in zip(errs, expected):
        assert got.startswith(want), got


def test_not_found_claim_lists_the_declared_names() -> None:
    errs = gated_errors(_claims_pod([{"name": "b"} | REF, {"name": "a"} | REF], [{"name": "c"}]), DRA)
    assert errs == [f'{CLAIMS}[0]: Not found: "c": must be one of the names in pod.spec.resourceClaims: a, b']
    errs = gated_errors(_claims_pod([], [{"name": "c"}]), DRA)
    assert errs == [f'{CLAIMS}[0]: Not found: "c": must be one of the names in pod.spec.resourceClaims which is empty']


def test_claims_not_checked_with_the_gate_off() -> None:
    assert gated_errors(_claims_pod([{"name": "my-claim"}], [{"name": "no-such-claim"}])) == []


def _pod_resources(resources: dict[str, Any], *containers: dict[str, Any], inits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pod = copy.deepcopy(BASE_POD)
    pod["spec"]["resources"] = resources
    if containers:
        pod["spec"]["containers"] = [{"name": f"c{i}", "image": "busybox", "resources": r} for i, r in enumerate(containers)]
    if inits is not None:
        pod["spec"]["initContainers"] = inits
    return pod


def test_pod_level_names_and_quantities() -> None:
    """validatePodResourceRequirements with validatePodResourceName: cpu, memory, hugepages only."""
    assert gated_errors(_pod_resources({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}), PLR) == []
    assert gated_errors(_pod_resources({"limits": {"hugepages-2Mi": "2Mi", "memory": "1Gi"}}), PLR) == []
    errs = gated_errors(_pod_resources({"limits": {"ephemeral-storage": "1Gi", "nvidia.com/gpu": "1", "bogus": "1"}}), PLR)
    assert errs == [
        'spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"',
        'spec.resources.limits[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu": supported values: "cpu", "hugepages-", "memory"',
        'spec.resources.limits[bogus]: Invalid value: "bogus": must be a standard resource type or fully qualified',
    ]
    assert gated_errors(_pod_resources({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}), PLR) == [
        'spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'
    ]
    assert gated_errors(_pod_resources({"requests": {"cpu": "-1"}}), PLR)[0] == (
        'spec.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'
    )
    assert gated_errors(_pod_resources({"claims": [{"name": "x"}]}), PLR) == [
        "spec.resources.claims: Forbidden: claims cannot be set for Resources at pod-level"
    ]


def test_pod_level_consistency_with_containers() -> None:
    """validatePodResourceConsistency: requests cover the containers' aggregate; no container
    limit above the pod's."""
    ok = _pod_resources(
        {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}, {"requests": {"cpu": "500m"}}, {"requests": {"cpu": "500m"}, "limits": {"cpu": "2"}}
    )
    assert gated_errors(ok, PLR) == []
    errs = gated_errors(_pod_resources({"requests": {"cpu": "1"}}, {"requests": {"cpu": "600m"}}, {"requests": {"cpu": "600m"}}), PLR)
    assert errs == ['spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 1200m']
    errs = gated_errors(_pod_resources({"limits": {"memory": "1Gi"}}, {"limits": {"memory": "2Gi"}}), PLR)
    # a container limit sets its request, and the pod's request defaults to the containers' (2Gi):
    # both refused, as kube-apiservers 1.34.4 and 1.37.2 answered
    assert errs == [
        'spec.resources.requests: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi',
        'spec.resources.containers[0][memory].limits: Invalid value: "2Gi": must be less than or equal to pod limits of 1Gi',
    ]


def test_pod_level_aggregate_counts_sidecars_and_the_largest_init() -> None:
    """AggregateContainerRequests: sidecars add to the app containers; a plain init container
    counts alone with the sidecars started before it."""
    sidecar = {"name": "side", "image": "busybox", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m"}}}
    big_init = {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "1500m"}}}
    app = {"requests": {"cpu": "500m"}}
    assert gated_errors(_pod_resources({"requests": {"cpu": "800m"}}, app, inits=[sidecar]), PLR) == []
    assert gated_errors(_pod_resources({"requests": {"cpu": "700m"}}, app, inits=[sidecar]), PLR) == [
        'spec.resources.requests[cpu]: Invalid value: "700m": must be greater than or equal to aggregate container requests of 800m'
    ]
    # the plain init container (1500m + the 300m sidecar before it) is the largest
    assert gated_errors(_pod_resources({"requests": {"cpu": "1"}}, app, inits=[sidecar, big_init]), PLR) == [
        'spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 1800m'
    ]


def test_pod_level_aggregate_is_written_as_go_sums_quantities() -> None:
    """The aggregate is printed in the format of the first quantity of its sum (Quantity.Add keeps
    its receiver's): 1Gi + 1073741824 is 2Gi, 1073741824 + 1Gi is 2147483648."""
    binary_first = _pod_resources({"requests": {"memory": "1Gi"}}, {"requests": {"memory": "1Gi"}}, {"requests": {"memory": "1073741824"}})
    assert gated_errors(binary_first, PLR) == [
        'spec.resources.requests[memory]: Invalid value: "1Gi": must be greater than or equal to aggregate container requests of 2Gi'
    ]
    decimal_first = _pod_resources({"requests": {"memory": "1Gi"}}, {"requests": {"memory": "1073741824"}}, {"requests": {"memory": "1Gi"}})
    assert gated_errors(decimal_first, PLR) == [
        'spec.resources.requests[memory]: Invalid value: "1Gi": must be greater than or equal to aggregate container requests of 2147483648'
    ]


def test_pod_level_skips_what_the_pod_does_not_name() -> None:
    """A resource only containers request (a GPU, or memory beside a pod-level cpu) is not
    compared against a pod request of 0: later releases default or skip it, never refuse it."""
    gpu = {"requests": {"cpu": "500m", "nvidia.com/gpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}
    assert gated_errors(_pod_resources({"requests": {"cpu": "1"}}, gpu), PLR) == []


def test_pod_level_not_checked_with_the_gate_off() -> None:
    assert gated_errors(_pod_resources({"limits": {"bogus": "1"}})) == []


def test_pod_level_requests_are_defaulted_from_the_containers_first() -> None:
    """SetDefaults_Pod's defaultPodRequests (v1.34.4): the pod's cpu and memory requests come from
    the containers' aggregate before validation, so a pod naming only a hugepage limit still has
    cpu or memory, and a pod cpu limit below the containers' requests is refused at the requests
    (both as kube-apiservers 1.34.4 to 1.37.2 answered: tests/oracle)."""
    from webhook.kubeversion import KubeVersion
    from webhook.podvalidation import apply_pod_defaults, validate_pod_create
    from webhook.podvalidation.options import options_for

    opts = options_for(KubeVersion(1, 34))

    def errors(spec: dict) -> list[str]:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}
        return [str(e) for e in validate_pod_create(apply_pod_defaults(pod, opts), opts=opts)]

    container = {"name": "main", "image": "busybox", "resources": {"requests": {"memory": "2", "cpu": "1"}}}
    assert errors({"containers": [container], "resources": {"limits": {"hugepages-2Mi": "0"}}}) == []
    found = errors({"containers": [container], "resources": {"limits": {"cpu": "100m", "memory": "1Gi"}}})
    assert len(found) == 1 and found[0].startswith('spec.resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 100m')
