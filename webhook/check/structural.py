"""A CRD's structural schema, and what the API server does with it on a write (1.28).

`compile_schema` turns an `openAPIV3Schema` into a tree of `Schema` nodes once per CRD version.
Then, per object, in the API server's order:

1. `decode`: drop non-nullable nulls that have no default, record unknown fields (pruning; the
   strict decoder's `unknown field "spec.x"`), apply `default:` values top down;
2. `validate`: type, required, enum, pattern, format, bounds, lengths, item and property counts,
   then the `x-kubernetes-list-type` set/map invariants; it also collects the nodes that carry
   `x-kubernetes-validations` so `celrules` can evaluate them afterwards.

Paths and messages follow kube-openapi's validator as the API server converts them to field
errors: `spec.template.roles[1].name in body should match '...'`, map entries as `.key`.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from ..admission.fields import SCHEMA, FieldError, FieldPath, Key, duplicate, invalid, not_supported, required, too_long, too_many, type_invalid
from ..admission.gofmt import plain_number
from .formats import format_ok as _format_ok

Path = tuple[str | int, ...]

_GO_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    return _GO_TYPES.get(type(value), "object" if isinstance(value, dict) else "string")


def render(parts: Path) -> str:
    """kube-openapi's path: `.` between names and map keys, `[i]` for list items."""
    return str(FieldPath(parts))


def field_path(parts: Path, keys: frozenset[int] = frozenset()) -> FieldPath:
    """apimachinery's field.Path: as `render` spells it, but the positions in `keys` are map keys, `[key]`."""
    if not keys:
        return FieldPath(parts)
    return FieldPath(tuple(Key(p) if i in keys and isinstance(p, str) else p for i, p in enumerate(parts)))


@dataclass(slots=True, eq=False)
class Schema:
    type: str = ""
    properties: dict[str, Schema] = field(default_factory=dict)
    additional: Schema | None = None  # additionalProperties as a schema
    items: Schema | None = None
    required: tuple[str, ...] = ()
    enum: list[Any] | None = None
    pattern: re.Pattern[str] | None = None
    pattern_text: str = ""
    format: str = ""
    nullable: bool = False
    default: Any = None
    has_default: bool = False
    preserve_unknown: bool = False
    int_or_string: bool = False
    embedded: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    multiple_of: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_properties: int | None = None
    max_properties: int | None = None
    list_type: str = ""
    list_keys: tuple[str, ...] = ()
    any_of_types: tuple[str, ...] = ()  # the `type` of each anyOf branch (int-or-string: integer, string)
    rules: list[dict[str, Any]] = field(default_factory=list)
    # Any x-kubernetes-validations below this node: the validator only collects where needed.
    has_rules_below: bool = False


def _go_regex(pattern: str) -> re.Pattern[str]:
    """ECMA/RE2 patterns as Python reads them; RE2 has no look-around, so the common subset agrees."""
    return re.compile(pattern)


def compile_schema(raw: dict[str, Any]) -> Schema:
    s = Schema()
    t = raw.get("type")
    s.type = t if isinstance(t, str) else ""
    for name, sub in (raw.get("properties") or {}).items():
        s.properties[name] = compile_schema(sub)
    additional = raw.get("additionalProperties")
    if isinstance(additional, dict):
        s.additional = compile_schema(additional)
    if isinstance(raw.get("items"), dict):
        s.items = compile_schema(raw["items"])
    s.required = tuple(raw.get("required") or ())
    s.enum = raw.get("enum")
    if isinstance(raw.get("pattern"), str):
        s.pattern_text = raw["pattern"]
        s.pattern = _go_regex(raw["pattern"])
    s.format = str(raw.get("format") or "")
    s.nullable = bool(raw.get("nullable"))
    if "default" in raw:
        s.default, s.has_default = raw["default"], True
    s.preserve_unknown = bool(raw.get("x-kubernetes-preserve-unknown-fields"))
    s.int_or_string = bool(raw.get("x-kubernetes-int-or-string"))
    s.embedded = bool(raw.get("x-kubernetes-embedded-resource"))
    s.minimum, s.maximum = raw.get("minimum"), raw.get("maximum")
    s.exclusive_minimum, s.exclusive_maximum = bool(raw.get("exclusiveMinimum")), bool(raw.get("exclusiveMaximum"))
    s.multiple_of = raw.get("multipleOf")
    s.min_length, s.max_length = raw.get("minLength"), raw.get("maxLength")
    s.min_items, s.max_items = raw.get("minItems"), raw.get("maxItems")
    s.min_properties, s.max_properties = raw.get("minProperties"), raw.get("maxProperties")
    s.list_type = str(raw.get("x-kubernetes-list-type") or "")
    s.list_keys = tuple(raw.get("x-kubernetes-list-map-keys") or ())
    s.any_of_types = tuple(str(b.get("type") or "") for b in raw.get("anyOf") or [] if isinstance(b, dict))
    s.rules = [r for r in raw.get("x-kubernetes-validations") or [] if isinstance(r, dict) and isinstance(r.get("rule"), str)]
    children = list(s.properties.values()) + [c for c in (s.additional, s.items) if c is not None]
    s.has_rules_below = bool(s.rules) or any(c.has_rules_below for c in children)
    return s


