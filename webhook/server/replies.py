"""How a review endpoint's `Reply` (webhook/serving/reviewing.py) goes out through Flask or WSGI:
a status and a JSON body, with Content-Type and Content-Length as the only headers.

Flask's own path wraps a reply in a `JsonAnswer` (a werkzeug Response); `WebhookFlask` sends it to
the WSGI server as it is (`send`). Both write the same status line and headers, so a client
cannot tell which path answered.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import orjson
from flask import Response

from ..serving.reviewing import JSON, Reply


class JsonAnswer(Response):
    """A JSON answer sent as built. werkzeug's general path to the WSGI server (header fix-ups,
    ranges, conditional answers, iterable bodies) costs more per review than the rules do, and
    none of it applies to a body whose headers are always Content-Type and Content-Length."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response(status_line(self.status_code), self.headers.to_wsgi_list())
        return [self.get_data()]


# "415 Unsupported Media Type": the standard reason phrases (RFC 9110), on every answer whoever
# gives it; the head writer uses these, whatever status text it was handed.
_STATUS_LINES = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}


def status_line(code: int) -> str:
    """The status code and its standard reason phrase ("Unknown" for a code without one)."""
    return _STATUS_LINES.get(code) or f"{code} Unknown"


def response(reply: Reply) -> Response:
    """A reply on Flask's own path."""
    return JsonAnswer(reply.body, status=reply.code, mimetype=JSON)


def send(reply: Reply, start_response: Any) -> list[bytes]:
    """A reply handed to the WSGI server directly."""
    start_response(status_line(reply.code), reply.headers())
    return [reply.body]


def json_response(body: Any, status: int = 200) -> Response:
    """A JSON answer on Flask's own path (health, readiness, Flask's errors)."""
    return response(Reply(status, orjson.dumps(body)))
