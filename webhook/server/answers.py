"""Every answer's bytes: one function writes every head (`head`), whoever answers (a review on the
event loop, the Flask application in a thread, a refusal, the interim `100 Continue`).

The head carries the standard reason phrase, then Server, Date and Connection (gunicorn's order),
then the answer's own fields. An answer leaves in one write, head and body together: over TLS a
separate head would cost a second record (an encryption and a system call) per review. The Date
value is formatted once a second, not once an answer.
"""

from __future__ import annotations

import time
from email.utils import formatdate
from http import HTTPStatus

import orjson

from ..admission.status import Status
from ..serving.reviewing import JSON

# "415 Unsupported Media Type": the standard reason phrases (RFC 9110), on every answer whoever
# gives it; the head writer uses these, whatever status text it was handed.
_STATUS_LINES = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}


def status_line(code: int) -> str:
    """The status code and its standard reason phrase ("Unknown" for a code without one)."""
    return _STATUS_LINES.get(code) or f"{code} Unknown"


SERVER = "servinggate"
# Fields an application may not set: the worker frames the answer and decides the connection.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"})

_date: tuple[int, str] = (0, "")


def http_date() -> str:
    """The Date header's value, recomputed when the second changes (benign race between threads:
    two may format the same second)."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True))
    return _date[1]


def head(code: int, fields: list[tuple[str, str]], closes: bool, version: tuple[int, int] = (1, 1)) -> bytes:
    """The one writer of an answer's head. An interim answer (1xx) is a status line only (RFC 9110 15.2)."""
    line = f"HTTP/{version[0]}.{version[1]} {status_line(code)}\r\n"
    if code < 200:
        return (line + "\r\n").encode("latin-1")
    lines = [line, f"Server: {SERVER}\r\n", f"Date: {http_date()}\r\n", f"Connection: {'close' if closes else 'keep-alive'}\r\n"]
    lines.extend(f"{name}: {value}\r\n" for name, value in fields)
    lines.append("\r\n")
    return "".join(lines).encode("latin-1")


def json_fields(body: bytes) -> list[tuple[str, str]]:
    return [("Content-Type", JSON), ("Content-Length", str(len(body)))]


def status_answer(code: int, message: str) -> bytes:
    """A refusal: a whole answer carrying a metav1.Status, as the application answers errors; it
    always closes the connection."""
    body = orjson.dumps(Status(code, message).http_dict())
    return head(code, json_fields(body), closes=True) + body


CONTINUE = head(100, [], closes=False)
