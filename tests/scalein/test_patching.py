"""The one write path of the reconciler (webhook/scalein/reconcile/patching.py), shared by the worker and
`reconcile --clear`: every answer of the API server becomes one outcome, and nothing raises; and
the guarded JSON Patches it sends, built there."""

from __future__ import annotations

import copy
import socket
import threading

import jsonpatch
import pytest
from kubernetes import client

from webhook.config import compose
from webhook.scalein.reconcile.health import Metrics
from webhook.scalein.reconcile.pacing import RateLimiter
from webhook.scalein.reconcile.patching import Patcher, clear_patch, write_patch
from webhook.scalein.settings import COST_KEY, RECORD_KEY

KEY = "default/p"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "annotations": {COST_KEY: "-5"}}}
SET = [
    {"op": "test", "path": "/metadata/annotations/" + COST_KEY.replace("/", "~1"), "value": "-5"},
    {"op": "replace", "path": "/metadata/annotations/" + COST_KEY.replace("/", "~1"), "value": "-7"},
]


def patcher(api_client: client.ApiClient, stop: threading.Event | None = None) -> tuple[Patcher, Metrics]:
    metrics = Metrics()
    return Patcher(client.CoreV1Api(api_client), RateLimiter(1000), metrics, stop or threading.Event()), metrics


def errors(metrics: Metrics, op: str, code: str) -> float:
    return metrics.registry.get_sample_value("servinggate_scalein_errors_total", {"op": op, "code": code}) or 0.0


def test_written_returns_the_pod_as_the_server_has_it(fake_api):
    api, api_client = fake_api((), [POD])
    p, metrics = patcher(api_client)
    outcome = p.send(KEY, SET, "write")
    assert outcome.status == "written" and outcome.pod is not None
    assert outcome.pod["metadata"]["annotations"][COST_KEY] == "-7"
    assert metrics.registry.get_sample_value("servinggate_scalein_writes_total", {"kind": "write"}) == 1


def test_a_failed_test_op_is_changed_and_a_missing_pod_is_gone(fake_api):
    api, api_client = fake_api((), [POD])
    p, metrics = patcher(api_client)
    stale = [dict(SET[0], value="-1"), SET[1]]
    assert p.send(KEY, stale, "write").status == "changed"
    assert metrics.registry.get_sample_value("servinggate_scalein_conflicts_total") == 1
    assert p.send("default/absent", SET, "write").status == "gone"
    assert p.read(KEY).status == "found" and p.read("default/absent").status == "gone"


def test_throttled_carries_retry_after_and_other_failures_count_by_op(fake_api):
    api, api_client = fake_api((), [POD])
    p, metrics = patcher(api_client)
    api.fault("PATCH", "/api/v1/namespaces/", 429, headers={"Retry-After": "3"})
    outcome = p.send(KEY, SET, "clear")
    assert (outcome.status, outcome.wait) == ("throttled", 3.0)
    assert errors(metrics, "clear", "429") == 1
    api.fault("PATCH", "/api/v1/namespaces/", 500)
    assert p.send(KEY, SET, "write").status == "failed"
    assert errors(metrics, "patch", "500") == 1


def test_no_answer_is_failed_not_raised():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = client.Configuration()
    conf.host = f"http://127.0.0.1:{port}"
    conf.retries = 0
    p, metrics = patcher(client.ApiClient(conf))
    outcome = p.send(KEY, SET, "write")
    assert (outcome.status, outcome.code) == ("failed", 0)
    assert errors(metrics, "patch", "0") == 1
    assert p.read(KEY).status == "failed" and errors(metrics, "read", "0") == 1


def test_nothing_is_sent_once_asked_to_stop(fake_api):
    api, api_client = fake_api((), [POD])
    stop = threading.Event()
    stop.set()
    p, _ = patcher(api_client, stop)
    assert p.send(KEY, SET, "write").status == "stopped"
    assert api.count("PATCH", "/") == 0


