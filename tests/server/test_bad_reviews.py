"""Malformed reviews get an answer, never a crash: the fuzz findings as regression cases, a
structure-aware fuzz test over the recorded reviews, bounded metric labels and log lines."""

from __future__ import annotations

import copy
import json
import logging

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from siteclient import SiteClient  # noqa: E402  (tests/server is on sys.path via conftest)
from support import ADMISSION_FIXTURES, FIXTURES
from support.examples import examples

from webhook.admission.review import MAX_NESTING
from webhook.config import compose
from webhook.logs import JsonFormatter
from webhook.policies import NoLookups
from webhook.server.app import create_app
from webhook.servesettings import ServeSettings
from webhook.serving import metrics

FINDINGS = FIXTURES / "fuzz-findings"

# What each minimal input must get now: ("http", status) when no review can be read (no uid),
# ("review", allowed, code) when the review is answered (code None = allowed without status).
EXPECTED = {
    "min-apiVersion-nested-300": ("http", 400),
    "min-asp-metric-name-list": ("review", False, 422),
    "min-asp-ratio-numeratorRole-list": ("review", False, 422),
    "min-asp-targetValue-1E-valid-quantity": ("review", True, None),
    "min-asp-targetValue-1Ei-valid-quantity": ("review", True, None),
    "min-asp-targetValue-exponent-5000-digits": ("review", False, 422),
    "min-cronhpa-schedule-arabic-indic-digit": ("review", False, 422),
    "min-cronhpa-schedule-step-superscript": ("review", False, 422),
    "min-cronhpa-schedule-superscript-two": ("review", False, 422),
    "min-display-name-generateName-int": ("review", True, None),
    "min-display-name-metadata-list-validate": ("review", True, None),
    "min-display-name-metadata-string": ("review", True, None),
    "min-dryRun-zero": ("review", False, 400),
    "min-kind-nested-300": ("review", False, 400),  # uid and apiVersion readable: answered as a review
    "min-ms-maxUnavailable-400-digit-percent": ("review", False, 422),
    "min-ms-maxUnavailable-5000-digit-percent": ("review", False, 422),
    "min-ms-replicas-nested-990": ("review", False, 400),
    "min-ms-role-name-list-with-gangpolicy": ("review", False, 422),
    "min-ms-roles-string": ("review", False, 422),
    "min-operation-nested-300": ("review", False, 400),
    "min-pod-schedulerName-nested-990": ("review", False, 400),
    "min-request-kind-group-nested-1000": ("review", False, 400),
    "min-userInfo-empty-list": ("review", False, 400),
    "min-username-nested-1000": ("review", False, 400),
    "min-username-nested-300-log-line-lost": ("review", False, 400),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    settings = compose(ServeSettings, certs_dir=tmp_path_factory.mktemp("certs"))
    return SiteClient(create_app(settings, lookups=NoLookups()))


def _answer(client, path, body):
    resp = client.post(path, data=body, content_type="application/json")
    assert resp.status_code < 500, resp.get_data(as_text=True)[:300]
    return resp


def test_every_finding_is_listed():
    assert {p.stem for p in FINDINGS.glob("min-*.body")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fuzz_finding_gets_the_expected_answer(client, name, caplog):
    meta = json.loads((FINDINGS / f"{name}.json").read_text())
    body = (FINDINGS / f"{name}.body").read_bytes()
    with caplog.at_level(logging.DEBUG, logger="servinggate.review"):
        resp = _answer(client, meta["path"], body)
    expected = EXPECTED[name]
    if expected[0] == "http":
        assert resp.status_code == expected[1]
        assert resp.get_json()["kind"] == "Status"
        return
    assert resp.status_code == 200
    answer = resp.get_json()["response"]
    assert answer["uid"] == orjson.loads(body)["request"]["uid"]
    assert answer["allowed"] is expected[1], answer
    assert (answer.get("status") or {}).get("code") == expected[2], answer
    # every answered review is logged (a denial at info, an allowed review without audit
    # findings at debug), and the line can be written (bounded, JSON)
    records = [r for r in caplog.records if r.name == "servinggate.review"]
    assert records, "review not logged"
    assert records[-1].levelno == (logging.DEBUG if expected[1] else logging.INFO)
    line = JsonFormatter().format(records[-1])
    assert len(line) < 4096


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 300, 500, 990, 1023])
def test_deep_values_are_answered_400_naming_the_limit(client, depth):
    doc = json.loads((ADMISSION_FIXTURES / "pods-create-kthena-entry-complete-mutating.json").read_text())
    doc["request"]["object"]["spec"]["schedulerName"] = "@DEEP@"
    levels = depth - 4  # the value sits 4 levels below the review's root
    body = json.dumps(doc).replace('"@DEEP@"', "[" * levels + "]" * levels).encode()
    resp = _answer(client, "/mutate", body)
    answer = resp.get_json()["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 400
    assert f"nested more than {MAX_NESTING} levels" in answer["status"]["message"]


def test_values_just_below_the_limit_are_judged_normally(client):
    doc = json.loads((ADMISSION_FIXTURES / "pods-create-kthena-entry-complete-mutating.json").read_text())
    deep: list = []
    node = deep
    for _ in range(MAX_NESTING - 10):
        node.append([])
        node = node[0]
    doc["request"]["object"]["metadata"]["annotations"]["example.com/deep"] = deep
    answer = _answer(client, "/mutate", json.dumps(doc).encode()).get_json()["response"]
    assert answer["allowed"] is True


def test_invented_resources_do_not_create_metric_series(client):
    doc = json.loads((ADMISSION_FIXTURES / "pods-create-kthena-entry-complete-mutating.json").read_text())

    def series() -> int:
        return sum(len(m.samples) for m in metrics.REQUESTS.collect())

    for i in range(3):  # warm up the label set of an unknown resource
        doc["request"]["resource"]["resource"] = f"warm{i}"
        _answer(client, "/validate", json.dumps(doc).encode())
    from webhook.policies import REGISTRY

    before, cached = series(), len(REGISTRY._index)
    for i in range(1100):  # more than the cache's bound
        doc["request"]["resource"]["resource"] = f"invented{i}"
        doc["request"]["operation"] = "CREATE"
        _answer(client, "/validate", json.dumps(doc).encode())
    assert series() == before
    assert len(REGISTRY._index) <= max(cached, 1024), "the rule-match cache grew with invented resources"
    labels = {s.labels.get("resource") for m in metrics.REQUESTS.collect() for s in m.samples}
    assert not any(str(v).startswith("invented") for v in labels)


def test_a_huge_username_is_clipped_in_the_log_line(client, caplog):
    doc = json.loads((ADMISSION_FIXTURES / "pods-create-kthena-entry-complete-mutating.json").read_text())
    doc["request"]["userInfo"]["username"] = "u" * 100_000
    with caplog.at_level(logging.DEBUG, logger="servinggate.review"):
        _answer(client, "/mutate", json.dumps(doc).encode())
    record = [r for r in caplog.records if r.name == "servinggate.review"][-1]
    assert len(JsonFormatter().format(record)) < 2048


# ---- structure-aware fuzzing over the recorded reviews --------------------------------------

REVIEWS = [(p.stem, json.loads(p.read_text())) for p in sorted(ADMISSION_FIXTURES.glob("*.json"))]

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "1E", "1Ei", "1i", "9" * 5000 + "%", "1e" + "9" * 5000, "-1", "0", "*/²", "١", "a" * 300]),
)
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=8)


def _paths(node, prefix=()):
    """Every path into a JSON document (dict keys and list indexes)."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated_reviews(draw):
    name, original = draw(st.sampled_from(REVIEWS))
    doc = copy.deepcopy(original)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(_values)
    endpoint = "/mutate" if name.endswith("-mutating") else "/validate"
    return endpoint, doc


# 500 generated reviews: the minimal fuzz findings above (EXPECTED) are the explicit cases of this
# property, and benchmarks/fuzz.py runs the long fuzz against the real server.
@hsettings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=mutated_reviews())
def test_fuzzed_reviews_are_answered_without_a_crash(client, case):
    endpoint, doc = case
    resp = _answer(client, endpoint, orjson.dumps(doc))
    body = resp.get_json()
    if resp.status_code == 200:
        answer = body["response"]
        code = (answer.get("status") or {}).get("code")
        assert code != 500, answer
    else:
        assert resp.status_code in (400, 413, 415, 422), resp.status_code
        assert body["kind"] == "Status"
