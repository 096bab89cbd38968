"""Kthena's own examples after kthena#1626 (tests/fixtures/kthena-examples) pass `check` and the
webhook: the bundled CRD knows maxSurge, and the rollout rules accept `maxUnavailable: 0` with a
positive `maxSurge`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from webhook.admission.review import make_request
from webhook.check.cli import run
from webhook.policies import Context, DictLookups, engine
from webhook.policies.settings import PolicySettings

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "kthena-examples").glob("*.yaml"))


def check_text(text: str):
    """What `check` says of one manifest given on stdin (no problem reading it)."""
    results, problems = run(["-"], [], PolicySettings(), stdin=io.StringIO(text))
    assert problems == []
    return results


def test_every_example_is_here():
    assert len(EXAMPLES) == 13
    assert {"rollingupdate.yaml", "role-rollingupdate.yaml"} <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_passes_check_and_the_webhook(path):
    [result] = check_text(path.read_text())
    assert result.obj["kind"] == "ModelServing"
    assert result.status == "allowed" and not result.findings, [f.message for f in result.findings]
    # The webhook sees the object after the API server's CRD defaulting: `check`'s final object.
    out = engine.validate(make_request(result.final), Context(settings=PolicySettings(), lookups=DictLookups([])))
    assert out.allowed and out.errors == [], out.errors


@pytest.mark.parametrize(
    "name, budgets",
    [
        ("rollingupdate.yaml", lambda ms: ms["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]),
        ("role-rollingupdate.yaml", lambda ms: ms["spec"]["template"]["roles"][0]),
    ],
)
def test_the_surge_examples_keep_their_fields(name, budgets):
    """The new fields survive the schema (not pruned as unknown) and reach the rules."""
    [result] = check_text((EXAMPLES[0].parent / name).read_text())
    assert {k: budgets(result.final)[k] for k in ("maxUnavailable", "maxSurge")} == {"maxUnavailable": 0, "maxSurge": 1}
