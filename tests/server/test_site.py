"""The one seam (webhook/server/site.py): every request through the route table to one `Answer`,
a review on the event loop, what may wait (a lookup, a large body, Flask) left for a thread as a
`Later` that continues from what was parsed, and a Flask application with a request hook refused."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest
from siteclient import SiteClient  # noqa: E402  (tests/server is on sys.path via conftest)
from support import ADMISSION_FIXTURES as FIXTURES

from webhook.config import compose
from webhook.policies import Lookups, NoLookups
from webhook.policies.context import NOT_HERE
from webhook.server.app import create_app
from webhook.server.http1 import HttpRequest
from webhook.server.site import ON_LOOP_MAX, SiteError
from webhook.server.worker import WebhookWorker
from webhook.servesettings import ServeSettings
from webhook.serving import metrics
from webhook.serving import reviewing as reviewing_module
from webhook.serving.answer import Answer, Later

POD_MUTATE = (FIXTURES / "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json").read_bytes()
MS_VALIDATE = (FIXTURES / "modelservings-create-gang-example-validating.json").read_bytes()
REFUSED = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1", "operation": "EXPLODE"}}).encode()

REVIEWS = [
    ("/mutate", POD_MUTATE, "application/json", 200),  # patched, with a warning and audit annotations
    ("/validate", MS_VALIDATE, "application/json", 200),
    ("/validate", POD_MUTATE, "application/json; charset=utf-8", 200),
    ("/mutate", REFUSED, "application/json", 200),  # a uid but no usable operation: a denied review
    ("/mutate", b"{not json", "application/json", 400),  # Status
    ("/mutate", b"", "application/json", 400),  # Status
    ("/validate", POD_MUTATE, "text/plain", 415),  # Status
]


@pytest.fixture
def site(tmp_path):
    return create_app(compose(ServeSettings, certs_dir=tmp_path), lookups=NoLookups())


def parsed(method: str, target: str, body: bytes = b"", content_type: str = "application/json") -> HttpRequest:
    """The request as the worker's reader gives it."""
    headers = [(b"Content-Type", content_type.encode()), (b"Content-Length", str(len(body)).encode())]
    return HttpRequest(method.encode(), target.encode(), (1, 1), headers, body, True, ("127.0.0.1", 1), ("127.0.0.1", 2))


class Parses:
    """parse_review, counted."""

    def __init__(self, monkeypatch):
        self.calls, self.real = 0, reviewing_module.parse_review
        monkeypatch.setattr(reviewing_module, "parse_review", self)

    def __call__(self, body):
        self.calls += 1
        return self.real(body)


@pytest.mark.parametrize(("path", "body", "content_type", "code"), REVIEWS)
def test_a_review_is_answered_on_the_loop_as_json(site, path, body, content_type, code):
    answer = site.answer(parsed("POST", path, body, content_type))
    assert isinstance(answer, Answer) and answer.code == code  # not Later: no lookup waits here
    assert (answer.content_type, answer.fields, answer.closes) == ("application/json", (), False)
    doc = json.loads(answer.body)
    assert doc["kind"] == ("AdmissionReview" if code == 200 else "Status")


@pytest.mark.parametrize(
    ("method", "target", "code", "message"),
    [
        ("GET", "/mutate", 405, "method GET not allowed on /mutate; allowed: POST"),
        ("OPTIONS", "/validate", 405, "method OPTIONS not allowed on /validate; allowed: POST"),
        ("POST", "/healthz", 405, "method POST not allowed on /healthz; allowed: GET, HEAD"),
        ("POST", "/mutate/", 404, "no such path /mutate/; reviews go to /validate or /mutate"),
        ("OPTIONS", "*", 404, "no such path *; reviews go to /validate or /mutate"),
    ],
)
def test_what_the_table_does_not_take_is_a_json_status_from_the_table(site, method, target, code, message):
    answer = site.answer(parsed(method, target, b"{}"))
    assert isinstance(answer, Answer) and answer.code == code  # on the loop, without Flask
    doc = json.loads(answer.body)
    assert (doc["kind"], doc["status"], doc["message"], doc["code"]) == ("Status", "Failure", message, code)


def test_a_target_is_routed_by_its_decoded_path(site):
    answer = site.answer(parsed("POST", "/validat%65?x=1", MS_VALIDATE))
    assert isinstance(answer, Answer) and json.loads(answer.body)["kind"] == "AdmissionReview"


def test_flask_answers_the_probes_in_a_thread_and_head_is_get_without_a_body(site):
    later = site.answer(parsed("GET", "/healthz"))
    assert isinstance(later, Later)  # Flask runs in a pool thread, never on the loop
    assert later.resume() == Answer(200, b'{"status":"ok"}', "application/json")
    head = SiteClient(site).open("HEAD", "/healthz")
    assert (head.status_code, head.headers["content-length"], head.body) == (200, "15", b"")


