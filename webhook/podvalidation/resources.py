"""Container resources (ValidateResourceRequirements): names, quantities, requests against limits.

The rules that matter to accelerators: an extended resource (`nvidia.com/gpu`,
`huawei.com/ascend-1980`: a name with a domain outside `kubernetes.io/`) cannot be overcommitted,
so a request needs a limit and must equal it, and its quantity must be a whole number.
Hugepages likewise need request == limit, a multiple of their page size, and cpu or memory.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from ..quantity import parse_quantity
from . import names
from .errors import Errors, FieldPath, GoSyntax, forbidden, invalid, required
from .values import canonical, obj, quantity

_STANDARD = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "quotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
}
_INTEGER = {
    "pods", "quotas", "services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims",
    "services.nodeports", "services.loadbalancers",
}
_CONTAINER_STANDARD = {"cpu", "memory", "ephemeral-storage"}


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
    size = _page_size(name[len("hugepages-"):])
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


def validate_resources(resources: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """Limits first, then requests, each in the order written (Go walks its maps at random).
    A container's cpu, memory or ephemeral storage, not negative, is what the name, value and
    hugepage checks find nothing in: they run for any other entry."""
    lim_path, req_path = path.child("limits"), path.child("requests")
    limits = _read_list(resources.get("limits"), lim_path, errs)
    requests = _read_list(resources.get("requests"), req_path, errs)
    compute, hugepages = False, False
    for name, (raw, amount) in limits.items():
        if name in _CONTAINER_STANDARD and amount >= 0:
            compute = compute or name in ("cpu", "memory")
            continue
        at = lim_path.key(name)
        errs += resource_name_errors(name, at) + _quantity_value_errors(name, raw, amount, at)
        if is_hugepages(name):
            hugepages = True
            errs += _hugepage_errors(name, raw, amount, at)
        compute = compute or name in ("cpu", "memory")
    for name, (raw, amount) in requests.items():
        plain = name in _CONTAINER_STANDARD and amount >= 0
        if not plain:
            at = req_path.key(name)
            errs += resource_name_errors(name, at) + _quantity_value_errors(name, raw, amount, at)
        if name in limits:
            limit_raw, limit = limits[name]
            if amount != limit and not overcommit_allowed(name):
                errs.append(invalid(req_path, canonical(raw, amount), f"must be equal to {name} limit of {canonical(limit_raw, limit)}"))
            elif amount > limit:
                errs.append(invalid(req_path, canonical(raw, amount),
                                    f"must be less than or equal to {name} limit of {canonical(limit_raw, limit)}"))
        elif not overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        if not plain and is_hugepages(name):
            hugepages = True
            errs += _hugepage_errors(name, raw, amount, at)
        compute = compute or name in ("cpu", "memory")
    if hugepages and not compute:
        errs.append(forbidden(path, "HugePages require cpu or memory"))


def validate_overhead(value: Any, path: FieldPath, errs: Errors) -> None:
    """spec.overhead is checked as if it were a container's limits."""
    validate_resources({"limits": value}, path, errs)
