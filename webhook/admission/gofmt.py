"""Go's `fmt` renderings of decoded JSON values, as the API server prints them in its errors.

A schema, CEL or built-in error shows its bad value the way apimachinery's `ErrorBody` formats it
(`%v` for numbers, `%q` for strings, `%#v` for maps and lists), and kube-openapi prints schema
bounds as plain decimals; `check` has to match that text byte for byte to be compared with a
real API server's answer, so every such rendering lives here.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any


def go_float(value: float) -> str:
    """Go's `%v` for a float64 (strconv 'g', shortest digits): exponent form when the decimal
    exponent is below -4 or at least 6, as in `should be less than or equal to 1e+06`."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    sign, digit_tuple, exp = Decimal(repr(float(value))).as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exp, int)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    digits = stripped.lstrip("0") or "0"
    point = len(digits) + exp  # position of the decimal point after the first digit's place
    x = point - 1
    minus = "-" if sign else ""
    if x < -4 or x >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{minus}{mantissa}e{'+' if x >= 0 else '-'}{abs(x):02d}"
    return minus + format(abs(Decimal(repr(float(value)))), f".{max(len(digits) - point, 0)}f")


def plain_number(value: float) -> str:
    """A schema bound as kube-openapi's messages print it: decimal digits, never an exponent
    (`should be less than or equal to 1000000`, as a 1.28 API server shows)."""
    if float(value).is_integer():
        return str(int(value))
    return format(Decimal(repr(float(value))), "f")


class GoSyntax(str):
    """A bad value already written as Go prints it (a typed struct such as `core.Toleration{...}`,
    a `[]string{...}`): the built-in Pod validation reports typed values that decoded JSON cannot
    describe, so its error is built with the text and printed as is."""

    __slots__ = ()


def go_value(value: Any) -> str:
    """A bad value as ErrorBody prints it: %v for numbers and bools, %q for strings, "null" for nil,
    Go's %#v for composite values."""
    if isinstance(value, GoSyntax):
        return str(value)
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_syntax(value)


def go_quote(text: str) -> str:
    """Go's %q for ordinary text (JSON escaping agrees with it for printable characters)."""
    return json.dumps(text, ensure_ascii=False)


def go_syntax(value: Any) -> str:
    """Go's %#v of decoded JSON: map[string]interface {}{...} (keys sorted), []interface {}{...}."""
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{_go_inner(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_inner(v) for v in value) + "}"
    return go_value(value)


def _go_inner(value: Any) -> str:
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}"
    if isinstance(value, float):
        return go_float(value)
    return go_syntax(value)


_GO_TYPES = {str: "string", float: "float64", bool: "bool", int: "int64", dict: "map[string]interface {}", list: "[]interface {}"}


def go_type(value: Any) -> str:
    """The Go type a decoded JSON value has in an unstructured object (`float64`, `int64`...)."""
    return _GO_TYPES.get(type(value), "string")


def go_text(value: Any) -> str:
    """Go's %v of a decoded JSON value, as unstructured's accessor errors print it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_text(v)}" for k, v in sorted(value.items())) + "]"
    return str(value)
