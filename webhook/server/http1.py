"""The one HTTP/1.1 reader: gunicorn_h1c's callback parser (`H1CProtocol`), the checks it leaves to
its caller, and the limits a request must keep.

Every request is read here once: bytes in as they arrive (`feed`), a whole `HttpRequest` out (head and
de-chunked body), or a `Refusal` with the status and message the client gets. H1CProtocol judges
the request line and each field as they arrive (414, 431, 400). What gunicorn's own reader refuses
and H1CProtocol accepts, we refuse too (`_check_head`, `ChunkLines`): a client gets gunicorn's
answer or a stricter reading of the same rule (tests/server/test_differential.py holds us to both).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any

import gunicorn_h1c

from ..serving.limits import Limits

MAX_CHUNK_LINE = 4096  # a chunk-size line: hex digits plus extensions
_HEX = frozenset(b"0123456789abcdefABCDEF")
# A chunk extension (RFC 9112 7.1.1: `*( BWS ";" BWS token [ BWS "=" BWS token / quoted-string ] )`),
# ported from gunicorn's CHUNK_EXT_RE (gunicorn/http/body.py, 27.0), which refuses what it does not match.
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
_EXTENSION = re.compile(rb"(?:[ \t]*;[ \t]*" + _TOKEN + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*")
# A request target: visible ASCII only, as gunicorn's request-line check (H1CProtocol lets bytes above 0x7e through).
_TARGET = re.compile(rb"[\x21-\x7e]+")
# A trailer field: a token, a colon (RFC 9110 5.1), as gunicorn's header reader wants it.
_TRAILER = re.compile(_TOKEN + rb":")
# gunicorn converts Content-Length with int(), which refuses longer digit strings (400).
_MAX_INT_DIGITS = sys.get_int_max_str_digits() or 1 << 62


class Refusal(Exception):
    """A request answered without the application: its status and message (a JSON Status body)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(slots=True)
class HttpRequest:
    """A whole request, as the parser read it, and the addresses of its connection."""

    method: bytes
    target: bytes
    version: tuple[int, int]
    headers: list[tuple[bytes, bytes]]
    body: bytes
    keep_alive: bool  # what the client asked (Connection, HTTP version)
    client: Any = None  # (host, port) of the client
    server: Any = None  # (host, port) it connected to


# Status by H1CProtocol's exception class; any other ParseError (a ValueError) is a 400.
_PARSE_STATUS = ((gunicorn_h1c.LimitRequestLine, 414), (gunicorn_h1c.LimitRequestHeaders, 431))


class ChunkLines:
    """Follows a chunked body's size lines and trailer fields in its raw bytes (H1CProtocol does not
    show them): refuses a size that takes the body over the limit (413), and a size line, extension
    or trailer field that gunicorn's ChunkedReader refuses (400). It never decides where a request ends."""

    def __init__(self, max_body: int):
        self.max_body, self.total, self.skip, self.line = max_body, 0, 0, bytearray()
        self.trailers = self.done = False

    def feed(self, data: bytes) -> None:
        at = 0
        while at < len(data) and not self.done:
            if self.skip:  # chunk data and its CRLF
                step = min(self.skip, len(data) - at)
                self.skip, at = self.skip - step, at + step
                continue
            end = data.find(b"\n", at)
            self.line += data[at : len(data) if end < 0 else end + 1]
            if len(self.line) > MAX_CHUNK_LINE:
                raise Refusal(400, "malformed chunked body: chunk-size line too long")
            if end < 0:
                return
            at = end + 1
            line = bytes(self.line).removesuffix(b"\n").removesuffix(b"\r")
            self.line.clear()
            if self.trailers:
                self._trailer(line)
            else:
                self._size_line(line)

    def _size_line(self, line: bytes) -> None:
        size_field, semicolon, extension = line.partition(b";")
        size_field = size_field.rstrip(b" \t") if semicolon else size_field
        if not size_field or not set(size_field) <= _HEX:
            raise Refusal(400, "malformed chunked body: invalid chunk size")
        if semicolon and _EXTENSION.fullmatch(b";" + extension) is None:
            raise Refusal(400, "malformed chunked body: invalid chunk extension")
        size = int(size_field, 16) if len(size_field.lstrip(b"0")) <= 16 else 1 << 64
        if self.total + size > self.max_body:
            raise Refusal(413, f"body exceeds the limit of {self.max_body} bytes")
        self.total += size
        self.skip = size + 2 if size else 0
        self.trailers = size == 0

    def _trailer(self, line: bytes) -> None:
        if not line:
            self.done = True
        elif _TRAILER.match(line) is None:
            raise Refusal(400, "malformed chunked body: invalid trailer field")


