"""`python -m webhook check`: run the webhook's rules offline on manifests (CI, laptops).

Each document (multi-document YAML or JSON, `List` kinds expanded) becomes a CREATE request, or
an UPDATE request when `--old` gives an object with the same kind, namespace and name. Lookups
(an autoscaler's target ModelServing, a binding's policy) are answered from the documents given.
Requests go through the same engine as the server, so the messages are the webhook's.

Exit codes: 0 all allowed; 1 at least one violation; 2 unusable input (file and document named).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

import orjson
import yaml

from .admission.decision import Decision
from .admission.responses import review_response
from .admission.review import make_request
from . import config
from .config import CheckSettings, PolicySettings, ServeSettings
from .policies import REGISTRY, Context, DictLookups
from .policies import engine

EXIT_OK, EXIT_DENIED, EXIT_UNUSABLE = 0, 1, 2


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings, as the API server's JSON would carry them."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(slots=True)
class Document:
    source: str
    number: int  # 1-based position of the YAML/JSON document in its file
    obj: dict[str, Any]
    item: int | None = None  # index inside a List document


@dataclass(slots=True)
class InputProblem:
    source: str
    number: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}: document {self.number}: {self.message}"


@dataclass(slots=True)
class Loaded:
    documents: list[Document] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)


def _read(path: str, stdin: TextIO) -> str:
    if path == "-":
        return stdin.read()
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _usable(obj: Any) -> str | None:
    """Why an object cannot be checked, or None."""
    if not isinstance(obj, dict):
        return f"expected a Kubernetes object (a mapping), got {type(obj).__name__}"
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj.get(key):
            return f"{key}: required (a non-empty string)"
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return "metadata: required (a mapping)"
    if not (isinstance(meta.get("name"), str) and meta["name"]) and not (isinstance(meta.get("generateName"), str) and meta["generateName"]):
        return "metadata.name: required (or metadata.generateName)"
    return None


def _expand(obj: Any) -> list[tuple[int | None, Any]]:
    """A `List` (kind List or <Kind>List with items) becomes its items; kinds are filled in from the list."""
    if isinstance(obj, dict) and isinstance(obj.get("kind"), str) and obj["kind"].endswith("List") and isinstance(obj.get("items"), list):
        item_kind = obj["kind"][: -len("List")]
        out: list[tuple[int | None, Any]] = []
        for i, item in enumerate(obj["items"]):
            if isinstance(item, dict) and item_kind:
                item = {"apiVersion": obj.get("apiVersion"), "kind": item_kind, **item}
            out.append((i, item))
        return out
    return [(None, obj)]


def load(paths: list[str], stdin: TextIO = sys.stdin) -> Loaded:
    loaded = Loaded()
    for path in paths:
        source = "<stdin>" if path == "-" else path
        try:
            text = _read(path, stdin)
        except (OSError, UnicodeDecodeError) as exc:
            loaded.problems.append(InputProblem(source, 0, f"cannot read: {exc}"))
            continue
        number = 0
        try:
            for number, doc in enumerate(yaml.load_all(text, Loader=_Loader), start=1):
                if doc is None:
                    continue
                for item, obj in _expand(doc):
                    problem = _usable(obj)
                    if problem:
                        where = f"items[{item}]: " if item is not None else ""
                        loaded.problems.append(InputProblem(source, number, where + problem))
                    else:
                        loaded.documents.append(Document(source, number, obj, item))
        except yaml.YAMLError as exc:
            loaded.problems.append(InputProblem(source, number + 1, f"not valid YAML/JSON: {' '.join(str(exc).split())}"))
    return loaded


def _identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return group, str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _findings(decisions: list[Decision]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each error and warning as fields (rule, path, type, message), not as rendered strings."""
    errors: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    for d in decisions:
        errors += [
            {"rule": e.rule, "field": e.error.field, "type": e.error.kind, "message": e.error.body()} for e in d.errors
        ]
        if d.refusal is not None:
            errors.append({"rule": d.refusal.rule, "field": None, "type": "Forbidden", "message": d.refusal.text})
        if d.crash is not None:
            errors.append({"rule": d.crash.rule, "field": None, "type": "InternalError", "message": "the rule raised an exception"})
        seen = {(w["rule"], w["message"]) for w in warnings}
        warnings += [{"rule": w.rule, "message": w.text} for w in d.warnings if (w.rule, w.text) not in seen]
        # findings of rules in audit mode: reported as warnings, marked, never failing the check
        warnings += [{"rule": a.rule, "message": a.text, "audit": True} for a in d.audit]
    return errors, warnings


