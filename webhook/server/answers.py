"""Every answer's bytes: one function writes every head (`head`), whoever answers: every `Answer`
(`whole`: a review on the event loop, the Flask application in a thread, the route table's 404 and
405, a refusal of the reader) and the interim `100 Continue`.

The head carries the standard reason phrase, then Server, Date and Connection (gunicorn's order),
then the answer's own fields. Head and body leave in one write: over TLS a separate head would cost
a second record (an encryption and a system call) per review.
"""

from __future__ import annotations

import time
from email.utils import formatdate
from http import HTTPStatus

import orjson

from ..admission.status import Status
from ..serving.answer import Answer

SERVER = "servinggate"
_REASONS = {status.value: status.phrase for status in HTTPStatus}  # RFC 9110's, whatever text the application gave
_date: tuple[int, str] = (0, "")


def http_date() -> str:
    """The Date value, formatted when the second changes (two threads may format the same second)."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True))
    return _date[1]


def head(code: int, fields: list[tuple[str, str]], closes: bool, version: tuple[int, int] = (1, 1)) -> bytes:
    """The one writer of an answer's head. An interim answer (1xx) is a status line only (RFC 9110 15.2)."""
    line = f"HTTP/{version[0]}.{version[1]} {code} {_REASONS.get(code, 'Unknown')}\r\n"
    if code < 200:
        return (line + "\r\n").encode("latin-1")
    lines = [line, f"Server: {SERVER}\r\n", f"Date: {http_date()}\r\n", f"Connection: {'close' if closes else 'keep-alive'}\r\n"]
    lines.extend(f"{name}: {value}\r\n" for name, value in fields)
    lines.append("\r\n")
    return "".join(lines).encode("latin-1")


def whole(answer: Answer, closes: bool, version: tuple[int, int] = (1, 1), with_body: bool = True) -> bytes:
    """An answer's head (its Content-Type and Content-Length, then its own fields) and body; without
    the body for a HEAD request, whose head is the GET answer's."""
    fields = [("Content-Type", answer.content_type), ("Content-Length", str(len(answer.body))), *answer.fields]
    return head(answer.code, fields, closes, version) + (answer.body if with_body else b"")


def status_answer(code: int, message: str) -> bytes:
    """A refusal: a whole answer carrying a metav1.Status, as the application answers errors; it
    always closes the connection."""
    return whole(Answer(code, orjson.dumps(Status(code, message).http_dict()), closes=True), closes=True)


CONTINUE = head(100, [], closes=False)