@dataclass
class RequestReader:
    """One per connection: bytes in (`feed`), an `HttpRequest` out (`request`), between requests `next`."""

    limits: Limits
    parser: Any = None  # made at the request's first byte: a connection that never sends one costs none
    head: bytearray = field(default_factory=bytearray)  # the head's bytes until it is complete
    body: bytes | bytearray = b""  # one buffer, not a list of pieces: past glibc's mmap threshold it is unmapped when freed
    head_done: bool = False
    complete: bool = False
    chunks: ChunkLines | None = None
    started: bool = False  # a byte of this request has arrived

    def _new_parser(self) -> Any:
        lim = self.limits
        return gunicorn_h1c.H1CProtocol(
            on_headers_complete=self._on_head,
            on_body=self._on_body,
            on_message_complete=self._on_complete,
            limit_request_line=lim.line,
            limit_request_fields=lim.fields,
            limit_request_field_size=lim.field_size,
            limit_remaining=0,  # the worker stops reading at a request's end: the tail is one read at most
        )

    def _on_head(self) -> bool:
        self.head_done = True
        return False

    def _on_body(self, chunk: Any) -> None:
        if isinstance(self.body, bytearray):
            self.body += chunk
        else:  # the first piece as it is; from the second, one growing buffer
            self.body = bytearray(self.body) + chunk if self.body else bytes(chunk)

    def _on_complete(self) -> None:
        self.complete = True

    def feed(self, data: bytes) -> None:
        """Read these bytes; raises `Refusal`. Call only while the request is not complete."""
        self.started = self.started or bool(data)
        before = len(self.head)
        if not self.head_done:
            self.head += data
            if len(self.head) > self.limits.max_head and self.head.find(b"\r\n\r\n", 0, self.limits.max_head + 4) < 0:
                raise Refusal(431, f"request head exceeds {self.limits.max_head} bytes")
        failure: ValueError | None = None
        was_done = self.head_done
        try:
            if self.parser is None:
                self.parser = self._new_parser()
            self.parser.feed(data)
        except ValueError as exc:  # H1CProtocol's ParseError and its subclasses
            failure = exc
        if self.head_done and not was_done:
            self._check_head()
            data = data[self._head_end() - before :]
        if self.chunks is not None and self.head_done:
            self.chunks.feed(data)  # its refusal (a size over the limit, a bad line) comes first
        if failure is not None:
            code = next((code for kind, code in _PARSE_STATUS if isinstance(failure, kind)), 400)
            raise Refusal(code, str(failure) or type(failure).__name__)
        if len(self.body) > self.limits.max_body:
            raise Refusal(413, f"body exceeds the limit of {self.limits.max_body} bytes")

    def _head_end(self) -> int:
        start = 2 if self.head[:2] == b"\r\n" else 0  # the one empty line skipped before a request
        return self.head.find(b"\r\n\r\n", start) + 4

    def _check_head(self) -> None:
        """What gunicorn refuses from the head and H1CProtocol leaves to us."""
        p = self.parser
        if _TARGET.fullmatch(p.path) is None:
            raise Refusal(400, f"Invalid request target {p.path[:200].decode('latin-1')!r}")
        for key, expect in p.headers:  # every Expect header, as gunicorn checks each (not the first alone)
            if key.lower() == b"expect" and expect.strip(b" \t").lower() != b"100-continue":
                raise Refusal(417, f"Unable to comply with expectation: {expect.decode('latin-1')!r}")
        codings = b",".join(v for k, v in p.headers if k.lower() == b"transfer-encoding")
        if codings and codings.rsplit(b",", 1)[-1].strip(b" \t").lower() != b"chunked":
            raise Refusal(400, "Transfer-Encoding must end in chunked")
        digits = p.get_header(b"content-length")
        if digits is not None and len(digits.strip(b" \t")) > _MAX_INT_DIGITS:
            raise Refusal(400, f"Content-Length of {len(digits)} digits is more than a number may have")
        length = p.content_length
        if length is not None and length > self.limits.max_body:
            raise Refusal(413, f"body of {length} bytes exceeds the limit of {self.limits.max_body} bytes")
        if p.is_chunked:
            self.chunks = ChunkLines(self.limits.max_body)
        self.head = bytearray(self.head[: self._head_end()])

    @property
    def expects_continue(self) -> bool:
        """The head asked for "100 Continue" (HTTP/1.1) and the body has not all come."""
        p = self.parser
        return self.head_done and not self.complete and p.http_version >= (1, 1) and p.get_header(b"expect") is not None

    def request(self, client: Any = None, server: Any = None) -> HttpRequest:
        p = self.parser
        body = self.body if isinstance(self.body, bytes) else bytes(self.body)
        self.body = b""  # the buffer goes now, not when the connection's next request starts
        return HttpRequest(p.method, p.path, p.http_version, p.headers, body, p.should_keep_alive, client, server)

    def close(self) -> None:
        """The connection is closed: the parser and what it read go now. The parser's callbacks are
        this reader's methods, a cycle only the cyclic GC frees, and a reader held for seconds has
        reached its oldest generation, which an idle worker seldom collects."""
        self.parser, self.head, self.body, self.chunks = None, bytearray(), b"", None

    def next(self) -> bytes:
        """Ready for the next request on the connection; returns the bytes already received of it."""
        tail = self.parser.remaining()
        self.parser.reset()
        self.head, self.body, self.chunks = bytearray(), b"", None
        self.head_done = self.complete = self.started = False
        return bytes(tail)
