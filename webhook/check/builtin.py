"""Built-in kinds (Pod, HPA autoscaling/v1 and v2, Deployment, ...): the API server's decoding with
the Kubernetes OpenAPI schemas that `kubernetes-validate` ships, one set per Kubernetes release.

Decoding a built-in kind is Go's JSON decoding into the versioned type, strict: a value of the
wrong type stops it with encoding/json's own message (`json: cannot unmarshal string into Go
struct field HorizontalPodAutoscalerSpec.spec.minReplicas of type int32`), unknown fields are
`strict decoding error: unknown field "spec.minReplica"`. The schemas carry field types, not
the validation code: object names are checked here, HPAs in `hpa.py`, Pods and the pod templates
of workloads in `workloads.py` (with the Pod validation port). What is not written is listed in
docs/policies.md.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .. import names
from ..admission.fields import BUILTIN, SCHEMA, FieldError, FieldPath, invalid, required

_LEGACY_GROUPS = frozenset({"", "apps", "autoscaling", "batch", "policy", "extensions"})
_GO_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def is_builtin_group(group: str) -> bool:
    return group in _LEGACY_GROUPS or group.endswith(".k8s.io")


def _file_key(group: str, version: str, kind: str) -> str:
    short = group.split(".", 1)[0]
    return f"{kind.lower()}-{short}-{version}" if group else f"{kind.lower()}-{version}"


@dataclass(slots=True)
class Builtins:
    """The schemas of one Kubernetes release (default 1.28, the release the reference verdicts come from)."""

    release: str = "1.28"
    _dir: Any = field(default=None, repr=False)
    _defs: dict[str, Any] | None = field(default=None, repr=False)
    _files: frozenset[str] = field(default=frozenset(), repr=False)

    def __post_init__(self) -> None:
        # kubernetes-validate's package data: kubernetes-json-schema/v<X.Y.Z>-local-strict/<kind>-<group>-<version>.json
        # Located without importing the package, whose __init__ loads jsonschema (slow, unused here).
        spec = importlib.util.find_spec("kubernetes_validate")
        if spec is None or not spec.submodule_search_locations:
            raise ValueError("kubernetes-validate is not installed")
        root = Path(list(spec.submodule_search_locations)[0]) / "kubernetes-json-schema"
        known = sorted(p.name for p in root.iterdir() if p.name.startswith(f"v{self.release}.") and p.name.endswith("-local-strict"))
        if not known:
            raise ValueError(f"kubernetes-validate has no schemas for Kubernetes {self.release}")
        self._dir = root / known[-1]
        self._files = frozenset(p.name[: -len(".json")] for p in self._dir.iterdir() if p.name.endswith(".json"))

    def serves(self, group: str, version: str, kind: str) -> bool:
        return _file_key(group, version, kind) in self._files

    def schema(self, group: str, version: str, kind: str) -> dict[str, Any] | None:
        key = _file_key(group, version, kind)
        if key not in self._files:
            return None
        loaded: dict[str, Any] = orjson.loads((self._dir / (key + ".json")).read_bytes())
        return loaded

    def definitions(self) -> dict[str, Any]:
        if self._defs is None:
            self._defs = orjson.loads((self._dir / "_definitions.json").read_bytes())["$defs"]
        assert self._defs is not None
        return self._defs


@dataclass(slots=True)
class Decoded:
    unknown: list[FieldPath] = field(default_factory=list)
    type_error: str | None = None
    required: list[FieldError] = field(default_factory=list)


class _Decoder:
    """Go's strict JSON decoding of one object into the type the schema describes."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.out = Decoded()

    def resolve(self, schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        ref = schema.get("$ref")
        if isinstance(ref, str) and "#/$defs/" in ref:
            name = ref.split("#/$defs/", 1)[1]
            return self.defs.get(name, {}), name
        return schema, None

    def go_type(self, schema: dict[str, Any]) -> str:
        resolved, name = self.resolve(schema)
        if name is not None:
            parts = name.split(".")
            return f"{parts[-2]}.{parts[-1]}"
        types = resolved.get("type")
        t = next((x for x in types if x != "null"), "") if isinstance(types, list) else str(types or "")
        if t == "integer":
            return str(resolved.get("format") or "int64")
        if t == "number":
            return "float64"
        if t == "boolean":
            return "bool"
        if t == "array":
            return "[]" + self.go_type(resolved.get("items") or {})
        if t == "object" and isinstance(resolved.get("additionalProperties"), dict):
            return "map[string]" + self.go_type(resolved["additionalProperties"])
        return t or "interface {}"

    def walk(self, value: Any, schema: dict[str, Any], parts: tuple[str | int, ...], struct: str) -> None:
        """`struct` is the Go struct that holds this field: encoding/json names it in a type error,
        with the field's path without list indices (`PodSpec.spec.containers`)."""
        if self.out.type_error is not None:
            return
        resolved, name = self.resolve(schema)
        if value is None:
            return
        if "oneOf" in resolved:
            allowed = {t for option in resolved["oneOf"] for t in _types(option)}
            if _json_type(value) not in allowed and not (_json_type(value) == "integer" and "number" in allowed):
                self._type_error(value, parts, struct, self.go_type(schema))
            return
        types = _types(resolved)
        kind = _json_type(value)
        if types and kind not in types and not (kind == "integer" and "number" in types):
            if not (kind == "number" and "integer" in types and float(value).is_integer()):
                self._type_error(value, parts, struct, self.go_type(schema))
                return
        inner = name.rsplit(".", 1)[-1] if name is not None else struct  # the struct this value is
        if kind == "object":
            props = resolved.get("properties") or {}
            additional = resolved.get("additionalProperties")
            for req in resolved.get("required") or []:
                if req not in value:
                    child = parts + (req,)
                    self.out.required.append(required(FieldPath(child), origin=SCHEMA))
            for key, child_value in value.items():
                if key in props:
                    self.walk(child_value, props[key], parts + (key,), inner)
                elif isinstance(additional, dict):
                    self.walk(child_value, additional, parts + (key,), struct)
                elif additional is False or props:
                    self.out.unknown.append(FieldPath(parts + (key,)))
        elif kind == "array" and isinstance(resolved.get("items"), dict):
            for i, item in enumerate(value):
                self.walk(item, resolved["items"], parts + (i,), struct)

    def _type_error(self, value: Any, parts: tuple[str | int, ...], struct: str, go_type: str) -> None:
        shown = _GO_JSON_TYPES.get(type(value), "object")
        if isinstance(value, float) and go_type.startswith(("int", "uint")):
            shown = f"number {value:g}"
        names = ".".join(p for p in parts if isinstance(p, str))
        self.out.type_error = f"json: cannot unmarshal {shown} into Go struct field {struct}.{names} of type {go_type}"


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, list):
        return {x for x in t if x != "null"}
    return {t} if isinstance(t, str) else set()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def decode(builtins: Builtins, obj: dict[str, Any], group: str, version: str, kind: str) -> Decoded | None:
    schema = builtins.schema(group, version, kind)
    if schema is None:
        return None
    decoder = _Decoder(builtins.definitions())
    decoder.walk(obj, schema, (), kind)
    decoder.out.unknown.sort(key=str)
    return decoder.out


# ---- validation written from the API server's code (pkg/apis/*/validation), 1.28 --------------


def validate_name(obj: dict[str, Any]) -> list[FieldError]:
    """ValidateObjectMeta's name check (NameIsDNSSubdomain), for custom resources and the built-in
    kinds we check alike."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return []
    where = FieldPath.of("metadata", "name")
    return [invalid(where, name, message, origin=BUILTIN) for message in names.is_dns1123_subdomain(name)]


HPA_SCHEMA_REQUIRED_REPLACED = (("spec", "maxReplicas"), ("spec", "scaleTargetRef"))  # hpa.validate_hpa words these itself


def default_hpa(obj: dict[str, Any]) -> None:
    """SetDefaults_HorizontalPodAutoscaler's minReplicas; a missing or null spec is Go's zero value."""
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    if isinstance(spec, dict) and spec.get("minReplicas") is None:
        spec["minReplicas"] = 1


def default_pod_spec(spec: Any) -> None:
    """The one Pod default our rules read: an unset schedulerName is `default-scheduler`."""
    if isinstance(spec, dict) and not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