# ---- step 1: decoding (unknown fields, nulls, defaults) -----------------------------------------

_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


def decode(obj: dict[str, Any], root: Schema) -> list[FieldPath]:
    """Prune and default `obj` in place as the API server decodes a custom resource; returns the
    unknown fields' paths (sorted as printed), which strict decoding reports and Warn/Ignore drop."""
    unknown: list[Path] = []
    for key in list(obj):
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            meta = obj[key]
            if isinstance(meta, dict):
                unknown += [("metadata", k) for k in meta if k not in _META_FIELDS]
                for k in [k for k in meta if k not in _META_FIELDS]:
                    del meta[k]
            continue
        sub = root.properties.get(key)
        if sub is None:
            if not root.preserve_unknown:
                unknown.append((key,))
                del obj[key]
            continue
        value = obj[key]
        if value is None and not sub.nullable:
            if sub.has_default:
                obj[key] = copy.deepcopy(sub.default)
                _walk(obj[key], sub, (key,), unknown)
            else:
                del obj[key]
            continue
        _walk(value, sub, (key,), unknown)
    _apply_defaults(obj, root, unknown, ())
    return sorted((FieldPath(p) for p in unknown), key=str)


def _walk(value: Any, s: Schema, path: Path, unknown: list[Path]) -> None:
    if type(value) is dict:
        if s.properties or s.additional is not None or not s.preserve_unknown:
            props, additional = s.properties, s.additional
            for key in list(value):
                sub = props.get(key)
                if sub is None:
                    sub = additional
                if sub is None:
                    if s.preserve_unknown or (s.embedded and key in ("apiVersion", "kind", "metadata")):
                        continue
                    unknown.append(path + (key,))
                    del value[key]
                    continue
                child = value[key]
                if child is None and not sub.nullable:
                    if sub.has_default:
                        value[key] = copy.deepcopy(sub.default)
                        _walk(value[key], sub, path + (key,), unknown)
                    else:  # a property or a map entry alike
                        del value[key]
                    continue
                if type(child) is dict or type(child) is list:
                    _walk(child, sub, path + (key,), unknown)
            _apply_defaults(value, s, unknown, path)
    elif type(value) is list and s.items is not None:
        items = s.items
        for i, child in enumerate(value):
            if type(child) is dict or type(child) is list:
                _walk(child, items, path + (i,), unknown)


def _apply_defaults(value: dict[str, Any], s: Schema, unknown: list[Path], path: Path) -> None:
    for key, sub in s.properties.items():
        if sub.has_default and key not in value:
            value[key] = copy.deepcopy(sub.default)
            if type(value[key]) is dict or type(value[key]) is list:
                _walk(value[key], sub, path + (key,), unknown)


# ---- step 2: validation --------------------------------------------------------------------------


@dataclass(slots=True)
class RuleSite:
    """A node with x-kubernetes-validations, its value, and the old value when it correlates."""

    schema: Schema
    parts: Path
    value: Any
    old: Any
    has_old: bool
    keys: frozenset[int]  # positions in `parts` that are map keys (rendered `[key]` by CEL errors)


