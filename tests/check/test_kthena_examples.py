"""Kthena's own examples (`examples/model-serving/*.yaml` of a Kthena checkout) pass `check`,
validated against that checkout's own CRDs (its `charts/`), and the webhook's validating rules.

The examples and CRDs are Kthena's files: they stay in Kthena's repository. Name a checkout with
SERVINGGATE_KTHENA_SRC (e.g. after kthena#1626, whose rollingupdate examples use `maxSurge` with
`maxUnavailable: 0`); without one these tests skip and say so.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from webhook.admission.review import make_request
from webhook.check import catalog
from webhook.check.cli import run
from webhook.policies import Context, DictLookups, engine
from webhook.policies.settings import PolicySettings

SOURCE = os.environ.get("SERVINGGATE_KTHENA_SRC", "")
EXAMPLES = sorted((Path(SOURCE) / "examples" / "model-serving").glob("*.yaml")) if SOURCE else []
needs_kthena = pytest.mark.skipif(not SOURCE, reason="SERVINGGATE_KTHENA_SRC names no Kthena checkout: Kthena's examples are not checked")


def check_text(text: str, crds: catalog.Catalog):
    """What `check` says of one manifest given on stdin (no problem reading it)."""
    results, problems = run(["-"], [], PolicySettings(), crds=crds, stdin=io.StringIO(text))
    assert problems == []
    return results


@pytest.fixture(scope="module")
def kthena_crds() -> catalog.Catalog:
    """The CRDs of the checkout's charts (Helm templates are skipped)."""
    return catalog.build([str(Path(SOURCE) / "charts")])


@needs_kthena
def test_the_checkout_has_examples_and_the_modelserving_crd(kthena_crds):
    assert EXAMPLES, f"no examples/model-serving/*.yaml under {SOURCE}"
    assert "modelservings.workload.serving.volcano.sh" in kthena_crds.origins


@needs_kthena
@pytest.mark.parametrize("name", [p.name for p in EXAMPLES] or ["none"])
def test_example_passes_check_and_the_webhook(name, kthena_crds):
    text = (Path(SOURCE) / "examples" / "model-serving" / name).read_text()
    for result in check_text(text, kthena_crds):
        assert result.status == "allowed" and not result.findings, (result.obj.get("kind"), [f.message for f in result.findings])
        if result.obj["kind"] == "ModelServing":
            # The webhook sees the object after the API server's CRD defaulting: `check`'s final object.
            out = engine.validate(make_request(result.final), Context(settings=PolicySettings(), lookups=DictLookups([])))
            assert out.allowed and out.errors == [], out.errors


@needs_kthena
@pytest.mark.parametrize(
    "name, budgets",
    [
        ("rollingupdate.yaml", lambda ms: ms["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]),
        ("role-rollingupdate.yaml", lambda ms: ms["spec"]["template"]["roles"][0]),
    ],
)
def test_the_surge_examples_keep_their_fields(name, budgets, kthena_crds):
    """The surge fields survive the checkout's schema (not pruned as unknown) and reach the rules."""
    path = Path(SOURCE) / "examples" / "model-serving" / name
    if "maxSurge" not in (path.read_text() if path.exists() else ""):
        pytest.skip(f"{path}: no maxSurge in this checkout (kthena#1626 adds it)")
    [result] = check_text(path.read_text(), kthena_crds)
    assert {k: budgets(result.final)[k] for k in ("maxUnavailable", "maxSurge")} == {"maxUnavailable": 0, "maxSurge": 1}
