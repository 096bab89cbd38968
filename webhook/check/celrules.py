"""A CRD's `x-kubernetes-validations` CEL rules, evaluated as the API server does (1.28).

Rules run only on schema-valid parts: the API server skips every rule when the schema found a
blocking error (a type, required, maxLength, maxItems or maxProperties error; an enum error does
not block, as a 1.28 API server shows) and says so
with one `<nil>` error. A transition rule (one that reads `oldSelf`) runs only on an update, and
only where the old object has the same field (map entries by key, list items only in
`x-kubernetes-list-type: map` lists, by their keys).

Programs are compiled once per rule text with the cel-rust bindings (`common-expression-language`).
A rule that library cannot compile (a Kubernetes CEL extension it lacks) is not guessed at: it is
reported as a warning that the rule was not checked.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import re
import sys
from functools import lru_cache
from typing import Any, cast

from ..admission.fields import CEL, ErrorKind, FieldError, FieldPath, Key, invalid
from .structural import RuleSite, field_path

BLOCKING = frozenset({"FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"})
SKIPPED = invalid(
    FieldPath(), None, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation", origin=CEL
)

# x-kubernetes-validations `reason` -> error type (CRDValidationRules, 1.28); anything else is Invalid.
RULE_REASONS = frozenset({"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"})


def _load_cel() -> Any:
    """The compiled `cel.cel` extension. The package's __init__ also imports its interactive CLI
    (typer, rich, prompt_toolkit), which cost more than a whole `check` run; the extension alone
    is all we call, so it is loaded from its file when that can be found."""
    loaded = sys.modules.get("cel.cel")
    if loaded is not None:  # the extension initialises a Rust logger: it must load only once
        return loaded
    spec = importlib.util.find_spec("cel")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            location = f"{folder}/cel{suffix}"
            ext = importlib.util.spec_from_file_location("cel.cel", location)
            if ext is None or ext.loader is None:
                continue
            try:
                module = importlib.util.module_from_spec(ext)
                ext.loader.exec_module(module)
            except (ImportError, OSError):
                continue
            sys.modules["cel.cel"] = module  # `import cel` elsewhere reuses it instead of loading it twice
            return module
    return importlib.import_module("cel")


cel = _load_cel()


class Uncompilable(Exception):
    pass


@lru_cache(maxsize=512)
def program(rule: str) -> Any:
    try:
        return cel.compile(rule)
    except (ValueError, RuntimeError) as exc:
        raise Uncompilable(" ".join(str(exc).split())) from None


def is_transition(rule: str) -> bool:
    return "oldSelf" in rule


_MACRO = re.compile(r"\.\s*(all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_MEMBER = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_IDENT = re.compile(r"(?<![.\w])([A-Za-z_][A-Za-z0-9_]*)(?!\w)")


@lru_cache(maxsize=512)
def projection(rule: str) -> frozenset[str] | None:
    """The member names a rule can read, when the rule can observe `self` (and `oldSelf`) only
    through them, else None. Converting a value to CEL costs in proportion to its size, and a
    rule on `roles` reads only each role's `name`: handing it roles cut down to those members
    made the CEL part of a 500-ModelServing run negligible (benchmarks/HISTORY.md). Safe only when every use of
    `self`, `oldSelf` and each macro variable is followed by `.` (a member or a macro call), so
    no whole value is compared, sized or indexed; a macro directly on `self` must iterate a list
    (a map would iterate its keys, which a projection would drop), which `project` checks."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "''", rule)  # string literals cannot name variables
    bindings = {m.start(2) for m in _MACRO.finditer(text)}  # `x` in `.all(x, ...)`: a declaration, not a use
    variables = {"self", "oldSelf"} | {m.group(2) for m in _MACRO.finditer(text)}
    for m in _IDENT.finditer(text):
        if m.group(1) in variables and m.start() not in bindings:
            rest = text[m.end() :].lstrip()
            if not rest.startswith("."):
                return None
            if _MACRO.match(rest) and m.group(1) not in ("self", "oldSelf"):
                return None  # a macro on an item: it may be a map, iterated by its keys
    return frozenset(m.group(1) for m in _MEMBER.finditer(text))


