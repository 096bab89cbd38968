"""`audit`'s report on stdout, in the form its reader wants:

- `text`: `Kind ns/name: field: message [rule]`, one line per finding, then the counts;
- `json`: `check`'s shape (`results[]` with kind, namespace, name, allowed, `errors[]` with
  rule/field/message, and `warnings[]`), for the objects with findings only, plus the counts;
- `junit`: a test suite per audited resource, a test case per object with findings;
- `sarif`: one result per finding, located logically (`Kind/ns/name.field`): there is no file.

`github` (workflow annotations on files) is refused: an object in a cluster has no file and line
to annotate. A rule set to `audit` is reported as a warning with `action: audit`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, TextIO
from xml.etree import ElementTree as ET

import orjson

from .. import __version__
from ..reportformats import rule_index, write_junit, write_sarif
from .auditing import AuditRun
from .judging import Finding, Judged

FORMATS = ("text", "json", "junit", "sarif")
REFUSED = {"github": "github annotates files and lines; audited objects have neither: use sarif (logical locations) or junit"}
TOOL = "servinggate audit"


def summary(run: AuditRun) -> dict[str, int]:
    return {
        "objects": sum(run.objects.values()),
        "denied": sum(not j.allowed for j in run.judged),
        "warned": sum(j.allowed for j in run.judged),
        "skippedKinds": len(run.skipped),
    }


def summary_line(run: AuditRun) -> str:
    s = summary(run)
    return f"{s['objects']} audited, {s['denied']} would be denied, {s['warned']} warned, {s['skippedKinds']} kinds not installed"


def finding_line(j: Judged, f: Finding) -> str:
    where = f"{f.field}: " if f.field else ""
    action = f" ({f.action})" if f.action != "deny" and f.result == "warn" else ""
    return f"{j.display()}: {where}{f.message} [{f.rule}]{action}"


def text(run: AuditRun, out: TextIO) -> None:
    for note in run.skipped:
        print(f"note: {note}", file=out)
    for j in run.judged:
        for f in j.findings:
            print(finding_line(j, f), file=out)
    print(summary_line(run), file=out)


def _finding(f: Finding) -> dict[str, Any]:
    return {"rule": f.rule, "field": f.field, "message": f.message, "action": f.action}


def json_report(run: AuditRun, out: TextIO) -> None:
    report = {
        "results": [
            {
                "apiVersion": j.api_version,
                "kind": j.kind,
                "namespace": j.namespace,
                "name": j.name,
                "uid": j.uid,
                "allowed": j.allowed,
                "errors": [_finding(f) for f in j.findings if f.result == "fail"],
                "warnings": [_finding(f) for f in j.findings if f.result == "warn"],
            }
            for j in run.judged
        ],
        "notes": run.skipped,
        "summary": summary(run),
    }
    out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")


def junit(run: AuditRun, out: TextIO) -> None:
    suites: dict[str, list[ET.Element]] = {}
    counts: dict[str, Counter[str]] = {resource: Counter(tests=n) for resource, n in run.objects.items()}
    for j in run.judged:
        suite = j.resource
        case = ET.Element("testcase", {"classname": suite, "name": j.display(), "time": "0"})
        fails = [finding_line(j, f) for f in j.findings if f.result == "fail"]
        if fails:
            counts.setdefault(suite, Counter())["failures"] += 1
            ET.SubElement(case, "failure", {"message": "would be denied on create", "type": "denied"}).text = "\n".join(fails)
        warns = [finding_line(j, f) for f in j.findings if f.result == "warn"]
        if warns:
            ET.SubElement(case, "system-out").text = "\n".join(warns)
        suites.setdefault(suite, []).append(case)
    for resource in counts:
        suites.setdefault(resource, [])
    write_junit(out, TOOL, suites, counts)


def _describe(rule: str) -> str:
    return f"ServingGate rule {rule}"


def sarif(run: AuditRun, out: TextIO) -> None:
    rule_ids: list[str] = []
    entries: list[dict[str, Any]] = []
    for j in run.judged:
        for f in j.findings:
            logical = f"{j.kind}/{j.namespace}/{j.name}" + (f".{f.field}" if f.field else "")
            entries.append(
                {
                    "ruleId": f.rule,
                    "ruleIndex": rule_index(rule_ids, f.rule),
                    "level": "error" if f.result == "fail" else "warning",
                    "message": {"text": f"{j.display()}: {f.field + ': ' if f.field else ''}{f.message}"},
                    "locations": [{"logicalLocations": [{"fullyQualifiedName": logical, "name": j.name, "kind": "object"}]}],
                    "properties": {"action": f.action},
                }
            )
    write_sarif(out, TOOL, __version__, rule_ids, _describe, entries)


def write(fmt: str, run: AuditRun, out: TextIO) -> None:
    {"json": json_report, "junit": junit, "sarif": sarif}.get(fmt, text)(run, out)
