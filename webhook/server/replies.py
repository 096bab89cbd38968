"""What the HTTP endpoints answer: a status and a JSON body, with Content-Type and Content-Length
as the only headers.

A review endpoint's answer is a `Reply`: `WebhookFlask` sends it to the WSGI server as it is,
Flask's own path wraps it in a `JsonAnswer` (a werkzeug Response). Both write the same status
line and headers, so a client cannot tell which path answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from flask import Response
from werkzeug.http import HTTP_STATUS_CODES

from ..admission.status import Status
from . import metrics

JSON = "application/json"


class JsonAnswer(Response):
    """A JSON answer sent as built. werkzeug's general path to the WSGI server (header fix-ups,
    ranges, conditional answers, iterable bodies) costs more per review than the rules do, and
    none of it applies to a body whose headers are always Content-Type and Content-Length."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response(self.status, self.headers.to_wsgi_list())
        return [self.get_data()]


# The status lines werkzeug writes ("415 UNSUPPORTED MEDIA TYPE"), so both paths send the same bytes.
_STATUS_LINES = {code: f"{code} {phrase.upper()}" for code, phrase in HTTP_STATUS_CODES.items()}


@dataclass(frozen=True, slots=True)
class Reply:
    """What a review endpoint answers: an HTTP status and a JSON body (Content-Type and
    Content-Length are its only headers). A `Response` only on Flask's own path (`response`);
    `WebhookFlask.wsgi_app` sends it to the server directly (`send`)."""

    code: int
    body: bytes

    def response(self) -> Response:
        return JsonAnswer(self.body, status=self.code, mimetype=JSON)

    @property
    def status(self) -> str:
        return _STATUS_LINES[self.code]

    def headers(self) -> list[tuple[str, str]]:
        return [("Content-Type", JSON), ("Content-Length", str(len(self.body)))]

    def send(self, start_response: Any) -> list[bytes]:
        start_response(self.status, self.headers())
        return [self.body]


# Not an answer: the review needs a lookup that waits for the API server, and its caller said it
# may not wait (the worker's event loop); it runs again on a thread. Compared by identity.
DEFERRED = Reply(0, b"")


def json_response(body: Any, status: int = 200) -> Response:
    """A JSON answer on Flask's own path (health, readiness, Flask's errors)."""
    return Reply(status, orjson.dumps(body)).response()


def http_error(status: Status) -> Reply:
    """An HTTP error answer (a whole metav1.Status), counted as a request refused before review."""
    metrics.child(metrics.BAD_REQUESTS, str(status.code)).inc()
    return Reply(status.code, orjson.dumps(status.http_dict()))
