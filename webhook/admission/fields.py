"""Field paths and field errors, rendered the way Kubernetes' field.ErrorList renders them.

Users read these messages in `kubectl` output next to the API server's own, so they follow
apimachinery's wording: `<path>: <Type>[: <value>][: <detail>]`. One model serves the webhook's
rules and `check`'s offline copy of the API server: an error carries its origin, and the origin
decides how its bad value is printed. The API server's own errors (schema, CEL, built-in
validation) print it as Go does, so `check` can be compared with a real API server byte for byte;
our rules' errors print it as JSON, the text users of the webhook have always seen.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .gofmt import go_quote, go_value

ErrorKind = Literal[
    "FieldValueNotFound",
    "FieldValueRequired",
    "FieldValueDuplicate",
    "FieldValueInvalid",
    "FieldValueNotSupported",
    "FieldValueForbidden",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "InternalError",
    "FieldValueTypeInvalid",
]

# apimachinery's ErrorType names, and what `ErrorType.String()` prints for each.
TYPE_TEXT: dict[str, str] = {
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

# Kinds whose body never shows the bad value (the first cases of apimachinery's ErrorBody).
_NO_VALUE = frozenset({"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"})

# Origins. Errors the API server itself would give are rendered as it renders them; any other
# origin (RULE, or a rule's name) is one of ours.
SCHEMA = "schema"
CEL = "cel"
BUILTIN = "builtin"
RULE = "rule"
API_SERVER_ORIGINS = frozenset({SCHEMA, CEL, BUILTIN})


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"

    def __reduce__(self) -> str:  # copies and pickles stay the one sentinel `value is OMIT` tests for
        return "OMIT"


OMIT: Any = _Omit()  # `value` of an error that has none


class Key(str):
    """A map key in a path, rendered `[key]`; a plain `str` part is a child name, rendered `.name`.

    Unequal to the plain string with the same text, so two paths that render differently never
    compare equal; YAML lookups still see its text."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Key) and str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"Key({str.__repr__(self)})"


@dataclass(frozen=True, slots=True)
class FieldPath:
    """An immutable path such as `spec.template.roles[1].replicas` or `...minRoleReplicas[prefill]`.

    `parts` holds child names (`str`), list indices (`int`) and map keys (`Key`), so a path can be
    followed into the object (or a YAML document) without parsing its text back."""

    parts: tuple[str | int, ...] = ()

    @classmethod
    def of(cls, *names: str | int) -> FieldPath:
        return cls(tuple(names))

    # Validators build a path per field they visit, so these skip the frozen dataclass' __init__
    # (an object.__setattr__ call per path) and set the slot directly: same object, far cheaper.
    def child(self, *names: str | int) -> FieldPath:
        p = _new(FieldPath)
        _set_parts(p, self.parts + names)
        return p

    def index(self, i: int) -> FieldPath:
        p = _new(FieldPath)
        _set_parts(p, self.parts + (i,))
        return p

    def key(self, k: str) -> FieldPath:
        p = _new(FieldPath)
        _set_parts(p, self.parts + (Key(k),))
        return p

    def __str__(self) -> str:
        """apimachinery's Path.String: `.` before every name but the first, `[i]`/`[key]` for
        subscripts (a leading empty name thus renders a leading dot, as in `.spec.replicas`)."""
        out: list[str] = []
        for i, part in enumerate(self.parts):
            if isinstance(part, (int, Key)):
                out.append(f"[{part}]")
            else:
                out.append("." + part if i else part)
        return "".join(out)


_new = object.__new__
_set_parts = vars(FieldPath)["parts"].__set__  # the slot's own descriptor


def json_value(value: Any) -> str:
    """A bad value as our rules print it: JSON."""
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
    """One field error: its apimachinery type (`kind`), where, why, the bad value (OMIT when it
    has none) and who found it (`origin`: SCHEMA, CEL, BUILTIN, or one of our rules)."""

    kind: ErrorKind
    path: FieldPath
    detail: str = ""
    value: Any = OMIT
    origin: str = RULE

    @property
    def field(self) -> str:
        """The path as the API server prints it; an empty path is Go's nil path, `<nil>`."""
        return str(self.path) or "<nil>"

    @property
    def from_api_server(self) -> bool:
        return self.origin in API_SERVER_ORIGINS

    def body(self) -> str:
        """The error without its path, as it appears in a Status cause's `message`."""
        text = TYPE_TEXT[self.kind]
        if self.kind not in _NO_VALUE and self.value is not OMIT:
            text += ": " + (go_value(self.value) if self.from_api_server else json_value(self.value))
        if self.detail:
            text += ": " + self.detail
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def invalid_message(kind: str, group: str, name: str, errors: Sequence[FieldError]) -> str:
    """apimachinery's NewInvalid: `Kind.group "name" is invalid: e` or `...: [e1, e2]`."""
    rendered = [str(e) for e in errors]
    body = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return f'{qualified} "{name}" is invalid: {body}'


# ---- constructors, one per apimachinery function (field.Invalid, field.Required, ...) ------------


def invalid(path: FieldPath, value: Any, detail: str, *, origin: str = RULE) -> FieldError:
    return FieldError("FieldValueInvalid", path, detail, value, origin)


def required(path: FieldPath, detail: str = "", *, origin: str = RULE) -> FieldError:
    return FieldError("FieldValueRequired", path, detail, OMIT, origin)


def forbidden(path: FieldPath, detail: str, *, origin: str = RULE) -> FieldError:
    return FieldError("FieldValueForbidden", path, detail, OMIT, origin)


def not_supported(path: FieldPath, value: Any, supported: list[str], *, origin: str = RULE) -> FieldError:
    if origin in API_SERVER_ORIGINS:  # Go's strconv.Quote, and no detail for an empty list
        detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    else:
        detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError("FieldValueNotSupported", path, detail, value, origin)


def duplicate(path: FieldPath, value: Any, *, origin: str = RULE) -> FieldError:
    return FieldError("FieldValueDuplicate", path, "", value, origin)


def not_found(path: FieldPath, value: Any, *, origin: str = RULE) -> FieldError:
    return FieldError("FieldValueNotFound", path, "", value, origin)


def too_long(path: FieldPath, max_length: int, *, origin: str = RULE) -> FieldError:
    """Schema errors use apimachinery's TooLongMaxLength wording, built-in and CEL ones its
    TooLong wording (1.28); our rules keep the text they have always given."""
    if origin == SCHEMA:
        detail = f"may not be longer than {max_length}" if max_length >= 0 else "value is too long"
    elif origin in API_SERVER_ORIGINS:
        detail = f"must have at most {max_length} bytes"
    else:
        detail = f"may not be more than {max_length} bytes"
    return FieldError("FieldValueTooLong", path, detail, OMIT, origin)


def too_many(path: FieldPath, actual: int, max_items: int, *, origin: str = RULE) -> FieldError:
    detail = f"must have at most {max_items} items" if max_items >= 0 else "has too many items"
    return FieldError("FieldValueTooMany", path, detail, actual if actual >= 0 else OMIT, origin)


def type_invalid(path: FieldPath, value: Any, detail: str, *, origin: str = RULE) -> FieldError:
    return FieldError("FieldValueTypeInvalid", path, detail, value, origin)


def internal(path: FieldPath, detail: str, *, origin: str = RULE) -> FieldError:
    return FieldError("InternalError", path, detail, OMIT, origin)
