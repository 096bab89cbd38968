"""The one place this package builds field errors: the house's constructors, origin built-in.

The package reports what kube-apiserver would report, so its errors carry the `builtin` origin and
print their bad values the way Go's `field.Error.ErrorBody` does (strings quoted, numbers bare,
typed values in Go syntax). The Pod validation sees typed Go values where decoded JSON has plain
lists and maps, so `_typed` turns those into the text Go would print before the error is built;
every other module calls the wrappers below and never constructs an error itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..admission import fields
from ..admission.fields import FieldError, FieldPath
from ..admission.gofmt import GoSyntax

__all__ = [
    "BUILTIN",
    "FieldError",
    "FieldPath",
    "GoSyntax",
    "Errors",
    "located",
    "duplicate",
    "forbidden",
    "internal",
    "invalid",
    "not_found",
    "not_supported",
    "required",
    "too_long",
    "too_long_bytes",
    "too_many",
    "type_invalid",
]

BUILTIN = fields.BUILTIN

Errors = list[FieldError]


def _typed(value: Any) -> Any:
    """A list of strings is a Go `[]string`; any other composite value is shown as JSON text, which
    is what the API server's typed structs print for the fields this package reports."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return GoSyntax("[]string{" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "}")
    if isinstance(value, (dict, list)):
        return GoSyntax(json.dumps(value, sort_keys=True, default=str))
    return value


class _Unplaced(FieldPath):
    """A path that stays where it is: `child`, `index` and `key` return it unchanged, so a check
    run with it builds no path at all (a valid pod visits some 90 fields)."""

    __slots__ = ()

    def child(self, *names: str | int) -> FieldPath:
        return self

    def index(self, i: int) -> FieldPath:
        return self

    def key(self, k: str) -> FieldPath:
        return self


_UNPLACED = _Unplaced()


def located(check: Callable[[FieldPath], Errors], path: FieldPath) -> Errors:
    """`check(path)`, the common case (no error) paid without building paths: the check runs first
    with a path that does not grow, and again at `path` only when it found something. Sound for a
    check that reads its input and never its path (this package's checks: the path only goes into
    the errors they build) and changes nothing."""
    return check(path) if check(_UNPLACED) else []


def invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return fields.invalid(path, _typed(value), detail, origin=BUILTIN)


def required(path: FieldPath, detail: str = "") -> FieldError:
    return fields.required(path, detail, origin=BUILTIN)


def forbidden(path: FieldPath, detail: str) -> FieldError:
    return fields.forbidden(path, detail, origin=BUILTIN)


def not_supported(path: FieldPath, value: Any, supported: list[str]) -> FieldError:
    return fields.not_supported(path, _typed(value), supported, origin=BUILTIN)


def choice(value: str, supported: list[str], path: FieldPath, field: str, errs: Errors) -> None:
    """A field the API server requires to be one of a fixed set: Required when empty, Not
    supported when unknown (restartPolicy, dnsPolicy, a port's protocol, imagePullPolicy...),
    at `path.<field>` (built only then: every container and pod asks this several times)."""
    if value in supported:
        return
    errs.append(required(path.child(field)) if not value else not_supported(path.child(field), value, supported))


def duplicate(path: FieldPath, value: Any) -> FieldError:
    return fields.duplicate(path, _typed(value), origin=BUILTIN)


def not_found(path: FieldPath, value: Any, detail: str = "") -> FieldError:
    return FieldError("FieldValueNotFound", path, detail, _typed(value), BUILTIN)


def too_long(path: FieldPath, max_length: int, *, since_1_32: bool = False) -> FieldError:
    """field.TooLong. `since_1_32`: the wording of apimachinery v0.32.11 to v0.37.2 (`may not be
    more than N bytes`, `1 byte`, the value omitted), which checks ported from 1.32 or later ask
    for; without it, the 1.28 wording (`must have at most N bytes`) the older checks carry."""
    if not since_1_32:
        return fields.too_long(path, max_length, origin=BUILTIN)
    detail = f"may not be more than {max_length} {'byte' if max_length == 1 else 'bytes'}" if max_length >= 0 else "value is too long"
    return FieldError("FieldValueTooLong", path, detail, fields.OMIT, BUILTIN)


def too_long_bytes(path: FieldPath, max_length: int) -> FieldError:
    """field.TooLong as apimachinery v0.34.4 to v0.37.2 word it (`may not be more than N bytes`;
    v0.32 and v0.33 the same but for one byte), for checks ported from those minors only:
    `too_long` keeps 1.28's `must have at most N bytes`."""
    unit = "byte" if max_length == 1 else "bytes"
    return FieldError("FieldValueTooLong", path, f"may not be more than {max_length} {unit}", fields.OMIT, BUILTIN)


def too_many(path: FieldPath, actual: int, max_items: int) -> FieldError:
    """field.TooMany (apimachinery v0.37.2 pkg/util/validation/field/errors.go): `Too many: <actual>:
    must have at most <max> items` (`1 item`; `has too many items` for a negative bound, the value
    omitted for a negative count)."""
    if max_items == 1:
        return FieldError("FieldValueTooMany", path, "must have at most 1 item", actual if actual >= 0 else fields.OMIT, BUILTIN)
    return fields.too_many(path, actual, max_items, origin=BUILTIN)


def type_invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return fields.type_invalid(path, _typed(value), detail, origin=BUILTIN)


def internal(path: FieldPath, detail: str) -> FieldError:
    return fields.internal(path, detail, origin=BUILTIN)
