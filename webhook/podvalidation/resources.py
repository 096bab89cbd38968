"""Container resources (ValidateResourceRequirements): names, quantities, requests against limits.

The rules that matter to accelerators: an extended resource (`nvidia.com/gpu`,
`huawei.com/ascend-1980`: a name with a domain outside `kubernetes.io/`) cannot be overcommitted,
so a request needs a limit and must equal it, and its quantity must be a whole number.
Hugepages likewise need request == limit, a multiple of their page size, and cpu or memory.

Two additions after 1.28 port kube-apiserver's `pkg/apis/core/validation/validation.go` at commit
000f2605 (between 1.32 and 1.33; the checks hold through 1.34): Dynamic Resource Allocation's
`spec.resourceClaims` and the container claims that name them (validatePodResourceClaims,
validateResourceClaimNames; gate DynamicResourceAllocation, GA 1.34), and pod-level
`spec.resources` (validatePodResources; gate PodLevelResources, 1.32 alpha, 1.34 on).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from .. import names, podrequests
from ..quantity import parse_quantity
from ..shapes import as_list, only_objects
from .errors import Errors, FieldPath, GoSyntax, duplicate, forbidden, invalid, not_found, not_supported, required
from .options import DEFAULT_OPTIONS, PodOptions
from .values import arr, canonical, obj, opt_obj, opt_text, quantity, text

_STANDARD = {
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "quotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
}
_INTEGER = {
    "pods",
    "quotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
}
_CONTAINER_STANDARD = {"cpu", "memory", "ephemeral-storage"}
_POD_LEVEL = {"cpu", "memory"}
# sets.List(resourcehelper.SupportedPodLevelResources()) from the release that added hugepages to
# pod-level resources; an older one refuses them too, so accepting them is never stricter.
POD_LEVEL_SUPPORTED = ["cpu", "hugepages-", "memory"]


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    if is_native(name) or name.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + name)


def overcommit_allowed(name: str) -> bool:
    return is_native(name) and not is_hugepages(name)


def is_integer_resource(name: str) -> bool:
    return name in _INTEGER or is_extended(name)


def _is_standard(name: str) -> bool:
    return name in _STANDARD or name.startswith(("hugepages-", "requests.hugepages-"))


def resource_name_errors(name: str, path: FieldPath) -> Errors:
    """validateContainerResourceName."""
    if name in _CONTAINER_STANDARD:
        return []  # cpu, memory, ephemeral-storage: qualified, standard and for containers
    errs = [invalid(path, name, m) for m in names.is_qualified_name(name)]
    if not errs and "/" not in name and not _is_standard(name):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in _CONTAINER_STANDARD and not is_hugepages(name):
            return errs + [invalid(path, name, "must be a standard resource for containers")]
    elif not is_native(name) and not is_extended(name):
        return errs + [invalid(path, name, "doesn't follow extended resource name standard")]
    return errs


def pod_resource_name_errors(name: str, path: FieldPath) -> Errors:
    """validatePodResourceName: a resource name, and one pod-level resources support."""
    if name in _POD_LEVEL:
        return []
    errs = [invalid(path, name, m) for m in names.is_qualified_name(name)]
    if not errs and "/" not in name and not _is_standard(name):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if not errs and not is_hugepages(name):
        errs.append(not_supported(path, name, POD_LEVEL_SUPPORTED))
    return errs


def quantity_struct(raw: Any, amount: Decimal) -> GoSyntax:
    """How `%#v` prints a resource.Quantity that `must be an integer`: the API server shows the
    struct, whose int64 amount keeps the digits as written (`500m` is 500 at scale -3) and whose
    cached text is what was written when that is already the canonical form, else empty."""
    value, scale = _int64_amount(raw, amount)
    fmt = "BinarySI" if isinstance(raw, str) and raw.strip().endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")) else "DecimalSI"
    return GoSyntax(
        f"resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, "
        f'd:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:"{_cached_text(raw, amount)}", Format:"{fmt}"}}'
    )


def _cached_text(raw: Any, amount: Decimal) -> str:
    shown = canonical(raw, amount)
    return shown if isinstance(raw, str) and raw == shown else ""


_AS_WRITTEN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([numkMGTPE]?)")
_SUFFIX_EXPONENT = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def _int64_amount(raw: Any, amount: Decimal) -> tuple[int, int]:
    m = _AS_WRITTEN.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if m is None:
        sign, digits, exp = amount.normalize().as_tuple()
        assert isinstance(exp, int)
        return int("".join(map(str, digits))) * (-1 if sign else 1), exp
    whole, fraction = m.group(2) or "0", m.group(3) or ""
    value = int(whole + fraction) * (-1 if m.group(1) == "-" else 1)
    return value, _SUFFIX_EXPONENT[m.group(4)] - len(fraction)


def _quantity_value_errors(name: str, raw: Any, amount: Decimal, path: FieldPath) -> Errors:
    """ValidateResourceQuantityValue: not negative; whole for integer resources."""
    errs: Errors = []
    if amount < 0:
        errs.append(invalid(path, canonical(raw, amount), "must be greater than or equal to 0"))
    if is_integer_resource(name) and amount != amount.to_integral_value():
        errs.append(invalid(path, quantity_struct(raw, amount), "must be an integer"))
    return errs


def _hugepage_errors(name: str, raw: Any, amount: Decimal, path: FieldPath) -> Errors:
    size = _page_size(name[len("hugepages-") :])
    if size is not None and size > 0 and size == size.to_integral_value() and int(amount) % int(size) == 0:
        return []
    shown = canonical(raw, amount)
    return [invalid(path, shown, f"{shown} is not positive integer multiple of {name}")]


def _page_size(text: str) -> Decimal | None:
    return parse_quantity(text)


def _read_list(value: Any, path: FieldPath, errs: Errors) -> dict[str, tuple[Any, Decimal]]:
    out: dict[str, tuple[Any, Decimal]] = {}
    for name, raw in obj(value, path, errs).items():
        amount = parse_quantity(raw) if raw is not None else None
        if amount is None:  # null reads as 0; anything else is reported (its path built only then)
            amount = quantity(raw, path.key(name), errs)
        if amount is not None:
            out[name] = (raw, amount)
    return out


def validate_resources(
    resources: dict[str, Any],
    path: FieldPath,
    errs: Errors,
    *,
    opts: PodOptions = DEFAULT_OPTIONS,
    claims: frozenset[str] = frozenset(),
    pod_level: bool = False,
) -> None:
    """validateResourceRequirements, of a container (ValidateContainerResourceRequirements) or,
    with `pod_level`, of the pod (validatePodResourceRequirements). Limits first, then requests,
    each in the order written (Go walks its maps at random). A container's cpu, memory or
    ephemeral storage (the pod's cpu or memory), not negative, is what the name, value and
    hugepage checks find nothing in: they run for any other entry. `claims` are the names
    `spec.resourceClaims` declares, which `resources.claims` may refer to."""
    plain_names = _POD_LEVEL if pod_level else _CONTAINER_STANDARD
    resource_name_errors_ = pod_resource_name_errors if pod_level else resource_name_errors
    lim_path, req_path = path.child("limits"), path.child("requests")
    limits = _read_list(resources.get("limits"), lim_path, errs)
    requests = _read_list(resources.get("requests"), req_path, errs)
    compute, hugepages = False, False
    for name, (raw, amount) in limits.items():
        if name in plain_names and amount >= 0:
            compute = compute or name in ("cpu", "memory")
            continue
        at = lim_path.key(name)
        errs += resource_name_errors_(name, at) + _quantity_value_errors(name, raw, amount, at)
        if is_hugepages(name):
            hugepages = True
            errs += _hugepage_errors(name, raw, amount, at)
        compute = compute or name in ("cpu", "memory")
    for name, (raw, amount) in requests.items():
        plain = name in plain_names and amount >= 0
        if not plain:
            at = req_path.key(name)
            errs += resource_name_errors_(name, at) + _quantity_value_errors(name, raw, amount, at)
        if name in limits:
            limit_raw, limit = limits[name]
            if amount != limit and not overcommit_allowed(name):
                errs.append(invalid(req_path, canonical(raw, amount), f"must be equal to {name} limit of {canonical(limit_raw, limit)}"))
            elif amount > limit:
                errs.append(invalid(req_path, canonical(raw, amount), f"must be less than or equal to {name} limit of {canonical(limit_raw, limit)}"))
        elif not overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        if not plain and is_hugepages(name):
            hugepages = True
            errs += _hugepage_errors(name, raw, amount, at)
        compute = compute or name in ("cpu", "memory")
    if hugepages and not compute:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    if resources.get("claims") is not None and opts.on("DynamicResourceAllocation"):
        _claim_names(resources.get("claims"), claims, path.child("claims"), errs)


def _claim_names(value: Any, declared: frozenset[str], path: FieldPath, errs: Errors) -> None:
    """validateResourceClaimNames (1.31-1.34): each claim names one of `spec.resourceClaims`, at
    most once, or one request of it (`request`, a DNS label) at most once and not besides the
    whole claim."""
    seen: set[str] = set()
    for at, claim, name in _named_items(value, path, errs):
        if not name:
            errs.append(required(at))
            continue
        if name in seen:
            errs.append(duplicate(at, name))  # every request of the claim is already referred to
        else:
            key = name
            request = text(claim.get("request"), at.child("request"), errs)
            if request:
                errs += [invalid(at.child("request"), request, m) for m in names.is_dns1123_label(request)]
                key = f"{name}/{request}"
            if key in seen:
                errs.append(duplicate(at, key))
            elif not request:
                errs += [duplicate(at, name) for other in seen if "/" in other and other.split("/", 1)[0] == name]
            seen.add(key)
        if name not in declared:
            listed = ": " + ", ".join(sorted(declared)) if declared else " which is empty"
            errs.append(not_found(at, name, "must be one of the names in pod.spec.resourceClaims" + listed))


def _named_items(value: Any, path: FieldPath, errs: Errors) -> Iterator[tuple[FieldPath, dict[str, Any], str]]:
    """Each item of a list of objects with a `name`: its path, the item, the name."""
    for i, raw in enumerate(arr(value, path, errs)):
        at = path.index(i)
        item = obj(raw, at, errs)
        yield at, item, text(item.get("name"), at.child("name"), errs)


def declared_claims(spec: dict[str, Any]) -> frozenset[str]:
    """gatherPodResourceClaimNames: every non-empty `spec.resourceClaims[].name`, valid or not."""
    listed = spec.get("resourceClaims")
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(c["name"] for c in listed if isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"])


def validate_pod_resource_claims(value: Any, path: FieldPath, errs: Errors) -> None:
    """validatePodResourceClaims (1.31-1.34): unique DNS-label names, each with exactly one of
    `resourceClaimName` and `resourceClaimTemplateName`, a DNS subdomain."""
    seen: set[str] = set()
    for at, claim, name in _named_items(value, path, errs):
        if not name:
            errs.append(required(at.child("name")))
        elif name in seen:
            errs.append(duplicate(at.child("name"), name))
        else:
            errs += [invalid(at.child("name"), name, m) for m in names.is_dns1123_label(name)]
            seen.add(name)
        claim_name = opt_text(claim.get("resourceClaimName"), at.child("resourceClaimName"), errs)
        template = opt_text(claim.get("resourceClaimTemplateName"), at.child("resourceClaimTemplateName"), errs)
        if claim_name is not None and template is not None:
            errs.append(
                invalid(at, _claim_struct(name, claim_name, template), "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
            )
        if claim_name is None and template is None:
            errs.append(invalid(at, _claim_struct(name, claim_name, template), "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
        for key, given in (("resourceClaimName", claim_name), ("resourceClaimTemplateName", template)):
            if given is not None:
                errs += [invalid(at.child(key), given, m) for m in names.name_is_dns_subdomain(given)]


def _claim_struct(name: str, claim_name: str | None, template: str | None) -> GoSyntax:
    """`%#v` of a core.PodResourceClaim: its two names are pointers, shown as an address or nil."""

    def pointer(value: str | None) -> str:
        return "(*string)(" + ("0x{pointer}" if value is not None else "nil") + ")"

    return GoSyntax(f'core.PodResourceClaim{{Name:"{name}", ResourceClaimName:{pointer(claim_name)}, ResourceClaimTemplateName:{pointer(template)}}}')


def validate_pod_resources(spec: dict[str, Any], path: FieldPath, errs: Errors, *, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    """validatePodResources (1.32-1.34): pod-level `resources` take cpu and memory (and
    hugepages), no claims, requests within limits, then agree with the containers'
    (validatePodResourceConsistency)."""
    resources = opt_obj(spec.get("resources"), path, errs)
    if resources is None:
        return
    if resources.get("claims") is not None:
        errs.append(forbidden(path.child("claims"), "claims cannot be set for Resources at pod-level"))
    validate_resources(resources, path, errs, opts=opts, claims=declared_claims(spec), pod_level=True)
    _pod_resource_consistency(spec, resources, path, errs)


def _pod_resource_consistency(spec: dict[str, Any], resources: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """validatePodResourceConsistency: the pod's requests at least the containers' aggregate
    (AggregateContainerRequests of k8s.io/component-helpers/resource: app containers and
    sidecars add up, a plain init container counts alone with the sidecars started before it,
    and the larger wins), and no app container's limit above the pod's.

    Only resources the pod names are compared. The version read also compares a resource only
    containers request against a pod request of 0, which refuses a pod-level cpu beside a
    container's `nvidia.com/gpu`; later releases default or skip those, so we skip them."""
    requests = _read_list(resources.get("requests"), path, [])
    limits = _read_list(resources.get("limits"), path, [])
    totals = aggregate_containers(spec)
    for name, (raw, amount) in totals.items():
        if name not in requests or not podrequests.supported_at_pod_level(name):
            continue
        pod_raw, pod_amount = requests[name]
        if amount > pod_amount:
            errs.append(
                invalid(
                    path.child("requests").key(name),
                    canonical(pod_raw, pod_amount),
                    f"must be greater than or equal to aggregate container requests of {canonical(raw, amount)}",
                )
            )
    for i, c in enumerate(only_objects(as_list(spec.get("containers")))):
        for name, (raw, amount) in _read_list(obj(c.get("resources"), path, []).get("limits"), path, []).items():
            if name in limits and amount > limits[name][1]:
                errs.append(
                    invalid(
                        path.child("containers").index(i).key(name).child("limits"),
                        canonical(raw, amount),
                        f"must be less than or equal to pod limits of {canonical(*limits[name])}",
                    )
                )


class _Written:
    """A quantity and the value it was written as, summed as Go sums Quantities: a sum keeps the
    format of its first operand, a larger value replaces a smaller one with its own."""

    __slots__ = ("amount", "raw")

    def __init__(self, raw: Any, amount: Decimal) -> None:
        self.raw, self.amount = raw, amount

    def __add__(self, other: _Written) -> _Written:
        return _Written(self.raw, self.amount + other.amount)

    def __gt__(self, other: _Written) -> bool:
        return self.amount > other.amount


def aggregate_containers(spec: dict[str, Any], part: str = "requests") -> dict[str, tuple[Any, Decimal]]:
    """AggregateContainerRequests (`part` "requests") or AggregateContainerLimits ("limits") of
    component-helpers' resource helpers (podrequests.aggregate, the scheduler's counting), as
    (the first quantity's text, for its format; the sum)."""

    def written(c: dict[str, Any]) -> dict[str, _Written]:
        return {name: _Written(raw, amount) for name, (raw, amount) in _read_list(obj(c.get("resources"), FieldPath(), []).get(part), FieldPath(), []).items()}

    return {name: (w.raw, w.amount) for name, w in podrequests.aggregate(spec, written).items()}


def validate_overhead(value: Any, path: FieldPath, errs: Errors) -> None:
    """spec.overhead is checked as if it were a container's limits."""
    validate_resources({"limits": value}, path, errs)
