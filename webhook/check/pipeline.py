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

from dataclasses import dataclass, field
from typing import Any, Literal

from ..admission.decision import Decision, RuleNote
from ..admission.fields import BUILTIN, CEL, FieldError, FieldPath, invalid, invalid_message
from ..admission.gofmt import go_text, go_type
from ..admission.outcome import status_of
from ..admission.review import Request, make_request
from ..podvalidation.options import PodOptions, options_for
from ..policies import REGISTRY, Context, engine
from . import builtin, celrules, hpa, structural, workloads
from .apierrors import no_match_message, strict_decoding_message
from .catalog import Catalog, CrdVersion
from .loading import Document

FieldValidation = Literal["Strict", "Warn", "Ignore"]
Verdict = Literal["allowed", "denied", "skipped"]
Severity = Literal["error", "warning", "audit"]  # audit: a rule set to `audit`, reported, never failing


@dataclass(slots=True)
class Finding:
    """One thing a step found: a field error, or the text of a finding that is not one (a refusal,
    a decoding note, an unknown field), with the path and type it is about when it has them."""

    rule: str  # one of ours, or `schema`, `cel`, `decode`, `validation`
    severity: Severity
    error: FieldError | None = None
    text: str = ""  # a finding that is not a field error: its message
    where: str | None = None  # ... the path it is about
    reason: str | None = None  # ... its type (BadRequest, Forbidden, FieldValueUnknown, ...)
    line: int = 0
    column: int = 0
    pod: str | None = None  # a previewed pod's name, for findings about the pods a workload makes

    @property
    def message(self) -> str:
        """The finding as the API server shows it, without the path."""
        return self.error.body() if self.error is not None else self.text

    @property
    def field(self) -> str | None:
        return self.error.field if self.error is not None else self.where

    @property
    def type(self) -> str | None:
        """apimachinery's reason (FieldValueInvalid, ...)."""
        return self.error.kind if self.error is not None else self.reason


