"""What the review log shows: a line a person needs (a denial, audit findings) at info, an
allowed review without audit findings only at debug, and every review with --log-every-review."""

from __future__ import annotations

import io
import logging

import pytest
from siteclient import SiteClient  # noqa: E402  (tests/server is on sys.path via conftest)
from support import ADMISSION_FIXTURES

from webhook.config import compose
from webhook.logs import JsonFormatter
from webhook.policies import NoLookups
from webhook.server.app import create_app
from webhook.servesettings import ServeSettings

ALLOWED = (ADMISSION_FIXTURES / "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json").read_bytes()
DENIED = (ADMISSION_FIXTURES / "autoscalingpolicies-create-min-greater-than-max-validating.json").read_bytes()


def client(tmp_path, **overrides):
    settings = compose(ServeSettings, certs_dir=tmp_path, **overrides)
    return SiteClient(create_app(settings, lookups=NoLookups()))


def reviews_logged(caplog, level: int = logging.DEBUG) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "servinggate.review" and r.levelno >= level]


def post(app, path: str, body: bytes) -> dict:
    resp = app.post(path, data=body, content_type="application/json")
    assert resp.status_code == 200
    return resp.get_json()["response"]


def test_an_allowed_review_without_audit_findings_is_logged_at_debug_only(tmp_path, caplog):
    app = client(tmp_path)
    with caplog.at_level(logging.DEBUG, logger="servinggate.review"):
        assert post(app, "/mutate", ALLOWED)["allowed"] is True
    assert [r.levelno for r in reviews_logged(caplog)] == [logging.DEBUG]


def test_a_denial_is_logged_at_info(tmp_path, caplog):
    app = client(tmp_path)
    with caplog.at_level(logging.INFO, logger="servinggate.review"):
        assert post(app, "/validate", DENIED)["allowed"] is False
    (record,) = reviews_logged(caplog, logging.INFO)
    assert record.msg["allowed"] is False and record.msg["decidedBy"] == ["autoscalingpolicies.bounds"]


def test_an_allowed_review_with_audit_findings_is_logged_at_info(tmp_path, caplog):
    app = client(tmp_path, rule_actions=(("autoscalingpolicies.bounds", "audit"),))
    with caplog.at_level(logging.INFO, logger="servinggate.review"):
        assert post(app, "/validate", DENIED)["allowed"] is True
    (record,) = reviews_logged(caplog, logging.INFO)
    assert record.msg["audit"] and record.msg["audit"][0].startswith("[autoscalingpolicies.bounds]")


def test_log_every_review_logs_allowed_reviews_at_info(tmp_path, caplog):
    app = client(tmp_path, log_every_review=True)
    with caplog.at_level(logging.INFO, logger="servinggate.review"):
        post(app, "/mutate", ALLOWED)
    (record,) = reviews_logged(caplog, logging.INFO)
    assert record.msg["allowed"] is True and record.msg["patchOps"] > 0


@pytest.mark.parametrize("every, most", [(False, 20), (True, 4096)])
def test_bytes_logged_per_allowed_review_at_the_default_level(tmp_path, every, most):
    """The issue's budget: at most 20 bytes of log per allowed review at the default settings
    (`info`); with --log-every-review the full line is back."""
    app = client(tmp_path, log_every_review=every)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        for _ in range(50):
            post(app, "/mutate", ALLOWED)
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    per_review = len(out.getvalue().encode()) / 50
    assert per_review <= most
    if every:
        assert per_review > 100
