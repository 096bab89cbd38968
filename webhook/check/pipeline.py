"""One object through the API server's write path, offline, in its order (reference: what
kube-apiserver 1.28 does to a write):

1. **find the kind** (kubectl's RESTMapper): an unknown version in a group we know is
   `no matches for kind`;
2. **decode**: strict decoding refuses unknown fields (400) unless `--field-validation` is Warn
   or Ignore, which drop them; a built-in kind with a value of the wrong type cannot be decoded;
3. **defaults**: the CRD's `default:` values (and, for built-in kinds, the defaults our rules
   read), so every later step sees `spec.replicas: 1` on a ModelServing that left it out;
4. **mutating admission**: our mutating rules, on the defaulted object;
5. **validation**: the schema, then the CEL rules (skipped when the schema found a blocking
   error), object names, the scale subresource's replicas; built-in kinds get the checks written
   in `builtin.py`. Any error here is the API server's 422 and no webhook is asked;
6. **validating admission**: our validating rules, on the final object.

The first step that refuses decides the verdict; the findings of earlier steps stay (warnings).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from ..admission.decision import Decision, RuleNote
from ..admission.fields import FieldError
from ..admission.responses import review_response
from ..admission.review import make_request
from ..policies import REGISTRY, Context
from ..policies import engine
from . import builtin, celrules, structural
from .apierrors import ApiError, go_float, invalid_message, no_match_message, strict_decoding_message
from .catalog import Catalog, CrdVersion
from .loading import Document

FieldValidation = Literal["Strict", "Warn", "Ignore"]
Status = Literal["allowed", "denied", "skipped"]


@dataclass(slots=True)
class Finding:
    rule: str  # one of ours, or `schema`, `cel`, `decode`, `validation`
    severity: Literal["error", "warning", "audit"]  # audit: a rule set to `audit`, reported, never failing
    message: str  # the error as the API server shows it, without the path
    field: str | None = None
    type: str | None = None  # apimachinery's reason (FieldValueInvalid, ...)
    line: int = 0
    column: int = 0
    pod: str | None = None  # a previewed pod's name, for findings about the pods a workload makes


@dataclass(slots=True)
class Result:
    doc: Document
    operation: str
    status: Status = "allowed"
    code: int = 200
    reason: str = ""  # where it stopped: decode, validation, webhook, mapping
    message: str | None = None
    findings: list[Finding] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    patch: list[dict[str, Any]] = field(default_factory=list)
    schema: str = ""  # what the object was validated against: crd, builtin, or "" (none)
    pods: list[dict[str, Any]] = field(default_factory=list)
    changes: list[tuple[str, str]] = field(default_factory=list)  # (rule, what a mutating rule changed)
    final: dict[str, Any] | None = field(default=None, repr=False)  # the object as the webhook saw it

    @property
    def obj(self) -> dict[str, Any]:
        return self.doc.obj

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def audits(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "audit"]


@dataclass(slots=True)
class Pipeline:
    catalog: Catalog
    builtins: builtin.Builtins
    ctx: Context
    field_validation: FieldValidation = "Strict"

    def run(self, doc: Document, old: dict[str, Any] | None) -> Result:
        result = Result(doc, "UPDATE" if old is not None else "CREATE")
        for parts, note in doc.notes:
            self._note(result, "decode", note, parts)
        obj = doc.obj
        group, _, version = str(obj["apiVersion"]).rpartition("/")
        kind = str(obj["kind"])
        crd = self.catalog.lookup(group, kind, version)
        if crd is not None:
            result.schema = "crd"
            return self._custom(result, crd, old)
        if self.catalog.serves_group(group) and (group, kind) in self.catalog.kinds:
            return self._no_match(result, kind, str(obj["apiVersion"]))
        if builtin.is_builtin_group(group):
            if self.builtins.serves(group, version, kind):
                result.schema = "builtin"
                return self._builtin(result, group, version, kind, old)
            return self._no_match(result, kind, str(obj["apiVersion"]))
        return self._webhook(result, _copy(obj), old)

    # ---- the paths ---------------------------------------------------------------------------

    def _custom(self, result: Result, crd: CrdVersion, old: dict[str, Any] | None) -> Result:
        obj = _copy(result.obj)
        unknown = structural.decode(obj, crd.schema)
        if unknown and not self._unknown_fields(result, crd.kind, crd.version, unknown):
            return result
        old_obj = None
        if old is not None:
            old_obj = _copy(old)
            structural.decode(old_obj, crd.schema)
        edited = self._mutate(result, obj, old_obj)
        if result.status == "denied":
            return result
        validator = structural.Validator()
        validator.run(edited, crd.schema, old_obj)
        errors = list(validator.errors)
        errors += builtin.validate_name(edited)
        errors += _scale_errors(edited, crd.scale_replicas_path)
        cel_errors: list[ApiError] = []
        if any(e.kind in celrules.BLOCKING for e in errors):
            if crd.schema.has_rules_below:  # the CRD has rules at all, even where the object has nothing
                cel_errors.append(celrules.SKIPPED)
        else:
            cel_errors, notes = celrules.evaluate(validator.sites, old_obj is not None)
            for note in notes:
                self._note(result, "cel", note, ())
        errors += cel_errors
        if errors:
            return self._invalid(result, crd.kind, crd.group, errors, cel={id(e) for e in cel_errors})
        return self._validate(result, edited, old_obj)

    def _builtin(self, result: Result, group: str, version: str, kind: str, old: dict[str, Any] | None) -> Result:
        obj = _copy(result.obj)
        decoded = builtin.decode(self.builtins, obj, group, version, kind)
        assert decoded is not None
        if decoded.type_error is not None:
            message = f'{kind} in version "{version}" cannot be handled as a {kind}: {decoded.type_error}'
            result.findings.append(Finding("decode", "error", decoded.type_error, None, "BadRequest", result.doc.line, result.doc.column))
            return self._refuse(result, 400, "decode", message)
        if decoded.unknown:
            if not self._unknown_fields(result, kind, version, decoded.unknown):
                return result
            for path in decoded.unknown:
                _delete(obj, path)
        is_hpa = kind == "HorizontalPodAutoscaler"
        if is_hpa:
            builtin.default_hpa(obj)
        if kind == "Pod":
            builtin.default_pod_spec(obj.get("spec"))
            errors_pod = builtin.validate_pod(obj)
        else:
            errors_pod = []
        edited = self._mutate(result, obj, old)
        if result.status == "denied":
            return result
        errors = builtin.validate_name(edited)
        required = decoded.required
        if is_hpa:
            required = [e for e in required if not e.field.startswith(builtin.HPA_SCHEMA_REQUIRED_REPLACED)]
            errors += builtin.validate_hpa(edited)
        errors += required + errors_pod
        errors = list({(e.field, e.body()): e for e in errors}.values())  # schema and code may name the same field
        if errors:
            return self._invalid(result, kind, group, errors, cel=set())
        return self._validate(result, edited, old)

    def _webhook(self, result: Result, obj: dict[str, Any], old: dict[str, Any] | None) -> Result:
        edited = self._mutate(result, obj, old)
        return self._validate(result, edited, old)

    # ---- the steps ---------------------------------------------------------------------------

    def _unknown_fields(self, result: Result, kind: str, version: str, unknown: list[str]) -> bool:
        """Strict: refuse (False). Warn: the API server's warnings, fields dropped. Ignore: dropped."""
        if self.field_validation == "Ignore":
            return True
        problems = [f'unknown field "{path}"' for path in unknown]
        severity: Literal["error", "warning"] = "error" if self.field_validation == "Strict" else "warning"
        for path, text in zip(unknown, problems):
            parts = _split(path)
            line, column = result.doc.position(parts)
            result.findings.append(Finding("schema", severity, text, path, "FieldValueUnknown", line, column))
        if severity == "warning":
            return True
        self._refuse(result, 400, "decode", strict_decoding_message(kind, version, problems))
        return False

    def _mutate(self, result: Result, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        req = make_request(obj, operation=result.operation, old=old)
        decision = engine.mutate(req, self.ctx, REGISTRY)
        result.rules += list(decision.rules)
        result.patch = decision.patch
        self._decision_findings(result, decision)
        if not decision.allowed:
            status = review_response(req, decision)["response"].get("status", {})
            self._refuse(result, decision.code, "webhook", status.get("message"))
        return decision.edited if decision.edited is not None else obj

    def _validate(self, result: Result, obj: dict[str, Any], old: dict[str, Any] | None) -> Result:
        if result.status == "denied":
            return result  # a mutating webhook refused: the API server stops there
        result.final = obj
        req = make_request(obj, operation=result.operation, old=old)
        decision = engine.validate(req, self.ctx, REGISTRY)
        result.rules += list(decision.rules)
        self._decision_findings(result, decision)
        if not decision.allowed:
            status = review_response(req, decision)["response"].get("status", {})
            self._refuse(result, decision.code, "webhook", status.get("message"))
        elif not result.rules and not result.schema:
            result.status = "skipped"
        return result

    def _invalid(self, result: Result, kind: str, group: str, errors: list[ApiError], cel: set[int]) -> Result:
        for e in errors:
            rule = "cel" if id(e) in cel else "schema"
            line, column = result.doc.position(e.parts)
            result.findings.append(Finding(rule, "error", e.body(), e.field or "<nil>", e.kind, line, column))
        name = str((result.obj.get("metadata") or {}).get("name") or "")
        return self._refuse(result, 422, "validation", invalid_message(kind, group, name, errors))

    def _no_match(self, result: Result, kind: str, api_version: str) -> Result:
        message = no_match_message(kind, api_version)
        line, column = result.doc.position(("apiVersion",))
        result.findings.append(Finding("schema", "error", message, "apiVersion", "NotFound", line, column))
        return self._refuse(result, 404, "mapping", message)

    def _refuse(self, result: Result, code: int, reason: str, message: str | None) -> Result:
        if result.status != "denied":
            result.status, result.code, result.reason, result.message = "denied", code, reason, message
        return result

    def _note(self, result: Result, rule: str, text: str, parts: tuple[str | int, ...]) -> None:
        line, column = result.doc.position(parts)
        result.findings.append(Finding(rule, "warning", text, structural.render(parts) or None, None, line, column))

    def _decision_findings(self, result: Result, d: Decision) -> None:
        for e in d.errors:
            line, column = result.doc.position(_field_parts(e.error))
            result.findings.append(Finding(e.rule, "error", e.error.body(), e.error.field, e.error.kind, line, column))
        if d.refusal is not None:
            result.findings.append(Finding(d.refusal.rule, "error", d.refusal.text, None, "Forbidden", result.doc.line, result.doc.column))
        if d.crash is not None:
            result.findings.append(Finding(d.crash.rule, "error", "the rule raised an exception", None, "InternalError", result.doc.line, result.doc.column))
        # Engines that separate routine changes from warnings (Decision.changes) report them apart.
        result.changes += [(n.rule, n.text) for n in getattr(d, "changes", [])]
        seen = {(f.rule, f.message) for f in result.findings if f.severity == "warning"}
        softened: list[tuple[Literal["warning", "audit"], list[RuleNote]]] = [("warning", d.warnings), ("audit", d.audit)]
        for severity, notes in softened:
            for w in notes:
                if w.error is not None:  # a rule's field error, softened by its action: keep its place
                    line, column = result.doc.position(_field_parts(w.error))
                    result.findings.append(Finding(w.rule, severity, w.error.body(), w.error.field, w.error.kind, line, column))
                elif (w.rule, w.text) not in seen:
                    seen.add((w.rule, w.text))
                    result.findings.append(Finding(w.rule, severity, w.text, None, None, result.doc.line, result.doc.column))


def _field_parts(error: FieldError) -> tuple[str | int, ...]:
    out: list[str | int] = []
    for part in error.path.parts:
        if part.startswith("[") and part.endswith("]"):
            inner = part[1:-1]
            out.append(int(inner) if inner.isdigit() else inner)
        else:
            out.append(part)
    return tuple(out)


def _split(path: str) -> tuple[str | int, ...]:
    out: list[str | int] = []
    for segment in path.split("."):
        name, _, rest = segment.partition("[")
        if name:
            out.append(name)
        while rest:
            index, _, rest = rest.partition("]")
            out.append(int(index) if index.isdigit() else index)
            rest = rest.lstrip("[")
    return tuple(out)


def _delete(obj: dict[str, Any], path: str) -> None:
    parts = _split(path)
    node: Any = obj
    for part in parts[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
        return copied
    except (orjson.JSONEncodeError, TypeError):
        return copy.deepcopy(obj)


_GO_TYPES = {str: "string", float: "float64", bool: "bool", int: "int64", dict: "map[string]interface {}", list: "[]interface {}"}


def _go_type(value: Any) -> str:
    return _GO_TYPES.get(type(value), "string")


def _go_text(value: Any) -> str:
    """%v of a decoded JSON value, as unstructured's accessor errors print it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, list):
        return "[" + " ".join(_go_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_text(v)}" for k, v in sorted(value.items())) + "]"
    return str(value)


def _scale_errors(obj: dict[str, Any], replicas_path: str) -> list[ApiError]:
    """The scale subresource's specReplicasPath must hold a non-negative int32: customresource
    validation checks it on every write of the main resource, naming the path as the CRD spells
    it (`.spec.replicas`)."""
    if not replicas_path:
        return []
    parts = tuple(p for p in replicas_path.split(".") if p)
    node: Any = obj
    for part in parts:
        if node is not None and not isinstance(node, dict):  # unstructured's accessor: a non-map on the way
            detail = f"{replicas_path} accessor error: {_go_text(node)} is of the type {_go_type(node)}, expected map[string]interface{{}}"
            return [ApiError("FieldValueInvalid", replicas_path, parts, detail, 0)]
        if not isinstance(node, dict) or part not in node:
            return []
        node = node[part]
    if node is None:
        return []
    if isinstance(node, bool) or not isinstance(node, int):
        detail = f"{replicas_path} accessor error: {_go_text(node)} is of the type {_go_type(node)}, expected int64"
        return [ApiError("FieldValueInvalid", replicas_path, parts, detail, 0)]
    if node < 0:
        return [ApiError("FieldValueInvalid", replicas_path, parts, "should be a non-negative integer", node)]
    if node > 2**31 - 1:
        return [ApiError("FieldValueInvalid", replicas_path, parts, "should be less than or equal to 2147483647", node)]
    return []
