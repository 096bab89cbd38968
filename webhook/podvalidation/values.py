"""Reading untrusted JSON as Go's decoder would see it, and quantities as `resource.Quantity`.

A template reaches us as whatever JSON the user wrote: a string where a list belongs, a list
where an object belongs. Go's decoder would refuse such a document before validation; we
report a type error at the field and read the field as its zero value, so the validators below
never meet a type they do not expect and never raise.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from typing import Any

from ..quantity import parse_quantity
from .errors import Errors, FieldPath, type_invalid

_KIND = {dict: "object", list: "array", str: "string", int: "integer", bool: "boolean", float: "number"}


def _wrong(value: Any, want: str, path: FieldPath, errs: Errors) -> None:
    shown = value if isinstance(value, (str, int, float, bool)) else _KIND.get(type(value), "value")
    errs.append(type_invalid(path, shown, f"must be of type {want}"))


def obj(value: Any, path: FieldPath, errs: Errors) -> dict[str, Any]:
    """An object field; null and absent are Go's zero value (empty)."""
    if isinstance(value, dict):
        return value
    if value is not None:
        _wrong(value, "object", path, errs)
    return {}


def opt_obj(value: Any, path: FieldPath, errs: Errors) -> dict[str, Any] | None:
    """A pointer-to-struct field: None when absent or null (Go's nil)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    _wrong(value, "object", path, errs)
    return None


def arr(value: Any, path: FieldPath, errs: Errors) -> list[Any]:
    if isinstance(value, list):
        return value
    if value is not None:
        _wrong(value, "array", path, errs)
    return []


def text(value: Any, path: FieldPath, errs: Errors) -> str:
    if isinstance(value, str):
        return value
    if value is not None:
        _wrong(value, "string", path, errs)
    return ""


def field_text(holder: dict[str, Any], field: str, path: FieldPath, errs: Errors) -> str:
    """`text` of `holder[field]`, reported at `path.<field>`: that path built only then."""
    value = holder.get(field)
    return value if isinstance(value, str) else text(value, path.child(field), errs)


def opt_text(value: Any, path: FieldPath, errs: Errors) -> str | None:
    if value is None or isinstance(value, str):
        return value
    _wrong(value, "string", path, errs)
    return None


def integer(value: Any, path: FieldPath, errs: Errors) -> int:
    got = opt_int(value, path, errs)
    return 0 if got is None else got


def opt_int(value: Any, path: FieldPath, errs: Errors) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    _wrong(value, "integer", path, errs)
    return None


def flag(value: Any, path: FieldPath, errs: Errors) -> bool:
    got = opt_flag(value, path, errs)
    return bool(got)


def opt_flag(value: Any, path: FieldPath, errs: Errors) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    _wrong(value, "boolean", path, errs)
    return None


def strings(value: Any, path: FieldPath, errs: Errors) -> list[str]:
    """A list of strings; an item of another type is reported and read as "". (An item's path
    is built only when it is reported: this runs for every env list and label map of a pod.)"""
    return [v if isinstance(v, str) else text(v, path.index(i), errs) for i, v in enumerate(arr(value, path, errs))]


def string_map(value: Any, path: FieldPath, errs: Errors) -> dict[str, str]:
    """A map[string]string such as labels: a non-string value is reported and read as "". A map
    that is one already is returned as it is, not copied (every caller only reads it)."""
    found = obj(value, path, errs)
    for k, v in found.items():
        if type(k) is not str or not isinstance(v, str):
            break
    else:
        return found
    return {str(k): v if isinstance(v, str) else text(v, path.key(str(k)), errs) for k, v in found.items()}


# ---- quantities -----------------------------------------------------------------------------------

QUANTITY_SYNTAX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def quantity(value: Any, path: FieldPath, errs: Errors) -> Decimal | None:
    """A resource quantity, or None (with an error) when it does not parse."""
    if value is None:
        return Decimal(0)
    amount = parse_quantity(value)
    if amount is None:
        errs.append(type_invalid(path, value if isinstance(value, str) else str(value), QUANTITY_SYNTAX))
    return amount


def _format(value: Any) -> str:
    """The format a quantity keeps from how it was written: BinarySI, DecimalExponent or DecimalSI."""
    if isinstance(value, str):
        body = value.strip()
        if body.endswith(_BINARY):
            return "BinarySI"
        if "e" in body.lower().lstrip("+-0123456789.") and not body.endswith("E"):
            return "DecimalExponent"
    return "DecimalSI"


def canonical(value: Any, amount: Decimal) -> str:
    """`Quantity.String()`: the canonical text the API server prints for a quantity."""
    if amount == 0:
        return "0"
    fmt = _format(value)
    if fmt == "BinarySI" and abs(amount) >= 1024 and amount == amount.to_integral_value():
        number, power = int(amount), 0
        while power < 6 and number % 1024 == 0:
            number //= 1024
            power += 1
        return f"{number}{_BINARY[power - 1] if power else ''}"
    sign, digits, exp = amount.normalize().as_tuple()
    assert isinstance(exp, int)
    mantissa = int("".join(map(str, digits)))
    shift = exp % 3
    mantissa, exp = mantissa * 10**shift, exp - shift
    minus = "-" if sign else ""
    if fmt == "DecimalExponent":
        return f"{minus}{mantissa}" + (f"e{exp}" if exp else "")
    while exp > 18:
        mantissa, exp = mantissa * 1000, exp - 3
    if exp < -9:
        scaled = Decimal(mantissa).scaleb(exp + 9).to_integral_value(rounding=ROUND_CEILING)
        return f"{minus}{scaled}n"
    return f"{minus}{mantissa}{_DECIMAL[exp]}"
