"""The HTTP layer through Flask's test client: exact answers for every kind of bad input."""

from __future__ import annotations

import json
import logging

import pytest
from siteclient import SiteClient  # noqa: E402  (tests/server is on sys.path via conftest)
from support import ADMISSION_FIXTURES as FIXTURES

from webhook.admission import allowed
from webhook.config import compose
from webhook.policies import DictLookups, NoLookups, Registry
from webhook.policies.registry import Target
from webhook.server.app import create_app
from webhook.servesettings import ServeSettings
from webhook.serving import metrics

POD_MUTATE = (FIXTURES / "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json").read_bytes()


@pytest.fixture
def settings(tmp_path):
    return compose(ServeSettings, certs_dir=tmp_path, max_body_bytes=64 * 1024)


@pytest.fixture
def client(settings):
    return SiteClient(create_app(settings, lookups=NoLookups()))


def status_of(resp):
    body = resp.get_json()
    assert resp.mimetype == "application/json"
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == resp.status_code
    return body


def test_get_on_review_endpoint_is_405_json(client):
    resp = client.get("/validate")
    assert resp.status_code == 405
    assert "method GET not allowed on /validate" in status_of(resp)["message"]


def test_unknown_path_is_404_json(client):
    resp = client.post("/nope", data=b"{}", content_type="application/json")
    assert resp.status_code == 404 and "no such path /nope" in status_of(resp)["message"]


def test_wrong_content_type_is_415(client):
    resp = client.post("/validate", data=POD_MUTATE, content_type="text/plain")
    assert resp.status_code == 415
    assert "Content-Type must be application/json, got 'text/plain'" in status_of(resp)["message"]
    assert resp.get_data() == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        b'"Content-Type must be application/json, got \'text/plain\'","reason":"UnsupportedMediaType","code":415}'
    )


def test_json_with_charset_is_accepted(client):
    resp = client.post("/mutate", data=POD_MUTATE, content_type="application/json; charset=utf-8")
    assert resp.status_code == 200 and resp.get_json()["response"]["allowed"] is True


def test_malformed_json_is_400(client):
    resp = client.post("/validate", data=b'{"apiVersion": ', content_type="application/json")
    assert resp.status_code == 400 and "body is not valid JSON" in status_of(resp)["message"]


def test_empty_body_is_400(client):
    resp = client.post("/validate", data=b"", content_type="application/json")
    assert resp.status_code == 400 and "body is empty" in status_of(resp)["message"]


@pytest.mark.parametrize(
    "doc, needle",
    [
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "request: required"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"operation": "CREATE"}}, "request.uid: required"),
        ({"apiVersion": "admission.k8s.io/v9", "kind": "AdmissionReview", "request": {"uid": "1"}}, 'apiVersion: unsupported value "admission.k8s.io/v9"'),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "Pod", "request": {"uid": "1"}}, 'kind: must be "AdmissionReview"'),
    ],
)
def test_unusable_reviews_are_400_naming_the_field(client, doc, needle):
    resp = client.post("/validate", data=json.dumps(doc), content_type="application/json")
    assert resp.status_code == 400 and needle in status_of(resp)["message"]


def test_review_with_uid_but_bad_operation_is_a_denied_review(client):
    doc = json.loads(POD_MUTATE)
    doc["request"]["operation"] = "PATCH"
    resp = client.post("/mutate", data=json.dumps(doc), content_type="application/json")
    assert resp.status_code == 200
    body = resp.get_json()["response"]
    assert body["uid"] == doc["request"]["uid"] and body["allowed"] is False
    assert body["status"]["code"] == 400 and "request.operation" in body["status"]["message"]


def test_the_application_leaves_the_body_limit_to_the_worker(client, settings):
    # One owner (framing.Limits): through the real server an oversized body is a 413 before the
    # application runs (test_tls_server: test_bad_input_matrix_over_tls and
    # test_oversized_chunked_body_is_413_over_tls; test_slow_clients:
    # test_a_client_still_sending_a_refused_body_reads_the_413_and_a_clean_close).
    padded = POD_MUTATE + b" " * settings.listener.max_body_bytes
    resp = client.post("/mutate", data=padded, content_type="application/json")
    assert resp.status_code == 200 and resp.get_json()["response"]["allowed"] is True


def test_default_limit_is_7_mib():
    assert ServeSettings().listener.max_body_bytes == 7 * 1024 * 1024


