"""Replay of the oracle corpus: what a real kube-apiserver 1.28 said about each Pod
(tests/fixtures/podspecs/corpus.json, recorded by record.py beside it), against this port.

For each case: apply the v1 defaults, validate, and compare the verdict and every cause (type,
field, message), in the server's order. Where the recording saw that order change between runs
(`cause_order_varies`: the server walks labels, annotations and resource lists as Go maps, in
random order) the causes are compared as a multiset. A 400 (the body did not decode, e.g. an unparsable quantity) has no causes; there the
port must refuse with type errors whose details the server's message contains. Cases marked
`not_knowable_offline` (admission plugins that look the cluster up) are left out, each with its
recorded reason.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import pytest
from support import FIXTURES

from webhook.admission.fields import FieldPath
from webhook.podvalidation import apply_pod_defaults, drops, validate_pod_create
from webhook.podvalidation.errors import Errors, type_invalid
from webhook.podvalidation.options import DEFAULT_OPTIONS, PodOptions

CORPUS = FIXTURES / "podspecs" / "corpus.json"
_CASES: list[dict[str, Any]] = json.loads(CORPUS.read_text())["cases"] if CORPUS.exists() else []


def unknown_field_errors(spec: Any, opts: PodOptions, spec_path: FieldPath) -> Errors:
    """Strict decoding (`fieldValidation=Strict`, what `kubectl apply` asks for): each field the
    minor's schema lacks refuses the whole object (400 `unknown field "<path>"`), as type errors.
    Only the corpus, recorded strict, needs it: the webhook sees what default decoding kept."""
    found = drops._walk(copy.deepcopy(spec), drops._plan(opts).unknown, None)
    return [type_invalid(spec_path.child(*d.path), d.path[-1], f'unknown field "{spec_path.child(*d.path)}"') for d in found]


def _offline(case: dict[str, Any]) -> bool:
    return not case.get("not_knowable_offline")


def _ours(case: dict[str, Any]) -> list[Any]:
    """The corpus was recorded with `fieldValidation=Strict`: a field 1.28 does not know refuses
    the Pod before anything is validated."""
    strict = unknown_field_errors(case["pod"].get("spec"), DEFAULT_OPTIONS, FieldPath.of("spec"))
    return strict or validate_pod_create(apply_pod_defaults(case["pod"]))


def agrees(case: dict[str, Any]) -> bool:
    """The port gives the recorded verdict and causes."""
    verdict, errs = case["pod_verdict"], _ours(case)
    if verdict["allowed"]:
        return not errs
    if verdict["code"] == 400:
        return bool(errs) and all(e.kind == "FieldValueTypeInvalid" and e.detail in (verdict["message"] or "") for e in errs)
    recorded = [(c["reason"], c["field"], c["message"]) for c in verdict["causes"]]
    ours = [(e.kind, e.field, e.body()) for e in errs]
    if verdict.get("cause_order_varies"):
        return Counter(recorded) == Counter(ours)
    return recorded == ours


@pytest.mark.skipif(not _CASES, reason="the corpus is not recorded yet")
@pytest.mark.parametrize("case", [c for c in _CASES if _offline(c)], ids=lambda c: c["name"])
def test_the_port_agrees_with_the_api_server(case):
    verdict = case["pod_verdict"]
    ours = [(e.kind, e.field, e.body()) for e in _ours(case)]
    recorded = [(c["reason"], c["field"], c["message"]) for c in verdict["causes"]]
    assert agrees(case), f"recorded {verdict['code']} {verdict['message']!r}\n recorded causes: {recorded}\n ours: {ours}"


@pytest.mark.skipif(not _CASES, reason="the corpus is not recorded yet")
def test_every_left_out_case_says_why():
    left_out = [c for c in _CASES if not _offline(c)]
    assert all(isinstance(c["not_knowable_offline"], str) and c["not_knowable_offline"] for c in left_out)
