"""The pod-spec oracle corpus (tests/fixtures/podspecs/corpus.json) is whole and in step with its
generator.

The corpus is what a real kube-apiserver v1.28 said about each pod spec; the offline replay of our
Pod validation trusts it as ground truth, so a truncated or hand-edited file, or one recorded from
an older `make_cases.py`, must fail here rather than make the replay agree with the wrong thing.
"""

from __future__ import annotations

import importlib.util
from collections import Counter

import pytest
from support import FIXTURES, load_pod_corpus

MIN_CASES = 150
MIN_EACH = 60  # at least this many pods refused, and this many accepted


def _generator():
    path = FIXTURES / "podspecs" / "make_cases.py"
    spec = importlib.util.spec_from_file_location("podspec_make_cases", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpus() -> dict:
    return load_pod_corpus()


def _check_verdict(v: dict, where: str) -> None:
    assert isinstance(v["allowed"], bool), where
    assert isinstance(v["code"], int), where
    assert isinstance(v["causes"], list), where
    assert isinstance(v["warnings"], list), where
    assert isinstance(v["cause_order_varies"], bool), where
    if v["allowed"]:
        assert 200 <= v["code"] < 300 and v["causes"] == [] and v["message"] is None, where
    else:
        assert v["code"] >= 400 and v["reason"] and v["message"], where
    for cause in v["causes"]:
        assert set(cause) == {"reason", "field", "message"}, where
        assert all(isinstance(cause[k], str) for k in cause), where


def test_corpus_was_recorded_on_kubernetes_1_28(corpus):
    assert corpus["apiserver"]["gitVersion"].startswith("v1.28.")
    assert corpus["query"] == "dryRun=All&fieldValidation=Strict"


def test_every_case_has_both_verdicts(corpus):
    cases = corpus["cases"]
    assert len(cases) >= MIN_CASES
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names))
    for c in cases:
        assert c["pod"]["kind"] == "Pod" and c["modelserving"]["kind"] == "ModelServing", c["name"]
        assert c["template_field"] in ("entryTemplate", "workerTemplate"), c["name"]
        assert c["not_knowable_offline"] is None or isinstance(c["not_knowable_offline"], str), c["name"]
        _check_verdict(c["pod_verdict"], c["name"] + " pod")
        _check_verdict(c["modelserving_verdict"], c["name"] + " modelserving")
        if c["pod_verdict"]["allowed"]:
            assert isinstance(c["pod_verdict"]["returned_spec"], dict), c["name"]


def test_corpus_has_enough_refused_and_accepted_pods(corpus):
    counts = Counter(c["pod_verdict"]["allowed"] for c in corpus["cases"] if not c["not_knowable_offline"])
    assert counts[False] >= MIN_EACH and counts[True] >= MIN_EACH, counts
    refused_with_causes = [c for c in corpus["cases"] if c["pod_verdict"]["causes"]]
    assert len(refused_with_causes) >= MIN_EACH


def test_npu_and_gpu_cases_are_in(corpus):
    names = {c["name"] for c in corpus["cases"]}
    for needed in (
        "ascend-request-without-limit",
        "ascend-request-equals-limit",
        "gpu-request-without-limit",
        "gpu-fractional",
        "multi-issue-18-example-as-worker",
    ):
        assert needed in names


def test_corpus_matches_its_generator(corpus):
    """Each recorded object is exactly what make_cases.py builds today: re-record after a change."""
    generated = _generator().cases()
    assert [c["name"] for c in corpus["cases"]] == [c["name"] for c in generated]
    keys = ("pod", "modelserving", "template_field", "not_knowable_offline", "topic")
    for recorded, made in zip(corpus["cases"], generated):
        for key in keys:
            assert recorded[key] == made[key], (made["name"], key)