def test_clear_decides_again_when_the_pod_changed_under_it(s1, fake_api):
    """Someone sets their own cost between our list and our patch: the guarded patch fails, the
    pod is read again, and only our record goes; their cost stays."""
    import copy

    from webhook.scalein.reconcile import reconciling
    from webhook.scalein.settings import ReconcileSettings

    pods = copy.deepcopy(s1["pods"]["items"][:1])
    pods[0]["metadata"]["annotations"] = {COST_KEY: "-5", RECORD_KEY: "-5"}
    api, api_client = fake_api(s1["nodes"]["items"], pods)
    key = f"{pods[0]['metadata']['namespace']}/{pods[0]['metadata']['name']}"

    def someone_else_writes(_: str) -> None:
        with api.lock:
            api.pods[key]["metadata"]["annotations"][COST_KEY] = "9"

    api.before_patch = someone_else_writes
    assert reconciling.run(compose(ReconcileSettings, health_port=0), api_client, threading.Event(), clear=True) == 0
    assert api.annotations(key) == {COST_KEY: "9"}
    assert [c.status for c in api.calls("PATCH", "/pods/")] == [422, 200]


# ---- the patches, built where they are sent ---------------------------------------------------


def doc(annotations, rv="7"):
    meta = {"name": "p", "resourceVersion": rv}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta}


@pytest.mark.parametrize("annotations", [None, {}, {"x": "y"}, {COST_KEY: "-1", RECORD_KEY: "-1"}, {COST_KEY: "5"}, {RECORD_KEY: "-1"}])
def test_write_patch_applies_and_keeps_other_annotations(annotations):
    d = doc(copy.deepcopy(annotations) if annotations else ({} if annotations == {} else None))
    if annotations == {}:
        d["metadata"].pop("annotations")  # the API server omits an empty map
    ops = write_patch(d["metadata"].get("annotations"), "7", COST_KEY, RECORD_KEY, "-42")
    out = jsonpatch.apply_patch(d, ops)
    assert out["metadata"]["annotations"][COST_KEY] == out["metadata"]["annotations"][RECORD_KEY] == "-42"
    for k, v in (annotations or {}).items():
        if k not in (COST_KEY, RECORD_KEY):
            assert out["metadata"]["annotations"][k] == v
    assert all("~1" in o["path"] for o in ops if o["path"].startswith("/metadata/annotations/"))


@pytest.mark.parametrize(
    "seen, concurrent",
    [
        (None, lambda m: m.update(resourceVersion="8", annotations={"team": "x"})),  # map appeared
        ({"x": "y"}, lambda m: m.update(resourceVersion="8", annotations={"x": "y", COST_KEY: "9"})),  # cost appeared
        ({COST_KEY: "-1", RECORD_KEY: "-1"}, lambda m: m["annotations"].update({COST_KEY: "9"})),  # cost changed
    ],
)
def test_write_patch_fails_on_a_concurrent_edit(seen, concurrent):
    d = doc(copy.deepcopy(seen))
    ops = write_patch(seen, "7", COST_KEY, RECORD_KEY, "-42")
    concurrent(d["metadata"])
    with pytest.raises(jsonpatch.JsonPatchException):
        jsonpatch.apply_patch(d, ops)


def test_clear_patch_removes_only_what_we_wrote():
    ours = {COST_KEY: "-5", RECORD_KEY: "-5", "x": "y"}
    out = jsonpatch.apply_patch(doc(dict(ours)), clear_patch(ours, COST_KEY, RECORD_KEY))
    assert out["metadata"]["annotations"] == {"x": "y"}
    theirs = {COST_KEY: "100", RECORD_KEY: "-5"}
    out = jsonpatch.apply_patch(doc(dict(theirs)), clear_patch(theirs, COST_KEY, RECORD_KEY))
    assert out["metadata"]["annotations"] == {COST_KEY: "100"}
    assert clear_patch({COST_KEY: "100"}, COST_KEY, RECORD_KEY) == []
    assert clear_patch(None, COST_KEY, RECORD_KEY) == []