class Validator:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.sites: list[RuleSite] = []

    # Each check appends kube-openapi's error, converted as the API server converts it.
    def _invalid(self, parts: Path, value: Any, text: str) -> None:
        self.errors.append(invalid(FieldPath(parts), value, text, origin=SCHEMA))

    def run(self, obj: dict[str, Any], root: Schema, old: dict[str, Any] | None) -> None:
        for key, sub in root.properties.items():
            if key == "metadata" or key not in obj:
                if key in root.required and key not in obj:
                    self.errors.append(required(FieldPath.of(key), origin=SCHEMA))
                continue
            has_old = old is not None and key in old
            self.value(obj[key], sub, (key,), old[key] if has_old and old is not None else None, has_old, frozenset())
        if root.rules:
            self.sites.append(RuleSite(root, (), obj, old, old is not None, frozenset()))

    def value(self, v: Any, s: Schema, parts: Path, old: Any, has_old: bool, keys: frozenset[int]) -> None:
        if s.rules:
            self.sites.append(RuleSite(s, parts, v, old, has_old, keys))
        if v is None:
            if not s.nullable and s.type:
                where = render(parts)
                self.errors.append(type_invalid(FieldPath(parts), "null", f'{where} in body must be of type {s.type}: "null"', origin=SCHEMA))
            return
        kind = json_type(v)
        if s.int_or_string:
            if kind not in ("integer", "string"):
                self._type_error(parts, "integer,string", kind)
                if s.any_of_types:  # kube-openapi also reports the anyOf, and its first branch's own error
                    where = render(parts)
                    self.errors.append(invalid(FieldPath(), "", f'"{where}" must validate at least one schema (anyOf)', origin=SCHEMA))
                    if s.any_of_types[0]:
                        self._type_error(parts, s.any_of_types[0], kind)
                return
        elif s.type and kind != s.type:
            if not (s.type == "number" and kind == "integer") and not (s.type == "integer" and kind == "number" and float(v).is_integer()):
                self._type_error(parts, s.type, kind)
                return
        if s.enum is not None and v not in s.enum:
            supported = [x if isinstance(x, str) else _json(x) for x in s.enum]
            self.errors.append(not_supported(FieldPath(parts), v, supported, origin=SCHEMA))
        if kind == "string":
            self._string(v, s, parts)
        elif kind in ("integer", "number"):
            self._number(v, s, parts)
        elif kind == "array":
            self._array(v, s, parts, old, has_old, keys)
        elif kind == "object":
            self._object(v, s, parts, old, has_old, keys)

    def _type_error(self, parts: Path, wanted: str, got: str) -> None:
        where = render(parts)
        self.errors.append(type_invalid(FieldPath(parts), got, f'{where} in body must be of type {wanted}: "{got}"', origin=SCHEMA))

    def _string(self, v: str, s: Schema, parts: Path) -> None:
        if s.max_length is not None and len(v) > s.max_length:
            self.errors.append(too_long(FieldPath(parts), s.max_length, origin=SCHEMA))
        if s.min_length is not None and len(v) < s.min_length:
            self._invalid(parts, v, f"{render(parts)} in body should be at least {s.min_length} chars long")
        if s.pattern is not None and not s.pattern.search(v):
            self._invalid(parts, v, f"{render(parts)} in body should match '{s.pattern_text}'")
        if s.format and not _format_ok(s.format, v):
            where = render(parts)
            self.errors.append(type_invalid(FieldPath(parts), v, f'{where} in body must be of type {s.format}: "{v}"', origin=SCHEMA))

    def _number(self, v: float, s: Schema, parts: Path) -> None:
        if s.maximum is not None:
            if s.exclusive_maximum and v >= s.maximum:
                self._invalid(parts, v, f"{render(parts)} in body should be less than {plain_number(s.maximum)}")
            elif v > s.maximum:
                self._invalid(parts, v, f"{render(parts)} in body should be less than or equal to {plain_number(s.maximum)}")
        if s.minimum is not None:
            if s.exclusive_minimum and v <= s.minimum:
                self._invalid(parts, v, f"{render(parts)} in body should be greater than {plain_number(s.minimum)}")
            elif v < s.minimum:
                self._invalid(parts, v, f"{render(parts)} in body should be greater than or equal to {plain_number(s.minimum)}")
        if s.multiple_of and (v / s.multiple_of) % 1 != 0:
            self._invalid(parts, v, f"{render(parts)} in body should be a multiple of {plain_number(s.multiple_of)}")

    def _array(self, v: list[Any], s: Schema, parts: Path, old: Any, has_old: bool, keys: frozenset[int]) -> None:
        if s.max_items is not None and len(v) > s.max_items:
            self.errors.append(too_many(FieldPath(parts), len(v), s.max_items, origin=SCHEMA))
        if s.min_items is not None and len(v) < s.min_items:
            self._invalid(parts, len(v), f"{render(parts)} in body should have at least {s.min_items} items")
        if s.items is None:
            return
        olds = _correlate_list(s, old) if has_old else None
        for i, item in enumerate(v):
            matched = olds.get(_map_key(s, item)) if olds is not None else None
            self.value(item, s.items, parts + (i,), matched, matched is not None, keys)
        self._list_semantics(v, s, parts, keys)

    def _list_semantics(self, v: list[Any], s: Schema, parts: Path, keys: frozenset[int]) -> None:
        """structurallisttype.ValidateListSetsAndMaps: duplicates in a set or a map-list."""
        if s.list_type == "set":
            seen: list[Any] = []
            for i, item in enumerate(v):
                if item in seen:
                    self.errors.append(duplicate(field_path(parts + (i,), keys), item, origin=SCHEMA))
                else:
                    seen.append(item)
        elif s.list_type == "map" and s.list_keys:
            found: set[str] = set()
            for i, item in enumerate(v):
                if not isinstance(item, dict):
                    where = parts + (i,)
                    self.errors.append(invalid(field_path(where, keys), item, "must be an object for an array of list-type map", origin=SCHEMA))
                    continue
                key = _json({k: item.get(k) for k in s.list_keys if k in item})
                if key in found:
                    dup = {k: item[k] for k in s.list_keys if k in item}
                    self.errors.append(duplicate(field_path(parts + (i,), keys), dup, origin=SCHEMA))
                found.add(key)

    def _object(self, v: dict[str, Any], s: Schema, parts: Path, old: Any, has_old: bool, keys: frozenset[int]) -> None:
        if s.max_properties is not None and len(v) > s.max_properties:
            self.errors.append(too_many(FieldPath(parts), len(v), s.max_properties, origin=SCHEMA))
        if s.min_properties is not None and len(v) < s.min_properties:
            self._invalid(parts, len(v), f"{render(parts)} in body should have at least {s.min_properties} properties")
        for name in s.required:
            if name not in v:
                child = parts + (name,)
                self.errors.append(required(FieldPath(child), origin=SCHEMA))
        old_map = old if has_old and isinstance(old, dict) else None
        props = s.properties
        for key, child in v.items():
            sub = props.get(key)
            map_entry = sub is None
            if sub is None:
                sub = s.additional
                if sub is None:
                    continue
            child_old = old_map.get(key) if old_map is not None else None
            child_has_old = old_map is not None and key in old_map
            child_keys = keys | {len(parts)} if map_entry else keys
            self.value(child, sub, parts + (key,), child_old, child_has_old, child_keys)


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _map_key(s: Schema, item: Any) -> str | None:
    if s.list_type != "map" or not s.list_keys or not isinstance(item, dict):
        return None
    return _json({k: item.get(k) for k in s.list_keys})


def _correlate_list(s: Schema, old: Any) -> dict[str | None, Any] | None:
    """Old items by map key: only `x-kubernetes-list-type: map` lists correlate (transition rules)."""
    if s.list_type != "map" or not s.list_keys or not isinstance(old, list):
        return None
    out: dict[str | None, Any] = {}
    for item in old:
        key = _map_key(s, item)
        if key is not None:
            out[key] = item
    return out
