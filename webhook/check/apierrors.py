"""Errors in the API server's words: apimachinery's `field.Error` as kube-apiserver 1.28 renders it.

The webhook's own rules use `admission.fields` (the subset a webhook needs); the schema, CEL and
decoding steps of `check` need the rest of apimachinery's error types (`Too many`, type errors,
`<nil>` paths, Go's rendering of bad values), so they get this small model of their own. Both
render `<path>: <Type>[: <value>][: <detail>]`.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from dataclasses import dataclass
from typing import Any

# apimachinery's ErrorType names, and what `ErrorType.String()` prints for each.
TYPE_TEXT = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}

# Types whose body never shows the bad value (ErrorBody's first cases).
_NO_VALUE = {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"}

# x-kubernetes-validations `reason` -> error type (CRDValidationRules, 1.28).
RULE_REASONS = {
    "FieldValueInvalid": "FieldValueInvalid",
    "FieldValueForbidden": "FieldValueForbidden",
    "FieldValueRequired": "FieldValueRequired",
    "FieldValueDuplicate": "FieldValueDuplicate",
}


class _Omit:
    def __repr__(self) -> str:
        return "<omitted>"


OMIT: Any = _Omit()


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


def go_value(value: Any) -> str:
    """A bad value as ErrorBody prints it: %v for numbers and bools, %q for strings, "null" for nil,
    Go's %#v for composite values."""
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


@dataclass(frozen=True, slots=True)
class ApiError:
    """One field error. `parts` is the structural path (keys and list indices) used to find the
    field in the YAML; `field` is the path as the API server prints it (`<nil>` for none)."""

    kind: str
    field: str
    parts: tuple[str | int, ...]
    detail: str = ""
    value: Any = OMIT

    @property
    def type_text(self) -> str:
        return TYPE_TEXT[self.kind]

    def body(self) -> str:
        text = self.type_text
        if self.kind not in _NO_VALUE and self.value is not OMIT:
            text += ": " + go_value(self.value)
        if self.detail:
            text += ": " + self.detail
        return text

    def __str__(self) -> str:
        return f"{self.field or '<nil>'}: {self.body()}"


def invalid_message(kind: str, group: str, name: str, errors: list[ApiError]) -> str:
    """apimachinery's NewInvalid: `Kind.group "name" is invalid: e` or `...: [e1, e2]`."""
    rendered = [str(e) for e in errors]
    body = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return f'{qualified} "{name}" is invalid: {body}'


def strict_decoding_message(kind: str, version: str, problems: list[str]) -> str:
    """The 400 a strict (`kubectl --validate=strict`, the default) create or update gets."""
    return f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: ' + ", ".join(problems)


def no_match_message(kind: str, api_version: str) -> str:
    """kubectl's RESTMapper refusal: the version (or kind) is not served by the API server."""
    return f'no matches for kind "{kind}" in version "{api_version}"'
