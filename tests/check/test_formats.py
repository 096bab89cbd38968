"""Each output format read the way its consumer reads it: JUnit XML as CI test reporters parse it,
SARIF against the SARIF 2.1.0 JSON schema (a copy in tests/fixtures/sarif), GitHub workflow
commands by their grammar; and the exit codes CI relies on."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
import yaml
from support import REPO
from support.commands import run_webhook

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "verdicts" / "cases"
SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "fixtures" / "sarif" / "sarif-subset.schema.json"  # ours: what we emit
FULL_SARIF_SCHEMA = os.environ.get("SERVINGGATE_SARIF_SCHEMA", "")  # the standard's sarif-schema-2.1.0.json, when one is at hand


def check(*args: str) -> subprocess.CompletedProcess:
    return run_webhook(["check", *args], cwd=REPO, timeout=120)


@pytest.fixture
def inputs(tmp_path):
    """One good ModelServing, one refused by the schema, one refused by CEL, a skipped kind, and a
    file with an unusable document."""
    good = tmp_path / "good.yaml"
    good.write_text((CASES / "ms-valid.yaml").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (CASES / "ms-recovery-policy-unsupported.yaml").read_text()
        + "---\n"
        + (CASES / "ms-role-names-not-unique.yaml").read_text()
        + "---\n"
        + yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("- just\n- a list\n")
    return good, bad, broken


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if line.startswith(text))


def test_exit_codes(inputs):
    good, bad, broken = inputs
    assert check(str(good)).returncode == 0
    assert check(str(good), str(bad)).returncode == 1
    assert check(str(good), str(bad), str(broken)).returncode == 2  # unusable input wins


def test_fail_on_warn(tmp_path):
    f = tmp_path / "dup.yaml"
    f.write_text((CASES / "ms-duplicate-key-yaml.yaml").read_text())
    assert check(str(f)).returncode == 0
    assert check("--fail-on-warn", str(f)).returncode == 1


def test_text_lines_carry_file_line_column_rule_object_field(inputs):
    good, bad, _ = inputs
    res = check(str(good), str(bad))
    lines = res.stdout.splitlines()
    at = line_of(bad, "  recoveryPolicy:")
    assert lines[0] == (
        f'{bad}:{at}:3: error [schema] ModelServing default/llm: spec.recoveryPolicy: Unsupported value: "GroupRecreate": '
        'supported values: "ServingGroupRecreate", "RoleRecreate", "None"'
    )
    assert re.fullmatch(
        rf'{re.escape(str(bad))}:\d+:5: error \[cel\] ModelServing default/llm: spec.template.roles: Invalid value: "array": roles name must be unique',
        lines[1],
    )
    assert lines[-1] == "4 checked, 2 denied, 0 warned, 1 skipped, 0 unusable"
    assert len(lines) == 3  # only findings and the summary without --verbose


def test_junit_structure(inputs):
    good, bad, broken = inputs
    res = check("-o", "junit", str(good), str(bad), str(broken))
    root = ET.fromstring(res.stdout)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("5", "2", "1", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {str(good), str(bad), str(broken)}
    assert [c.get("name") for c in suites[str(good)].findall("testcase")] == ["ModelServing default/llm (CREATE)"]
    assert suites[str(good)].find("testcase/failure") is None
    failures = suites[str(bad)].findall("testcase/failure")
    assert len(failures) == 2 and failures[0].get("message").startswith('ModelServing.workload.serving.volcano.sh "llm" is invalid')
    assert "spec.recoveryPolicy: Unsupported value" in failures[0].text
    assert suites[str(bad)].find("testcase/skipped") is not None
    assert suites[str(broken)].find("testcase/error").get("type") == "unusable"
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase"))


def test_sarif_validates_against_the_schema(inputs):
    good, bad, broken = inputs
    res = check("-o", "sarif", str(good), str(bad), str(broken))
    log = json.loads(res.stdout)
    assert_valid_sarif(log, SARIF_SCHEMA)
    [run] = log["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    results = run["results"]
    assert {r["ruleId"] for r in results} == {"schema", "cel", "unusable"} and set(rules) == {"schema", "cel", "unusable"}
    for r in results:
        assert rules[r["ruleIndex"]] == r["ruleId"]
    first = next(r for r in results if r["ruleId"] == "schema")
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": line_of(bad, "  recoveryPolicy:"), "startColumn": 3}
    assert first["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "ModelServing/default/llm.spec.recoveryPolicy"


def assert_valid_sarif(log: dict, schema_path: Path) -> None:
    schema = json.loads(schema_path.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    errors = list(jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).iter_errors(log))
    assert errors == [], [e.message for e in errors]


@pytest.mark.skipif(not FULL_SARIF_SCHEMA, reason="SERVINGGATE_SARIF_SCHEMA names no copy of the SARIF 2.1.0 standard's schema: checked against ours only")
def test_sarif_is_valid_against_the_standards_own_schema(inputs):
    good, bad, broken = inputs
    assert_valid_sarif(json.loads(check("-o", "sarif", str(good), str(bad), str(broken)).stdout), Path(FULL_SARIF_SCHEMA))


def test_sarif_would_fail_the_schema_if_broken(inputs):
    """The schema check has teeth: a result without a message is refused."""
    good, bad, _ = inputs
    log = json.loads(check("-o", "sarif", str(bad)).stdout)
    del log["runs"][0]["results"][0]["message"]
    schema = json.loads(SARIF_SCHEMA.read_text())
    assert list(jsonschema.Draft4Validator(schema).iter_errors(log))


def test_github_annotations(inputs):
    good, bad, _ = inputs
    res = check("-o", "github", str(good), str(bad))
    lines = res.stdout.splitlines()
    command = re.compile(r"::(error|warning) file=([^,]+),line=(\d+),col=(\d+),title=([^:]+)::(.+)")
    parsed = [command.fullmatch(line) for line in lines[:-1]]
    assert all(parsed), lines
    assert parsed[0].group(1, 2, 3, 4) == ("error", str(bad), str(line_of(bad, "  recoveryPolicy:")), "3")
    assert parsed[0].group(5) == "[schema] ModelServing default/llm"
    assert parsed[0].group(6).startswith('spec.recoveryPolicy: Unsupported value: "GroupRecreate"')
    assert lines[-1] == "4 checked, 2 denied, 0 warned, 1 skipped, 0 unusable"


def test_stdin_and_json_summary(inputs):
    good, _, _ = inputs
    proc = run_webhook(["check", "-o", "json", "-"], cwd=REPO, input=good.read_text(), timeout=120)
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["summary"] == {"checked": 1, "denied": 0, "warned": 0, "skipped": 0, "unusable": 0}
    assert report["results"][0]["file"] == "<stdin>"