@dataclass(slots=True)
class DocumentResult:
    """What the write of one document would come to: the verdict, where it stopped, and every finding."""

    doc: Document
    operation: str
    status: Verdict = "allowed"
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

    def run(self, doc: Document, old: dict[str, Any] | None) -> DocumentResult:
        result = DocumentResult(doc, "UPDATE" if old is not None else "CREATE")
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
        return self._webhook(result, engine.deep_copy(obj), old)

    # ---- the paths ---------------------------------------------------------------------------

    def _custom(self, result: DocumentResult, crd: CrdVersion, old: dict[str, Any] | None) -> DocumentResult:
        obj = engine.deep_copy(result.obj)
        unknown = structural.decode(obj, crd.schema)
        if unknown and not self._unknown_fields(result, crd.kind, crd.version, unknown):
            return result
        old_obj = None
        if old is not None:
            old_obj = engine.deep_copy(old)
            structural.decode(old_obj, crd.schema)
        edited = self._mutate(result, obj, old_obj)
        if result.status == "denied":
            return result
        validator = structural.Validator()
        validator.run(edited, crd.schema, old_obj)
        errors = list(validator.errors)
        errors += builtin.validate_name(edited)
        errors += _scale_errors(edited, crd.scale_replicas_path)
        cel_errors: list[FieldError] = []
        if any(e.kind in celrules.BLOCKING for e in errors):
            if crd.schema.has_rules_below:  # the CRD has rules at all, even where the object has nothing
                cel_errors.append(celrules.SKIPPED)
        else:
            cel_errors, notes = celrules.evaluate(validator.sites, old_obj is not None)
            for note in notes:
                self._note(result, "cel", note, ())
        errors += cel_errors
        if errors:
            return self._invalid(result, crd.kind, crd.group, errors)
        return self._validate(result, edited, old_obj)

    def _builtin(self, result: DocumentResult, group: str, version: str, kind: str, old: dict[str, Any] | None) -> DocumentResult:
        obj = engine.deep_copy(result.obj)
        decoded = builtin.decode(self.builtins, obj, group, version, kind)
        assert decoded is not None
        if decoded.type_error is not None:
            message = f'{kind} in version "{version}" cannot be handled as a {kind}: {decoded.type_error}'
            self._text(result, "decode", "error", decoded.type_error, "BadRequest")
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
        edited = self._mutate(result, obj, old)
        if result.status == "denied":
            return result
        errors = builtin.validate_name(edited)
        required = decoded.required
        if is_hpa:
            required = [e for e in required if e.path.parts[:2] not in builtin.HPA_SCHEMA_REQUIRED_REPLACED]
            errors += hpa.validate_hpa(edited)
        errors += required
        dropped: list[str] = []
        if kind == "Pod":
            errors += workloads.validate_pod(edited, self._pod_options(), dropped)
        elif workloads.has_template(group, kind):
            errors += workloads.validate_workload(edited, group, kind, self._pod_options(), dropped)
        for text in dropped:
            self._text(result, "podvalidation", "warning", text, None)
        errors = list({(e.field, e.body()): e for e in errors}.values())  # schema and code may name the same field
        if errors:
            return self._invalid(result, kind, group, errors)
        return self._validate(result, edited, old)

    def _webhook(self, result: DocumentResult, obj: dict[str, Any], old: dict[str, Any] | None) -> DocumentResult:
        group, kind = str(obj.get("apiVersion") or "").rpartition("/")[0], str(obj.get("kind") or "")
        if workloads.has_template(group, kind):  # a CloneSet without its CRD: OpenKruise's webhook judges its template
            dropped: list[str] = []
            errors = workloads.validate_workload(obj, group, kind, self._pod_options(), dropped)
            for text in dropped:
                self._text(result, "podvalidation", "warning", text, None)
            if errors:
                return self._invalid(result, kind, group, errors)
        edited = self._mutate(result, obj, old)
        return self._validate(result, edited, old)

    def _pod_options(self) -> PodOptions:
        """The Pod validation of the minor this check judges by."""
        return options_for(self.ctx.kubernetes_version, self.ctx.feature_gates)

    # ---- the steps ---------------------------------------------------------------------------

    def _unknown_fields(self, result: DocumentResult, kind: str, version: str, unknown: list[FieldPath]) -> bool:
        """Strict: refuse (False). Warn: the API server's warnings, fields dropped. Ignore: dropped."""
        if self.field_validation == "Ignore":
            return True
        problems = [f'unknown field "{path}"' for path in unknown]
        severity: Literal["error", "warning"] = "error" if self.field_validation == "Strict" else "warning"
        for path, text in zip(unknown, problems):
            line, column = result.doc.position(path.parts)
            result.findings.append(Finding("schema", severity, text=text, where=str(path), reason="FieldValueUnknown", line=line, column=column))
        if severity == "warning":
            return True
        self._refuse(result, 400, "decode", strict_decoding_message(kind, version, problems))
        return False

    def _mutate(self, result: DocumentResult, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        req = make_request(obj, operation=result.operation, old=old)
        decision = engine.mutate(req, self.ctx, REGISTRY)
        result.rules += list(decision.rules)
        result.patch = decision.patch
        self._decision_findings(result, decision)
        self._refuse_for(result, req, decision)
        return decision.edited if decision.edited is not None else obj

    def _validate(self, result: DocumentResult, obj: dict[str, Any], old: dict[str, Any] | None) -> DocumentResult:
        if result.status == "denied":
            return result  # a mutating webhook refused: the API server stops there
        result.final = obj
        req = make_request(obj, operation=result.operation, old=old)
        decision = engine.validate(req, self.ctx, REGISTRY)
        result.rules += list(decision.rules)
        self._decision_findings(result, decision)
        if not decision.allowed:
            self._refuse_for(result, req, decision)
        elif not result.rules and not result.schema:
            result.status = "skipped"
        return result

    def _invalid(self, result: DocumentResult, kind: str, group: str, errors: list[FieldError]) -> DocumentResult:
        for e in errors:
            self._error(result, "cel" if e.origin == CEL else "schema", "error", e)
        name = str((result.obj.get("metadata") or {}).get("name") or "")
        return self._refuse(result, 422, "validation", invalid_message(kind, group, name, errors))

    def _no_match(self, result: DocumentResult, kind: str, api_version: str) -> DocumentResult:
        message = no_match_message(kind, api_version)
        line, column = result.doc.position(("apiVersion",))
        result.findings.append(Finding("schema", "error", text=message, where="apiVersion", reason="NotFound", line=line, column=column))
        return self._refuse(result, 404, "mapping", message)

    def _refuse(self, result: DocumentResult, code: int, reason: str, message: str | None) -> DocumentResult:
        if result.status != "denied":
            result.status, result.code, result.reason, result.message = "denied", code, reason, message
        return result

    def _refuse_for(self, result: DocumentResult, req: Request, decision: Decision) -> None:
        """A webhook refusal, with the message the review response would carry."""
        status = status_of(req, decision)
        if status is not None:
            self._refuse(result, status.code, "webhook", status.message)

    def _error(self, result: DocumentResult, rule: str, severity: Severity, error: FieldError) -> None:
        line, column = result.doc.position(error.path.parts)
        result.findings.append(Finding(rule, severity, error, line=line, column=column))

    def _text(self, result: DocumentResult, rule: str, severity: Severity, text: str, reason: str | None) -> None:
        result.findings.append(Finding(rule, severity, text=text, reason=reason, line=result.doc.line, column=result.doc.column))

    def _note(self, result: DocumentResult, rule: str, text: str, parts: tuple[str | int, ...]) -> None:
        line, column = result.doc.position(parts)
        result.findings.append(Finding(rule, "warning", text=text, where=structural.render(parts) or None, line=line, column=column))

    def _decision_findings(self, result: DocumentResult, d: Decision) -> None:
        for e in d.errors:
            self._error(result, e.rule, "error", e.error)
        if d.refusal is not None:
            self._text(result, d.refusal.rule, "error", d.refusal.text, "Forbidden")
        if d.crash is not None:
            self._text(result, d.crash.rule, "error", "the rule raised an exception", "InternalError")
        result.changes += [(n.rule, n.text) for n in d.changes]
        seen = {(f.rule, f.message) for f in result.findings if f.severity == "warning"}
        softened: list[tuple[Literal["warning", "audit"], list[RuleNote]]] = [("warning", d.warnings), ("audit", d.audit)]
        for severity, notes in softened:
            for w in notes:
                if w.error is not None:  # a rule's field error, softened by its action: keep its place
                    self._error(result, w.rule, severity, w.error)
                elif (w.rule, w.text) not in seen:
                    seen.add((w.rule, w.text))
                    self._text(result, w.rule, severity, w.text, None)


def _delete(obj: dict[str, Any], path: FieldPath) -> None:
    parts = path.parts
    node: Any = obj
    for part in parts[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def _scale_errors(obj: dict[str, Any], replicas_path: str) -> list[FieldError]:
    """The scale subresource's specReplicasPath must hold a non-negative int32: customresource
    validation checks it on every write of the main resource, naming the path as the CRD spells
    it (`.spec.replicas`: a leading empty name renders the leading dot)."""
    if not replicas_path:
        return []
    parts = tuple(p for p in replicas_path.split(".") if p)
    where = FieldPath(("",) + parts if replicas_path.startswith(".") else parts)
    node: Any = obj
    for part in parts:
        if node is not None and not isinstance(node, dict):  # unstructured's accessor: a non-map on the way
            detail = f"{replicas_path} accessor error: {go_text(node)} is of the type {go_type(node)}, expected map[string]interface{{}}"
            return [invalid(where, 0, detail, origin=BUILTIN)]
        if not isinstance(node, dict) or part not in node:
            return []
        node = node[part]
    if node is None:
        return []
    if isinstance(node, bool) or not isinstance(node, int):
        detail = f"{replicas_path} accessor error: {go_text(node)} is of the type {go_type(node)}, expected int64"
        return [invalid(where, 0, detail, origin=BUILTIN)]
    if node < 0:
        return [invalid(where, node, "should be a non-negative integer", origin=BUILTIN)]
    if node > 2**31 - 1:
        return [invalid(where, node, "should be less than or equal to 2147483647", origin=BUILTIN)]
    return []
