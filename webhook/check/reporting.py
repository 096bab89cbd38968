"""`check`'s reports, each in the form its consumer reads:

- `text`: one line per finding, `file:line:column: severity [rule] Kind ns/name: field: message`
  (compilers' and linters' form, so editors jump to it); `--verbose` adds every object's verdict;
- `json`: the results as data (stable keys, documented in docs/policies.md);
- `junit`: `testsuites > testsuite (one per file) > testcase (one per object)` with `failure`,
  `error` (unusable input) and `skipped`, which Jenkins, GitLab and GitHub test reporters parse;
- `sarif`: SARIF 2.1.0 (code scanning), one result per finding with its physical location;
- `github`: workflow commands (`::error file=...,line=...,col=...::message`) that annotate a PR.

Every format ends with (or carries) the same summary counts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, TextIO
from xml.etree import ElementTree as ET

import orjson

from .. import __version__
from ..reportformats import rule_index, write_junit, write_sarif
from .loading import Problem
from .pipeline import DocumentResult, Finding

FORMATS = ("text", "json", "junit", "sarif", "github")


@dataclass(slots=True)
class Summary:
    checked: int
    denied: int
    warned: int
    skipped: int
    unusable: int

    def line(self) -> str:
        return f"{self.checked} checked, {self.denied} denied, {self.warned} warned, {self.skipped} skipped, {self.unusable} unusable"

    def as_dict(self) -> dict[str, int]:
        return {"checked": self.checked, "denied": self.denied, "warned": self.warned, "skipped": self.skipped, "unusable": self.unusable}


def summarize(results: list[DocumentResult], problems: list[Problem]) -> Summary:
    return Summary(
        checked=len(results),
        denied=sum(r.status == "denied" for r in results),
        warned=sum(r.status != "denied" and bool(r.warnings) for r in results),
        skipped=sum(r.status == "skipped" for r in results),
        unusable=len(problems),
    )


def identity(r: DocumentResult) -> tuple[str, str, str]:
    meta = r.obj.get("metadata") or {}
    name = str(meta.get("name") or "") or str(meta.get("generateName") or "") + "*"
    return str(r.obj.get("kind")), str(meta.get("namespace") or ""), name


def display(r: DocumentResult) -> str:
    kind, namespace, name = identity(r)
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def finding_dict(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {"rule": f.rule, "field": f.field, "type": f.type, "message": f.message, "line": f.line, "column": f.column}
    if f.pod is not None:
        out["pod"] = f.pod
    return out


def result_dict(r: DocumentResult) -> dict[str, Any]:
    kind, namespace, name = identity(r)
    return {
        "file": r.doc.source,
        "document": r.doc.number,
        **({"item": r.doc.item} if r.doc.item is not None else {}),
        "line": r.doc.line,
        "column": r.doc.column,
        "apiVersion": r.obj.get("apiVersion"),
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "operation": r.operation,
        "status": r.status,
        "checked": r.status != "skipped",
        "schema": r.schema or None,
        "rules": r.rules,
        "allowed": r.status != "denied",
        "code": r.code,
        "reason": r.reason or None,
        "message": r.message,
        "errors": [finding_dict(f) for f in r.errors],
        "warnings": [finding_dict(f) for f in r.warnings],
        "audits": [finding_dict(f) for f in r.audits],
        "changes": [{"rule": rule, "message": text} for rule, text in r.changes],
        "patch": r.patch,
        "pods": r.pods,
    }


def problem_dict(p: Problem) -> dict[str, Any]:
    return {"file": p.source, "document": p.number, "line": p.line, "message": p.message}


# ---- text -------------------------------------------------------------------------------------


def _finding_line(r: DocumentResult, f: Finding) -> str:
    where = f"{f.field}: " if f.field else ""
    pod = f"pod {f.pod}: " if f.pod else ""
    return f"{r.doc.source}:{f.line}:{f.column}: {f.severity} [{f.rule}] {display(r)}: {pod}{where}{f.message}"


def text(results: list[DocumentResult], problems: list[Problem], out: TextIO, verbose: bool) -> None:
    for p in problems:
        print(f"{p.source}:{p.line}:1: error [unusable] {p.message}" if p.number == 0 else f"{p}  [unusable]", file=out)
    for r in results:
        if verbose:
            verdict = {
                "allowed": "allowed" + (" with changes" if r.patch else ""),
                "skipped": "skipped (no schema or rule applies)",
                "denied": f"DENIED ({r.code})",
            }[r.status]
            print(f"{r.doc.source}:{r.doc.line}:{r.doc.column}: {display(r)} ({r.operation}): {verdict}", file=out)
            if r.message and r.status == "denied":
                print(f"  {r.message}", file=out)
        for f in r.findings:
            print(_finding_line(r, f), file=out)
        if verbose:
            for rule, change in r.changes:
                print(f"  change [{rule}]: {change}", file=out)
            for op in r.patch:
                print(f"  patch: {orjson.dumps(op).decode()}", file=out)
            for pod in r.pods:
                print(f"  pod {pod['name']} ({pod['template']}): {len(pod['patch'])} change(s)", file=out)
                for op in pod["patch"]:
                    print(f"    patch: {orjson.dumps(op).decode()}", file=out)
    print(summarize(results, problems).line(), file=out)


def json_report(results: list[DocumentResult], problems: list[Problem], out: TextIO) -> None:
    report = {"results": [result_dict(r) for r in results], "problems": [problem_dict(p) for p in problems], "summary": summarize(results, problems).as_dict()}
    out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")


# ---- junit ------------------------------------------------------------------------------------


def junit(results: list[DocumentResult], problems: list[Problem], out: TextIO) -> None:
    suites: dict[str, list[ET.Element]] = {}
    counts: dict[str, Counter[str]] = {}
    for r in results:
        case = ET.Element(
            "testcase", {"classname": r.doc.source, "name": f"{display(r)} ({r.operation})", "file": r.doc.source, "line": str(r.doc.line), "time": "0"}
        )
        tally = counts.setdefault(r.doc.source, Counter())
        tally["tests"] += 1
        if r.status == "denied":
            tally["failures"] += 1
            failure = ET.SubElement(case, "failure", {"message": r.message or "denied", "type": r.reason or "denied"})
            failure.text = "\n".join(_finding_line(r, f) for f in r.errors)
        elif r.status == "skipped":
            tally["skipped"] += 1
            ET.SubElement(case, "skipped", {"message": "no schema or rule applies"})
        if r.warnings:
            ET.SubElement(case, "system-out").text = "\n".join(_finding_line(r, f) for f in r.warnings)
        suites.setdefault(r.doc.source, []).append(case)
    for p in problems:
        case = ET.Element(
            "testcase", {"classname": p.source, "name": f"document {p.number}" if p.number else "input", "file": p.source, "line": str(p.line), "time": "0"}
        )
        ET.SubElement(case, "error", {"message": p.message, "type": "unusable"}).text = str(p)
        tally = counts.setdefault(p.source, Counter())
        tally["tests"] += 1
        tally["errors"] += 1
        suites.setdefault(p.source, []).append(case)
    write_junit(out, "servinggate check", suites, counts)


# ---- sarif ------------------------------------------------------------------------------------


def _uri(source: str) -> str:
    return "stdin" if source == "<stdin>" else source.replace("\\", "/")


def sarif(results: list[DocumentResult], problems: list[Problem], out: TextIO) -> None:
    rule_ids: list[str] = []
    entries: list[dict[str, Any]] = []
    for r in results:
        kind, namespace, name = identity(r)
        for f in r.findings:
            logical = f"{kind}/{namespace + '/' if namespace else ''}{name}" + (f".{f.field}" if f.field else "")
            entries.append(
                {
                    "ruleId": f.rule,
                    "ruleIndex": rule_index(rule_ids, f.rule),
                    "level": {"error": "error", "warning": "warning"}.get(f.severity, "note"),
                    "message": {"text": f"{display(r)}: {f.field + ': ' if f.field else ''}{f.message}"},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(r.doc.source)},
                                "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
                            },
                            "logicalLocations": [{"fullyQualifiedName": logical, "kind": "object"}],
                        }
                    ],
                }
            )
    for p in problems:
        entries.append(
            {
                "ruleId": "unusable",
                "ruleIndex": rule_index(rule_ids, "unusable"),
                "level": "error",
                "message": {"text": p.message},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(p.source)}, "region": {"startLine": max(p.line, 1)}}}],
            }
        )
    write_sarif(out, "servinggate check", __version__, rule_ids, _describe, entries)


def _describe(rule: str) -> str:
    return {
        "schema": "The CRD's or the built-in kind's schema, as the API server applies it",
        "cel": "The CRD's x-kubernetes-validations rules",
        "decode": "Decoding the manifest as kubectl and the API server would",
        "unusable": "The input cannot be read as Kubernetes objects",
    }.get(rule, f"ServingGate rule {rule}")


# ---- github -----------------------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(results: list[DocumentResult], problems: list[Problem], out: TextIO) -> None:
    for p in problems:
        print(f"::error file={_escape_property(p.source)},line={max(p.line, 1)},title=unusable input::{_escape_data(p.message)}", file=out)
    for r in results:
        for f in r.findings:
            level = {"error": "error", "warning": "warning"}.get(f.severity, "notice")
            title = _escape_property(f"[{f.rule}] {display(r)}")
            message = _escape_data(f"{f.field + ': ' if f.field else ''}{f.message}")
            print(f"::{level} file={_escape_property(r.doc.source)},line={max(f.line, 1)},col={max(f.column, 1)},title={title}::{message}", file=out)
    print(summarize(results, problems).line(), file=out)


def write(fmt: str, results: list[DocumentResult], problems: list[Problem], out: TextIO, verbose: bool = False) -> None:
    if fmt == "json":
        json_report(results, problems, out)
    elif fmt == "junit":
        junit(results, problems, out)
    elif fmt == "sarif":
        sarif(results, problems, out)
    elif fmt == "github":
        github(results, problems, out)
    else:
        text(results, problems, out, verbose)
