"""The review endpoints' direct path (the worker's `Application`, through `WebhookFlask.direct_reply`)
answers byte for byte as their Flask routes do, and gives way to Flask's path whenever the
application has a request hook."""

from __future__ import annotations

import json
import logging

import pytest
from support import ADMISSION_FIXTURES as FIXTURES
from werkzeug.test import EnvironBuilder

from webhook.config import compose
from webhook.policies import Lookups, NoLookups
from webhook.policies.context import NOT_HERE
from webhook.server.app import create_app
from webhook.server.calls import Answer, Application
from webhook.server.http1 import Request
from webhook.serving import metrics
from webhook.serving import reviewing as reviewing_module
from webhook.serving.reviewing import DEFERRED
from webhook.settings.serve import ServeSettings

POD_MUTATE = (FIXTURES / "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json").read_bytes()
MS_VALIDATE = (FIXTURES / "modelservings-create-gang-example-validating.json").read_bytes()
REFUSED = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1", "operation": "EXPLODE"}}).encode()

CASES = [
    ("/mutate", POD_MUTATE, "application/json"),  # patched, with a warning and audit annotations
    ("/validate", MS_VALIDATE, "application/json"),
    ("/validate", POD_MUTATE, "application/json; charset=utf-8"),
    ("/mutate", REFUSED, "application/json"),  # a uid but no usable operation: a denied review
    ("/mutate", b"{not json", "application/json"),  # 400 Status
    ("/mutate", b"", "application/json"),  # 400 Status
    ("/validate", POD_MUTATE, "text/plain"),  # 415 Status
]


@pytest.fixture
def app(tmp_path):
    return create_app(compose(ServeSettings, certs_dir=tmp_path), lookups=NoLookups())


def call(wsgi_app, path: str, body: bytes, content_type: str) -> tuple[str, list[tuple[str, str]], bytes]:
    environ = EnvironBuilder(path=path, method="POST", data=body, content_type=content_type).get_environ()
    started: list = []
    chunks = wsgi_app(environ, lambda status, headers, exc_info=None: started.append((status, headers)))
    return started[0][0], list(started[0][1]), b"".join(chunks)


def parsed(path: str, body: bytes, content_type: str) -> Request:
    """The request as the worker's reader gives it."""
    headers = [(b"Content-Type", content_type.encode()), (b"Content-Length", str(len(body)).encode())]
    return Request(b"POST", path.encode(), (1, 1), headers, body, keep_alive=True)


def direct(app, path: str, body: bytes, content_type: str) -> Answer:
    return Application(app).in_thread(parsed(path, body, content_type), ("127.0.0.1", 1), ("127.0.0.1", 2))


@pytest.mark.parametrize(("path", "body", "content_type"), CASES)
def test_direct_answer_is_the_flask_routes_answer(app, path, body, content_type):
    answer = direct(app, path, body, content_type)
    status, fields, routed = call(app, path, body, content_type)
    assert (answer.code, answer.fields, answer.body) == (int(status.split()[0]), fields, routed)
    assert answer.fields == [("Content-Type", "application/json"), ("Content-Length", str(len(answer.body)))]
    assert Application(app).on_loop(parsed(path, body, content_type)) == answer  # no lookup: answered on the loop


def test_a_request_hook_sends_reviews_through_flask(app):
    seen: list[str] = []
    app.before_request(lambda: seen.append("before"))  # a hook added after create_app still runs
    assert Application(app).on_loop(parsed("/mutate", POD_MUTATE, "application/json")) is None
    answer = direct(app, "/mutate", POD_MUTATE, "application/json")
    assert seen == ["before"]
    assert answer.code == 200 and json.loads(answer.body)["response"]["allowed"] is True


def test_other_methods_and_paths_stay_flasks(app):
    for method, path, code in (("GET", "/mutate", "405"), ("POST", "/mutate/", "404"), ("POST", "/healthz", "405")):
        environ = EnvironBuilder(path=path, method=method, data=b"{}", content_type="application/json").get_environ()
        started: list = []
        body = b"".join(app(environ, lambda status, headers, exc_info=None, started=started: started.append(status)))
        assert started[0].startswith(code) and json.loads(body)["kind"] == "Status"


@pytest.mark.parametrize("path_taken", ["direct", "flask"])
def test_a_bug_outside_the_review_is_a_json_500(app, monkeypatch, caplog, path_taken):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(reviewing_module, "parse_review", broken)  # a bug before the engine's containment
    with caplog.at_level(logging.ERROR, logger="servinggate.server"):
        if path_taken == "direct":
            answer = direct(app, "/mutate", POD_MUTATE, "application/json")
            status, body = f"{answer.code}", answer.body
        else:
            status, _, body = call(app, "/mutate", POD_MUTATE, "application/json")
    assert status.startswith("500")
    assert json.loads(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "internal error in the webhook; see its log",
        "reason": "InternalError",
        "code": 500,
    }
    assert any("unhandled error on POST /mutate" in r.getMessage() and "boom" in r.getMessage() for r in caplog.records)


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


def test_a_review_that_may_not_wait_is_deferred_before_anything_is_recorded(tmp_path):
    """The event loop's call (may_wait=False): a lookup the store cannot answer stops the review
    with DEFERRED, nothing counted or logged; the thread's call then waits and answers."""
    lookups = StoreOnly(None)
    app = create_app(compose(ServeSettings, certs_dir=tmp_path), lookups=lookups)

    before = requests_counted()
    assert app.direct_reply("/mutate", "application/json", POD_MUTATE, may_wait=False) is DEFERRED
    assert (lookups.tried, lookups.asked, requests_counted()) == (1, 0, before)
    reply = app.direct_reply("/mutate", "application/json", POD_MUTATE)
    assert reply is not DEFERRED and reply.code == 200 and lookups.asked == 1
    assert requests_counted() == before + 1


def test_a_review_without_lookups_is_answered_where_it_may_not_wait(app):
    reply = app.direct_reply("/validate", "application/json", MS_VALIDATE, may_wait=False)
    assert reply is not DEFERRED and reply.code == 200
