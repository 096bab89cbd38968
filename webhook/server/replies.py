"""What the HTTP endpoints answer: a status and a JSON body, with Content-Type and Content-Length
as the only headers.

A review endpoint's answer is a `Reply`: `WebhookFlask` sends it to the WSGI server as it is,
Flask's own path wraps it in a `JsonAnswer` (a werkzeug Response). Both write the same status
line and headers, so a client cannot tell which path answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import orjson
from flask import Response

from ..admission.status import Status
from . import metrics

JSON = "application/json"


class JsonAnswer(Response):
    """A JSON answer sent as built. werkzeug's general path to the WSGI server (header fix-ups,
    ranges, conditional answers, iterable bodies) costs more per review than the rules do, and
    none of it applies to a body whose headers are always Content-Type and Content-Length."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response(status_line(self.status_code), self.headers.to_wsgi_list())
        return [self.get_data()]


# "415 Unsupported Media Type": the standard reason phrases (RFC 9110), on every answer whoever
# gives it; the head writer (answering.http_head) uses these, whatever status text it was handed.
_STATUS_LINES = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}


def status_line(code: int) -> str:
    """The status code and its standard reason phrase ("Unknown" for a code without one)."""
    return _STATUS_LINES.get(code) or f"{code} Unknown"


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
        return status_line(self.code)

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
    metrics.refused(status.code)
    return Reply(status.code, orjson.dumps(status.http_dict()))
