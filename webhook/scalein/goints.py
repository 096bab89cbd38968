"""Go's integers, as the controllers that read our costs parse and sum them: the ReplicaSet
controller's and the API server's reading of the annotation (int32, `parse_cost`), Kthena's
(`strconv.Atoi`, 64 bits: `kthena_cost`), and Kthena's sum that wraps at 64 bits (`go_sum`). The
costs we write and `plan`'s ranking must agree with them to the bit, so they are emulated here,
not approximated. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def parse_cost(raw: str | None) -> int | None:
    """An annotation value as the ReplicaSet controller and the API server read it (kubernetes
    `pkg/apis/core/helper/helpers.go` GetDeletionCostFromPodAnnotations: a first character that is
    '-', a digit other than '0', or "0" alone, then strconv.ParseInt(value, 10, 32)): no '+', no
    leading zeros, int32; "-007" is -7 there. None when it refuses the value."""
    if raw is None or not raw or not (raw[0] == "-" or raw == "0" or raw[0] in "123456789"):
        return None
    value = go_int(raw)
    return value if value is not None and INT32_MIN <= value <= INT32_MAX else None


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
