"""Resources: requests against limits, extended resources (NPUs, GPUs), hugepages, quantities."""

from decimal import Decimal

from support.pods import container_pod, errors_of

from webhook.podvalidation.resources import is_extended, overcommit_allowed
from webhook.podvalidation.values import canonical

ASCEND = "huawei.com/ascend-1980"


def _res(requests=None, limits=None):
    r = {}
    if requests is not None:
        r["requests"] = requests
    if limits is not None:
        r["limits"] = limits
    return errors_of(container_pod(resources=r))


def test_accelerators_are_extended_resources_that_cannot_be_overcommitted():
    assert is_extended(ASCEND) and is_extended("nvidia.com/gpu")
    assert not overcommit_allowed(ASCEND)
    assert overcommit_allowed("cpu") and not is_extended("kubernetes.io/foo")


def test_an_npu_request_needs_a_limit_and_must_equal_it():
    assert _res({ASCEND: "8"}) == ["spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"]
    assert _res({ASCEND: "4"}, {ASCEND: "8"}) == [f'spec.containers[0].resources.requests: Invalid value: "4": must be equal to {ASCEND} limit of 8']
    assert _res({ASCEND: "8"}, {ASCEND: "8"}) == []
    assert _res(None, {ASCEND: "16"}) == []


def test_an_extended_resource_must_be_whole():
    errs = _res({"nvidia.com/gpu": "500m"}, {"nvidia.com/gpu": "500m"})
    assert len(errs) == 2 and all(e.endswith(": must be an integer") for e in errs)
    assert errs[0].startswith("spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: resource.Quantity{")


def test_cpu_request_over_limit_and_negative_quantities():
    assert _res({"cpu": "2"}, {"cpu": "500m"}) == ['spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 500m']
    assert _res({"cpu": "-1"}) == ['spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0']


def test_resource_names():
    errs = _res({"cpus": "1"})
    assert errs == [
        'spec.containers[0].resources.requests[cpus]: Invalid value: "cpus": must be a standard resource type or fully qualified',
        'spec.containers[0].resources.requests[cpus]: Invalid value: "cpus": must be a standard resource for containers',
    ]


def test_the_container_resources_named_without_checks_pass_every_name_check():
    """resource_name_errors returns at once for cpu, memory and ephemeral-storage: each is a
    qualified name and a standard resource, as the checks it skips would find."""
    from webhook import names
    from webhook.podvalidation.resources import _CONTAINER_STANDARD, _is_standard

    assert _CONTAINER_STANDARD == {"cpu", "memory", "ephemeral-storage"}
    assert all(not names.is_qualified_name(n) and _is_standard(n) and "/" not in n for n in _CONTAINER_STANDARD)


def test_hugepages_need_cpu_or_memory():
    assert _res({"hugepages-2Mi": "100Mi"}, {"hugepages-2Mi": "100Mi"}) == ["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"]


def test_an_unparsable_quantity_is_a_field_error_reported_once():
    errs = _res(None, {"memory": "x"})
    assert len(errs) == 1 and errs[0].startswith('spec.containers[0].resources.limits[memory]: Invalid value: "x": quantities must match')


def test_canonical_quantities_print_as_the_api_server_does():
    assert canonical("0.5", Decimal("0.5")) == "500m"
    assert canonical("2000", Decimal(2000)) == "2k"
    assert canonical("1500", Decimal(1500)) == "1500"
    assert canonical("1024Mi", Decimal(1024**3)) == "1Gi"
    assert canonical("1.5Gi", Decimal(1536 * 1024**2)) == "1536Mi"
