"""Field paths and field errors, rendered the way Kubernetes' field.ErrorList renders them.

Users read these messages in `kubectl` output next to the API server's own, so they follow
apimachinery's wording: `<path>: <Type>[: <value>][: <detail>]`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

ErrorKind = Literal[
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueForbidden",
    "FieldValueNotSupported",
    "FieldValueTooLong",
    "FieldValueDuplicate",
]

_TYPE_TEXT: dict[str, str] = {
    "FieldValueInvalid": "Invalid value",
    "FieldValueRequired": "Required value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueTooLong": "Too long",
    "FieldValueDuplicate": "Duplicate value",
}

# Kinds whose rendering carries the offending value.
_WITH_VALUE = {"FieldValueInvalid", "FieldValueNotSupported", "FieldValueDuplicate"}

_OMIT = object()


@dataclass(frozen=True, slots=True)
class FieldPath:
    """An immutable path such as `spec.template.roles[1].replicas` or `...minRoleReplicas[prefill]`."""

    parts: tuple[str, ...] = ()

    @classmethod
    def of(cls, *names: str) -> "FieldPath":
        return cls(tuple(names))

    def child(self, *names: str) -> "FieldPath":
        return FieldPath(self.parts + tuple(names))

    def index(self, i: int) -> "FieldPath":
        return FieldPath(self.parts + (f"[{i}]",))

    def key(self, k: str) -> "FieldPath":
        return FieldPath(self.parts + (f"[{k}]",))

    def __str__(self) -> str:
        out: list[str] = []
        for part in self.parts:
            if part.startswith("[") or not out:
                out.append(part)
            else:
                out.append("." + part)
        return "".join(out)


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class FieldError:
    kind: ErrorKind
    path: FieldPath
    detail: str = ""
    value: Any = _OMIT

    @property
    def field(self) -> str:
        return str(self.path)

    @property
    def type_text(self) -> str:
        return _TYPE_TEXT[self.kind]

    def body(self) -> str:
        """The error without its path, as it appears in a Status cause's `message`."""
        text = self.type_text
        if self.kind in _WITH_VALUE and self.value is not _OMIT:
            text += ": " + _render_value(self.value)
        if self.detail:
            text += ": " + self.detail
        return text

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}"


def invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, detail, value)


def required(path: FieldPath, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, detail)


def forbidden(path: FieldPath, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, detail)


def not_supported(path: FieldPath, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError("FieldValueNotSupported", path, detail, value)


def too_long(path: FieldPath, max_length: int) -> FieldError:
    return FieldError("FieldValueTooLong", path, f"may not be more than {max_length} bytes")


def duplicate(path: FieldPath, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", path, "", value)
