"""Small pure helpers shared by the rule modules: number checks, Kubernetes name checks,
durations, int-or-percent values and lookups of a target ModelServing (field access without
trusting a value's type is webhook/shapes/).

Everything here tolerates odd input (a string where a number belongs, a list where a map
belongs): rules must answer with a field error, never with an exception.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

from ..kthena import MODELSERVING_API_VERSION, MODELSERVING_KIND
from ..shapes import as_object
from .context import Context, LookupFailed


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def int_or(value: Any, default: int) -> int:
    return value if is_int(value) else default


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---- names (apimachinery pkg/util/validation wording) -------------------------------------------

DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError text, including its odd spacing between examples."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    parts = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {parts}regex used for validation is '{fmt}')"


def dns1035_label_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not DNS1035_LABEL.fullmatch(value):
        errs.append(regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


# ---- durations (quantities: webhook/quantity.py) -------------------------------------------------------------------

_DURATION_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)", re.ASCII)
_DURATION_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float | None:
    """A Go duration string (`"90s"`, `"1m30s"`, `"-5m"`) in seconds; None when unparsable."""
    if not isinstance(value, str) or not value:
        return None
    text, sign = value, 1.0
    if text[0] in "+-":
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if not m:
            return None
        total += float(m.group(1)) * _DURATION_UNIT[m.group(2)]
        pos = m.end()
    return sign * total if pos else None


# ---- int-or-percent (k8s.io/apimachinery intstr) ------------------------------------------------

_PERCENT = re.compile(r"[0-9]+%", re.ASCII)


def scaled_int_or_percent(value: Any, total: int, round_up: bool = False) -> tuple[int | None, str | None]:
    """apimachinery intstr.GetScaledValueFromIntOrPercent: (value, None) or (None, error text).
    A percentage of `total` is rounded down, or up with `round_up` (Kthena's maxSurge and partition)."""
    if is_int(value):
        return value, None
    if isinstance(value, str):
        if not value.endswith("%"):
            return None, "invalid value for IntOrString: invalid type: string is not a percentage"
        digits = value[:-1]
        if not re.fullmatch(r"[+-]?[0-9]+", digits, re.ASCII):
            return None, f'invalid value "{value}": strconv.Atoi: parsing "{digits}": invalid syntax'
        if len(digits.lstrip("+-").lstrip("0")) > 18:  # beyond Go's int64, as strconv.Atoi says
            return None, f'invalid value "{value}": strconv.Atoi: parsing "{digits}": value out of range'
        scaled = int(digits) * total
        return (-(-scaled // 100) if round_up else scaled // 100), None
    return None, "invalid value for IntOrString: invalid type: neither int nor percentage"


def int_or_percent_errors(value: Any) -> list[str]:
    """Kthena's validateIntOrPercent: the problems of an int-or-percent value, as details."""
    if value is None:
        return []
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            return [regex_error("a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%")]
        digits = value[:-1].lstrip("0") or "0"
        if len(digits) > 3 or int(digits) > 100:  # never converts a long digit string
            return ["must be a valid percent value (0-100)"]
        return []
    if is_int(value):
        return ["must be a non-negative integer"] if value < 0 else []
    return ["must be an int or percent"]


# ---- lookups of a target ModelServing -----------------------------------------------------------


def lookup_modelserving(ctx: Context, namespace: str, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the ModelServing, None), (None, None) when it does not exist, or (None, reason) when unreadable."""
    try:
        found = ctx.lookups.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, namespace, name)
    except LookupFailed as exc:
        return None, str(exc) or "lookup failed"
    return as_object(found), None
