"""A review request in its plainest form, recognised without gunicorn's parser.

The API server sends every review the same way: `POST /mutate?timeout=10s HTTP/1.1`, a handful of
ordinary headers, one Content-Length and a JSON body. For such a request, gunicorn's parser, its
WSGI environ and its response object took more of a worker's GIL time than the review itself
(py-spy; benchmarks/HISTORY.md). The event loop has
the whole request in memory already (onloop.py), so it reads this plainest form itself and calls
the review function directly, writing the same bytes gunicorn would.

gunicorn stays the authority on HTTP: a request is plain only when nothing in it could be read two
ways or changes what gunicorn does. Any other request (another method, path or version, a header
gunicorn treats specially, a repeated or malformed field, obs-fold, a byte outside printable
ASCII, a length that does not match the body, a line or field past gunicorn's limits) goes
through gunicorn's parser as before, which answers or refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The request line: POST, an absolute path of plain characters (no escapes: gunicorn would decode
# them), an optional query, HTTP/1.1 only.
_REQUEST_LINE = re.compile(rb"POST (/[A-Za-z0-9/._~-]*)(?:\?[\x21-\x7e]*)? HTTP/1\.1")
# A field: a token without "_" (gunicorn drops or refuses those), a value of printable ASCII.
_FIELD = re.compile(rb"([!#$%&'*+.^`|~0-9A-Za-z-]+):[ \t]*((?:[\x21-\x7e][\x20-\x7e\t]*)?)")
# Fields that change how gunicorn reads the request or answers it, or that only a proxy sets.
_GUNICORN_READS = frozenset(
    {b"transfer-encoding", b"expect", b"upgrade", b"http2-settings", b"te", b"trailer", b"forwarded", b"proxy-connection", b"keep-alive"}
)


@dataclass(frozen=True, slots=True)
class PlainRequest:
    environ: dict[str, Any]  # what a review function reads: method, path, content type and length, body
    closes: bool  # the client asked for the connection to be closed after the answer


@dataclass(frozen=True, slots=True)
class HeadLimits:
    """gunicorn's limits on the request head (`limit_request_*`): past one, gunicorn answers."""

    line: int
    fields: int
    field_size: int

    @classmethod
    def of(cls, cfg: Any) -> HeadLimits:
        """As gunicorn reads its settings (http/message.py): 0 means no limit on the line, at most 8190."""
        line = cfg.limit_request_line
        return cls(
            1 << 20 if line == 0 else 8190 if line < 0 or line >= 8190 else line,
            cfg.limit_request_fields if 0 < cfg.limit_request_fields <= 32768 else 32768,
            cfg.limit_request_field_size if cfg.limit_request_field_size > 0 else 8190,
        )


def plain_review(request: bytes, limits: HeadLimits) -> PlainRequest | None:
    """The request, when it is a review request in its plainest form; otherwise None."""
    end = request.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = request[:end].split(b"\r\n")
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None or len(lines[0]) > limits.line or len(lines) - 1 > limits.fields:
        return None
    fields: dict[bytes, bytes] = {}
    for raw in lines[1:]:
        field = _FIELD.fullmatch(raw)
        if field is None or len(raw) > limits.field_size:
            return None
        name = field.group(1).lower()
        if name in fields or name in _GUNICORN_READS or name.startswith(b"x-forwarded"):
            return None
        fields[name] = field.group(2).rstrip(b" \t")
    body = request[end + 4 :]
    length = fields.get(b"content-length")
    if length is None or not length.isdigit() or int(length) != len(body):
        return None
    connection = fields.get(b"connection", b"keep-alive").lower()
    if connection not in (b"keep-alive", b"close"):
        return None
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": line.group(1).decode("ascii"),
        "CONTENT_LENGTH": length.decode("ascii"),
        "wsgi.input": _Body(body),
    }
    if b"content-type" in fields:
        environ["CONTENT_TYPE"] = fields[b"content-type"].decode("ascii")
    return PlainRequest(environ, connection == b"close")


class _Body:
    """`wsgi.input` over the body in memory (a review reads it once, whole)."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, size: int = -1) -> bytes:
        data = self._data if size < 0 else self._data[:size]
        self._data = self._data[len(data) :]
        return data
