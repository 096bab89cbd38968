"""The report envelopes `check` and `audit` share: a SARIF 2.1.0 log and a JUnit XML document.

What goes inside differs (`check` has files and lines, `audit` has objects in a cluster); the
wrapping that code-scanning and test-report readers parse is written once, here. A leaf module:
the caller passes its name and version.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TextIO
from xml.etree import ElementTree as ET

import orjson

INFORMATION_URI = "https://github.com/servinggate/servinggate"


def write_sarif(out: TextIO, tool: str, version: str, rule_ids: Iterable[str], describe: Callable[[str], str], results: list[dict[str, Any]]) -> None:
    """One run of `tool` with its rules (id and short description) and results."""
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": tool,
                        "version": version,
                        "informationUri": INFORMATION_URI,
                        "rules": [{"id": rule, "name": rule, "shortDescription": {"text": describe(rule)}} for rule in rule_ids],
                    }
                },
                "results": results,
            }
        ],
    }
    out.write(orjson.dumps(log, option=orjson.OPT_INDENT_2).decode() + "\n")


def rule_index(rule_ids: list[str], rule: str) -> int:
    """The rule's index in the driver's rules, added on first use (SARIF's ruleIndex)."""
    if rule not in rule_ids:
        rule_ids.append(rule)
    return rule_ids.index(rule)


def write_junit(out: TextIO, name: str, suites: Mapping[str, list[ET.Element]], counts: Mapping[str, Counter[str]]) -> None:
    """`testsuites > testsuite > testcase`, with each suite's and the total tests, failures,
    errors and skipped."""
    total: Counter[str] = Counter()
    for tally in counts.values():
        total.update(tally)
    root = ET.Element(
        "testsuites",
        {
            "name": name,
            "tests": str(total["tests"]),
            "failures": str(total["failures"]),
            "errors": str(total["errors"]),
            "skipped": str(total["skipped"]),
            "time": "0",
        },
    )
    for source, cases in suites.items():
        tally = counts[source]
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": source,
                "tests": str(tally["tests"]),
                "failures": str(tally["failures"]),
                "errors": str(tally["errors"]),
                "skipped": str(tally["skipped"]),
                "time": "0",
            },
        )
        suite.extend(cases)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")