def test_unregistered_resource_is_allowed_without_patch(client):
    body = (FIXTURES / "podgroups-create-subgroup-policy-mutating.json").read_bytes()
    resp = client.post("/mutate", data=body, content_type="application/json").get_json()["response"]
    assert resp == {"uid": json.loads(body)["request"]["uid"], "allowed": True}


def test_pod_mutation_end_to_end_through_the_registry(settings):
    # the pod's ModelServing is not among the known objects: its scheduler choice is the default
    client = SiteClient(create_app(settings, lookups=DictLookups([])))
    resp = client.post("/mutate", data=POD_MUTATE, content_type="application/json").get_json()
    assert resp["response"]["patchType"] == "JSONPatch"
    # routine changes are recorded for the audit log, not shown to the client as warnings
    assert "warnings" not in resp["response"]
    notes = resp["response"]["auditAnnotations"]
    assert notes["rules"] == "pods.default-scheduler,pods.gang-labels"
    assert "[pods.default-scheduler] set spec.schedulerName to 'volcano'" in notes["changes"]


def test_a_rule_that_raises_gives_a_500_review_with_the_uid_and_a_logged_traceback(settings, caplog):
    registry = Registry()

    pods = Target(group="", resource="pods", versions=("v1",), operations=("CREATE",))

    @registry.validates_request("boom", pods)
    def boom(req, ctx):
        raise KeyError("spec")

    @registry.validates("fine", pods)
    def fine(obj):
        return allowed()

    client = SiteClient(create_app(settings, registry=registry, lookups=NoLookups()))
    doc = json.loads(POD_MUTATE)
    with caplog.at_level(logging.ERROR):
        resp = client.post("/validate", data=POD_MUTATE, content_type="application/json")
    assert resp.status_code == 200
    body = resp.get_json()["response"]
    assert body["uid"] == doc["request"]["uid"] and body["allowed"] is False
    assert body["status"]["code"] == 500 and "rule boom" in body["status"]["message"]
    assert "KeyError" in caplog.text and "Traceback" in caplog.text


def test_healthz_and_readyz(client, settings):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    not_ready = client.get("/readyz")
    assert not_ready.status_code == 503  # no certificate in the folder yet
    from webhook.certs.files import ensure_dev_certs

    ensure_dev_certs(settings.listener.certs_dir, "svc", "ns")
    ready = SiteClient(create_app(settings, lookups=NoLookups())).get("/readyz")
    assert ready.status_code == 200 and "valid until" in ready.get_json()["detail"]


def test_readyz_fails_for_an_expired_certificate(settings):
    import datetime as dt

    from webhook.certs.files import write_file
    from webhook.certs.issuing import generate_ca, generate_serving

    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=400)
    ca = generate_ca(now=long_ago)
    pair = generate_serving(ca, ["localhost"], days=30, now=long_ago)
    write_file(settings.listener.certs_dir / "tls.crt", pair.cert_pem, 0o644)
    write_file(settings.listener.certs_dir / "tls.key", pair.key_pem, 0o600)
    resp = SiteClient(create_app(settings, lookups=NoLookups())).get("/readyz")
    assert resp.status_code == 503 and "expired" in resp.get_json()["detail"]


def test_metrics_count_reviews(client):
    client.post("/mutate", data=POD_MUTATE, content_type="application/json")
    text = metrics.render()[0].decode()
    assert 'servinggate_admission_requests_total{allowed="true",code="200",endpoint="mutate",operation="CREATE",resource="pods"}' in text
    assert "servinggate_admission_request_duration_seconds_bucket" in text


def test_metrics_name_each_rule_verdict_and_the_build(settings):
    from webhook import __version__
    from webhook.config import load

    configured = load(
        ServeSettings, {"certs_dir": str(settings.listener.certs_dir)}, environ={"SERVINGGATE_RULE_ACTIONS": "modelservings.reserved-labels=audit"}
    )
    client = SiteClient(create_app(configured, lookups=DictLookups([])))
    text = metrics.render()[0].decode()
    # present from the start, at zero, with the configured action
    assert 'servinggate_rule_verdicts_total{action="audit",rule="modelservings.reserved-labels",verdict="fail"} 0.0' in text
    assert f'servinggate_build_info{{version="{__version__}"}} 1.0' in text
    client.post("/mutate", data=POD_MUTATE, content_type="application/json")
    text = metrics.render()[0].decode()
    assert 'servinggate_rule_verdicts_total{action="on",rule="pods.gang-labels",verdict="pass"}' in text
    line = next(row for row in text.splitlines() if row.startswith('servinggate_rule_verdicts_total{action="on",rule="pods.gang-labels",verdict="pass"}'))
    assert float(line.split()[-1]) >= 1
