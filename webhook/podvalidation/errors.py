"""The one place this package builds field errors: apimachinery's constructors, origin built-in.

The package reports what kube-apiserver would report, so every error prints its bad value the
way Go's `field.Error.ErrorBody` does (strings quoted, numbers bare, composite values in Go
syntax) rather than as JSON like our own rules. Every other module calls the wrappers below and
never constructs an error itself, so pointing the package at another field-error model means
changing this module only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from ..admission.fields import FieldError, FieldPath

__all__ = [
    "BUILTIN", "FieldError", "FieldPath", "GoSyntax", "Errors",
    "duplicate", "forbidden", "internal", "invalid", "not_found", "not_supported", "required",
    "too_long", "too_many", "type_invalid",
]

BUILTIN = "builtin"

_TYPE_TEXT = {
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
# The kinds whose message never carries the bad value.
_NO_VALUE = frozenset({"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"})
_OMIT: Any = object()

Errors = list[FieldError]


class GoSyntax(str):
    """A bad value that is already Go's `%#v` text (a struct, a typed slice): printed as is."""

    __slots__ = ()


def go_value(value: Any) -> str:
    """A bad value as `ErrorBody` prints it."""
    if isinstance(value, GoSyntax):
        return str(value)
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "}"
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True, slots=True)
class _BuiltinError(FieldError):
    """A FieldError found by the API server's own validation: Go rendering, `<nil>` for no path."""

    @property
    def field(self) -> str:
        return str(self.path) or "<nil>"

    @property
    def type_text(self) -> str:
        return _TYPE_TEXT[self.kind]

    @property
    def origin(self) -> str:
        return BUILTIN

    def body(self) -> str:
        text = _TYPE_TEXT[self.kind]
        if self.kind not in _NO_VALUE and self.value is not _OMIT:
            text += ": " + go_value(self.value)
        if self.detail:
            text += ": " + self.detail
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def _make(kind: str, path: FieldPath, detail: str = "", value: Any = _OMIT) -> FieldError:
    return _BuiltinError(cast(Any, kind), path, detail, value)


def invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return _make("FieldValueInvalid", path, detail, value)


def required(path: FieldPath, detail: str = "") -> FieldError:
    return _make("FieldValueRequired", path, detail)


def forbidden(path: FieldPath, detail: str) -> FieldError:
    return _make("FieldValueForbidden", path, detail)


def not_supported(path: FieldPath, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) if supported else ""
    return _make("FieldValueNotSupported", path, detail, value)


def duplicate(path: FieldPath, value: Any) -> FieldError:
    return _make("FieldValueDuplicate", path, "", value)


def not_found(path: FieldPath, value: Any, detail: str = "") -> FieldError:
    return _make("FieldValueNotFound", path, detail, value)


def too_long(path: FieldPath, max_length: int) -> FieldError:
    return _make("FieldValueTooLong", path, f"must have at most {max_length} bytes")


def too_many(path: FieldPath, actual: int, max_items: int) -> FieldError:
    return _make("FieldValueTooMany", path, f"must have at most {max_items} items", actual)


def type_invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return _make("FieldValueTypeInvalid", path, detail, value)


def internal(path: FieldPath, detail: str) -> FieldError:
    return _make("InternalError", path, detail)