def check_object(doc: Document, old: dict[str, Any] | None, ctx: Context) -> dict[str, Any]:
    """Run the validators and mutators for one object, as the two webhook endpoints would; the
    JSON report entry. `message` and `code` are what the API server would show the user."""
    obj = doc.obj
    req = make_request(obj, operation="UPDATE" if old is not None else "CREATE", old=old)
    validation = engine.validate(req, ctx, REGISTRY)
    mutation = engine.mutate(req, ctx, REGISTRY)
    # The API server calls mutating webhooks first and stops at the first denial.
    first_denial = next((d for d in (mutation, validation) if not d.allowed), None)
    status = review_response(req, first_denial)["response"].get("status", {}) if first_denial else {}
    errors, warnings = _findings([mutation, validation])
    return {
        "file": doc.source,
        "document": doc.number,
        **({"item": doc.item} if doc.item is not None else {}),
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "namespace": req.namespace,
        "name": req.name or str((obj.get("metadata") or {}).get("generateName") or "") + "*",
        "operation": req.operation,
        "checked": validation.matched or mutation.matched,
        "rules": list(mutation.rules + validation.rules),
        "allowed": first_denial is None,
        "code": first_denial.code if first_denial else 200,
        "message": status.get("message"),
        "errors": errors,
        "warnings": warnings,
        "changes": [{"rule": c.rule, "message": c.text} for c in mutation.changes],
        "patch": mutation.patch,
    }


def run(paths: list[str], old_paths: list[str], settings: PolicySettings, stdin: TextIO = sys.stdin) -> tuple[list[dict[str, Any]], list[InputProblem]]:
    new = load(paths, stdin)
    old = load(old_paths, stdin) if old_paths else Loaded()
    olds = {_identity(d.obj): d.obj for d in old.documents}
    # Lookups see the new documents, and the --old ones where no new document replaces them.
    ctx = Context(settings=settings, lookups=DictLookups([d.obj for d in old.documents] + [d.obj for d in new.documents]))
    results = [check_object(d, olds.get(_identity(d.obj)), ctx) for d in new.documents]
    return results, new.problems + old.problems


def _text(results: list[dict[str, Any]], problems: list[InputProblem], out: TextIO) -> None:
    for p in problems:
        print(f"{p}  [unusable input]", file=out)
    for r in results:
        where = f"{r['file']}#{r['document']}" + (f"[{r['item']}]" if "item" in r else "")
        name = f"{r['namespace']}/{r['name']}" if r["namespace"] else r["name"]
        if not r["checked"]:
            verdict = "no rules"
        elif r["allowed"]:
            verdict = "allowed" + (" with changes" if r["patch"] else "")
        else:
            verdict = f"DENIED ({r['code']})"
        print(f"{where}: {r['kind']} {name} ({r['operation']}): {verdict}", file=out)
        for e in r["errors"]:
            where = f"{e['field']}: " if e["field"] else ""
            print(f"  error [{e['rule']}]: {where}{e['message']}", file=out)
        for w in r["warnings"]:
            print(f"  warning [{w['rule']}]: {w['message']}", file=out)
        for c in r["changes"]:
            print(f"  change [{c['rule']}]: {c['message']}", file=out)
        for op in r["patch"]:
            print(f"  patch: {orjson.dumps(op).decode()}", file=out)
    denied = sum(1 for r in results if not r["allowed"])
    print(f"{len(results)} object(s) checked, {denied} denied, {len(problems)} unusable", file=out)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="YAML or JSON files (multi-document, List kinds); - for stdin")
    p.add_argument("--output", "-o", choices=("text", "json"), default="text", help="report format (default text)")
    p.add_argument("--old", action="append", default=[], metavar="FILE", help="the objects as they are now: matching documents are checked as UPDATEs (repeatable)")


def main(argv: list[str]) -> int:
    try:
        # The policy settings are the webhook's (flags, SERVINGGATE_* variables, --config), so
        # `check` answers as the webhook configured the same way would; a `serve` config file
        # works as is (its listener and certificate keys are ignored here).
        settings, args = config.parse_command(
            CheckSettings, argv, "python -m webhook check", "Check manifests offline with the webhook's rules.",
            extra=_arguments, shared_with=ServeSettings,
        )
    except SystemExit as exc:  # argparse: 0 for --help, 2 for a usage error
        return int(exc.code or 0)
    if args.files.count("-") + args.old.count("-") > 1:
        print("check: stdin (-) can be given only once", file=sys.stderr)
        return EXIT_UNUSABLE
    results, problems = run(args.files, args.old, settings)
    if args.output == "json":
        report = {
            "results": results,
            "problems": [{"file": p.source, "document": p.number, "message": p.message} for p in problems],
        }
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _text(results, problems, sys.stdout)
    if problems:
        for p in problems:
            print(f"check: {p}", file=sys.stderr)
        return EXIT_UNUSABLE
    return EXIT_DENIED if any(not r["allowed"] for r in results) else EXIT_OK