def project(value: Any, keys: frozenset[str], rule: str) -> Any:
    """`value` cut down to `keys` (see `projection`): an object's members, or each object item of a
    list. A map that a macro iterates directly is left whole."""
    if isinstance(value, list):
        return [{k: v for k, v in item.items() if k in keys} if isinstance(item, dict) else item for item in value]
    if isinstance(value, dict):
        if re.search(r"\b(self|oldSelf)\s*\.\s*(all|exists|exists_one|map|filter)\s*\(", rule):
            return value
        return {k: v for k, v in value.items() if k in keys}
    return value


def _message(rule: dict[str, Any], ctx: dict[str, Any]) -> str:
    message = rule.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression.strip():
        try:
            text = program(expression).execute(ctx)
        except Exception:  # the API server falls back to the default message too
            text = None
        if isinstance(text, str) and text.strip():
            return text.strip()
    return "failed rule: " + rule["rule"].strip()


def _error_text(rule: dict[str, Any]) -> str:
    message = rule.get("message")
    return message.strip() if isinstance(message, str) and message.strip() else rule["rule"].strip()


def _path(site: RuleSite, rule: dict[str, Any]) -> FieldPath:
    """Where a failing rule points: its node, then the rule's `fieldPath` (a relative JSON path
    written in the CRD: `.name` children and `['name']` keys)."""
    where = field_path(site.parts, site.keys)
    extra = rule.get("fieldPath")
    if isinstance(extra, str) and extra:
        return where.child(*_json_path(extra))
    return where


_STEP = re.compile(r"\.([^.\[]+)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[\s*(\d+)\s*\]")


def _json_path(text: str) -> list[str | int]:
    """The steps of a rule's `fieldPath`; text it cannot read stays one name, as the API server
    would print it."""
    steps: list[str | int] = []
    at = 0
    text = text if text.startswith((".", "[")) else "." + text
    while at < len(text):
        m = _STEP.match(text, at)
        if m is None:
            return steps + [text[at:].lstrip(".")]
        name, quoted, double, index = m.groups()
        if name is not None:
            steps.append(name)
        elif index is not None:
            steps.append(int(index))
        else:
            steps.append(Key(quoted if quoted is not None else double))
        at = m.end()
    return steps


def evaluate(sites: list[RuleSite], is_update: bool) -> tuple[list[FieldError], list[str]]:
    """Errors of the failing rules, and warnings for rules that could not be evaluated offline."""
    errors: list[FieldError] = []
    notes: list[str] = []
    for site in sites:
        for rule in site.schema.rules:
            text = rule["rule"]
            transition = is_transition(text)
            if transition and not (is_update and site.has_old):
                continue
            keys = projection(text)
            ctx: dict[str, Any] = {"self": site.value if keys is None else project(site.value, keys, text)}
            if transition:
                ctx["oldSelf"] = site.old if keys is None else project(site.old, keys, text)
            path = _path(site, rule)
            try:
                result = program(text).execute(ctx)
            except Uncompilable as exc:
                notes.append(f"rule {text!r} at {str(path) or '<root>'} not checked offline: {exc}")
                continue
            except KeyError as exc:
                detail = f"no such key: {exc.args[0] if exc.args else ''} evaluating rule: {_error_text(rule)}"
                errors.append(invalid(path, site.schema.type, detail, origin=CEL))
                continue
            except Exception as exc:  # any runtime error is the rule's error, as in cel-go
                detail = f"{' '.join(str(exc).split())} evaluating rule: {_error_text(rule)}"
                errors.append(invalid(path, site.schema.type, detail, origin=CEL))
                continue
            if result is True:
                continue
            reason = str(rule.get("reason") or "FieldValueInvalid")
            kind = cast(ErrorKind, reason) if reason in RULE_REASONS else "FieldValueInvalid"
            errors.append(FieldError(kind, path, _message(rule, ctx), site.schema.type, CEL))
    return errors, notes