def test_a_large_body_is_not_parsed_on_the_loop(site, monkeypatch):
    parses = Parses(monkeypatch)
    padded = MS_VALIDATE + b" " * ON_LOOP_MAX
    later = site.answer(parsed("POST", "/validate", padded))
    assert isinstance(later, Later) and parses.calls == 0
    answer = later.resume()
    assert answer.code == 200 and json.loads(answer.body)["kind"] == "AdmissionReview" and parses.calls == 1


@pytest.mark.parametrize("size", ["small", "large"])
def test_a_bug_outside_the_review_is_a_json_500(site, monkeypatch, caplog, size):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(reviewing_module, "parse_review", broken)  # a bug before the engine's containment
    body = POD_MUTATE + (b" " * ON_LOOP_MAX if size == "large" else b"")
    with caplog.at_level(logging.ERROR, logger="servinggate.server"):
        sent = SiteClient(site).post("/mutate", body, "application/json")
    assert sent.status_code == 500 and sent.headers["connection"] == "keep-alive"
    assert sent.get_json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "internal error in the webhook; see its log",
        "reason": "InternalError",
        "code": 500,
    }
    assert any("unhandled error on POST /mutate" in r.getMessage() and "boom" in r.getMessage() for r in caplog.records)


def test_a_bug_in_a_flask_view_is_a_json_500(site, caplog):
    site.flask.view_functions["GET /healthz"] = lambda: 1 / 0
    with caplog.at_level(logging.ERROR, logger="servinggate.server"):
        sent = SiteClient(site).get("/healthz")
    assert sent.status_code == 500 and sent.get_json()["reason"] == "InternalError"
    assert any("unhandled error on GET /healthz" in r.getMessage() for r in caplog.records)


def test_a_flask_request_hook_or_a_route_outside_the_table_is_refused(site, tmp_path):
    site.check()
    site.flask.before_request(lambda: None)
    with pytest.raises(SiteError, match=r"request hooks \(before_request\).*route table"):
        site.check()
    other = create_app(compose(ServeSettings, certs_dir=tmp_path), lookups=NoLookups())
    other.flask.add_url_rule("/debug", "debug", lambda: "")
    with pytest.raises(SiteError, match="outside the route table.*: /debug"):
        other.check()


def test_a_worker_boots_only_on_a_site_that_passes_its_check(site):
    worker = object.__new__(WebhookWorker)  # gunicorn's base worker loads what the app gives (load_wsgi)
    worker.app = SimpleNamespace(wsgi=lambda: site)
    worker.load_wsgi()
    assert worker.site is site
    site.flask.after_request(lambda response: response)  # added after the Site was made
    with pytest.raises(SiteError, match="after_request"):
        worker.load_wsgi()
    worker.app = SimpleNamespace(wsgi=lambda: site.flask)
    with pytest.raises(TypeError, match="serves a webhook.server.site.Site, not Flask"):
        worker.load_wsgi()


class StoreOnly(Lookups):
    """Lookups whose store holds nothing yet: `get` would ask the API server (answers `owner`),
    `try_get` says so without asking; each review uses them through a view (these are their own)."""

    def __init__(self, owner: dict | None):
        self.owner, self.asked, self.tried = owner, 0, 0

    def get(self, api_version, kind, namespace, name):
        self.asked += 1
        return self.owner

    def try_get(self, api_version, kind, namespace, name):
        self.tried += 1
        return NOT_HERE

    def for_review(self):
        return self


def requests_counted() -> float:
    return sum(s.value for m in metrics.REQUESTS.collect() for s in m.samples if s.name.endswith("_total"))


def test_a_review_whose_lookup_would_wait_continues_in_a_thread_from_its_parse(tmp_path, monkeypatch):
    """On the loop a lookup the store cannot answer leaves the review for later, nothing counted or
    logged; the thread judges the request already parsed, waiting for the lookup, and answers."""
    lookups = StoreOnly(None)
    site = create_app(compose(ServeSettings, certs_dir=tmp_path), lookups=lookups)
    parses = Parses(monkeypatch)

    before = requests_counted()
    later = site.answer(parsed("POST", "/mutate", POD_MUTATE))
    assert isinstance(later, Later)
    assert (lookups.tried, lookups.asked, requests_counted(), parses.calls) == (1, 0, before, 1)
    answer = later.resume()
    assert answer.code == 200 and json.loads(answer.body)["response"]["allowed"] is True
    assert (lookups.asked, requests_counted(), parses.calls) == (1, before + 1, 1)  # the body was not parsed again
