"""Has a client sent a whole HTTP/1.1 request yet? The worker's event loop asks this of the bytes
received so far, so that a request reaches an application thread only once it is all in memory.

The scanner reads just enough of the head to find where the request ends (Content-Length or
chunked framing) and answers one of four outcomes. It is not the parser: gunicorn parses the head
again in the thread and stays the authority on everything else. Anything the scanner finds odd
in the framing headers (two lengths, a length and chunking, an unknown coding) is dispatched at
once without a body, so that the parser refuses it before any body is read.

Also here: the limits the event loop enforces (`Limits`, the one owner of the body limit).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

MORE, COMPLETE, DISPATCH, REFUSE = "more", "complete", "dispatch", "refuse"

MAX_CHUNK_LINE = 4096  # a chunk-size line: hex digits plus extensions
MAX_TRAILERS = 8192
_HEX = frozenset(b"0123456789abcdefABCDEF")
# Codings gunicorn accepts before a final "chunked" (it closes the connection after gzip & co.).
# A header name as gunicorn accepts it (gunicorn/http/message.py, TOKEN_RE: RFC 9110 5.6.2 tchar).
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CODINGS_BEFORE_CHUNKED = frozenset({b"identity", b"compress", b"deflate", b"gzip"})
# gunicorn converts Content-Length with int(), which refuses longer digit strings (ValueError: 400).
_MAX_INT_DIGITS = sys.get_int_max_str_digits() or 1 << 62


@dataclass(frozen=True)
class ScanOutcome:
    """What `RequestScanner.scan` found in the bytes received so far, and what to do next."""

    kind: str  # MORE: wait for bytes; COMPLETE: the request is buf[:end]; DISPATCH: hand over now,
    # incomplete (the answer must close the connection); REFUSE: answer `code` without the app
    end: int = 0
    code: int = 0
    message: str = ""
    expect_continue: bool = False  # MORE only: the head asked for "100 Continue" before the body


WAIT = ScanOutcome(MORE)


class RequestScanner:
    """One per connection; `reset()` between requests. `scan(buf)` is incremental: call it again
    with the same buffer, grown, and it resumes where it stopped."""

    def __init__(self, max_head: int, max_body: int):
        self.max_head = max_head
        self.max_body = max_body
        self.reset()

    def reset(self) -> None:
        self._searched = 0  # where the search for the end of the head resumes
        self._body_start = -1
        self._length: int | None = None
        self._chunked = False
        self._continue = False
        self._cursor = 0  # chunked: the next chunk-size line
        self._total = 0  # chunked: body bytes seen so far

    @property
    def head_done(self) -> bool:
        return self._body_start >= 0

    def scan(self, buf: bytes | bytearray) -> ScanOutcome:
        if self._body_start < 0:
            outcome = self._scan_head(buf)
            if outcome is not None:
                return outcome
        if self._chunked:
            return self._scan_chunks(buf)
        end = self._body_start + (self._length or 0)
        if len(buf) >= end:
            return ScanOutcome(COMPLETE, end=end)
        return ScanOutcome(MORE, expect_continue=self._continue)

    def _scan_head(self, buf: bytes | bytearray) -> ScanOutcome | None:
        start = 2 if buf[:2] == b"\r\n" else 0  # gunicorn skips one empty line before the request line
        idx = buf.find(b"\r\n\r\n", max(self._searched, start))
        if idx < 0:
            if len(buf) > self.max_head:
                return ScanOutcome(REFUSE, code=431, message=f"request head exceeds {self.max_head} bytes")
            if buf.count(b"\n") != buf.count(b"\r\n"):
                return ScanOutcome(DISPATCH)  # a bare LF: the parser refuses it (400)
            self._searched = max(start, len(buf) - 3)
            return WAIT
        if idx > self.max_head:
            return ScanOutcome(REFUSE, code=431, message=f"request head exceeds {self.max_head} bytes")
        self._body_start = idx + 4
        head = bytes(buf[start:idx])
        if head.count(b"\n") != head.count(b"\r\n"):
            return ScanOutcome(DISPATCH)
        lines = head.split(b"\r\n")
        framing = self._framing(lines)
        if framing is not None:
            return framing
        if self._length is not None and self._length > self.max_body:
            return ScanOutcome(REFUSE, code=413, message=f"body of {self._length} bytes exceeds the limit of {self.max_body} bytes")
        return None

    def _framing(self, lines: list[bytes]) -> ScanOutcome | None:
        """Read the framing fields as gunicorn does (Message.set_body_reader, gunicorn 27.0): a
        body of Content-Length bytes, chunked, or none. Whatever gunicorn would refuse, or read in
        a way that needs its parser (an odd spelling, a repeat, a coding before chunked), is
        DISPATCH: the parser then answers it from the head, before any body is read."""
        lengths: list[bytes] = []
        codings: list[bytes] = []
        for line in lines[1:]:
            if line[:1] in (b" ", b"\t"):
                return ScanOutcome(DISPATCH)  # obs-fold: gunicorn refuses it, or folds it into a framing field
            name, _, value = line.partition(b":")
            if _TOKEN.fullmatch(name) is None:
                return ScanOutcome(DISPATCH)  # gunicorn refuses the name (400) from the head alone
            lowered = name.lower()
            if lowered in (b"content-length", b"transfer-encoding"):
                value = value.strip(b" \t")
                if lowered == b"content-length":
                    lengths.append(value)
                else:
                    codings += [c.strip(b" \t").lower() for c in value.split(b",")]
            elif lowered == b"expect" and value.strip(b" \t").lower() == b"100-continue":
                self._continue = True
        if codings:
            # chunked, last and once, after nothing but codings gunicorn accepts before it; only HTTP/1.1
            if lengths or codings[-1] != b"chunked" or not set(codings[:-1]) <= _CODINGS_BEFORE_CHUNKED or not lines[0].endswith(b" HTTP/1.1"):
                return ScanOutcome(DISPATCH)
            self._chunked, self._cursor = True, self._body_start
            return None
        if not lengths:
            return None
        digits = lengths[0]
        if len(lengths) > 1 or not digits.isdigit() or len(digits) > _MAX_INT_DIGITS:
            return ScanOutcome(DISPATCH)  # gunicorn refuses it (400): a repeat, a sign, a space, more digits than int() reads
        significant = digits.lstrip(b"0")
        if len(significant) > 18:
            return ScanOutcome(REFUSE, code=413, message=f"body of {len(significant)} digits exceeds the limit of {self.max_body} bytes")
        self._length = int(significant or b"0")
        return None

    def _scan_chunks(self, buf: bytes | bytearray) -> ScanOutcome:
        too_large = ScanOutcome(REFUSE, code=413, message=f"body exceeds the limit of {self.max_body} bytes")
        if len(buf) - self._body_start > 2 * self.max_body + 65536:
            return too_large  # tiny chunks: the framing alone would outgrow any body allowed
        while True:
            line_end = buf.find(b"\r\n", self._cursor)
            if line_end < 0:
                if len(buf) - self._cursor > MAX_CHUNK_LINE:
                    return ScanOutcome(REFUSE, code=400, message="malformed chunked body: chunk-size line too long")
                return ScanOutcome(MORE, expect_continue=self._continue)
            line = bytes(buf[self._cursor : line_end])
            size_field, semicolon, _ = line.partition(b";")
            if semicolon:
                size_field = size_field.rstrip(b" \t")
            if not size_field or not set(size_field) <= _HEX:
                return ScanOutcome(REFUSE, code=400, message="malformed chunked body: invalid chunk size")
            if len(size_field.lstrip(b"0")) > 16:
                return too_large  # more than 2^64 bytes announced: refused before reading any of it
            size = int(size_field, 16)
            if size == 0:
                trailers = line_end + 2
                if buf[trailers : trailers + 2] == b"\r\n":
                    return ScanOutcome(COMPLETE, end=trailers + 2)
                end = buf.find(b"\r\n\r\n", trailers)
                if end >= 0:
                    return ScanOutcome(COMPLETE, end=end + 4)
                if len(buf) - trailers > MAX_TRAILERS:
                    return ScanOutcome(REFUSE, code=431, message=f"trailer section exceeds {MAX_TRAILERS} bytes")
                return WAIT
            if self._total + size > self.max_body:
                return too_large
            data_end = line_end + 2 + size
            if len(buf) < data_end + 2:
                return ScanOutcome(MORE, expect_continue=self._continue)
            if buf[data_end : data_end + 2] != b"\r\n":
                return ScanOutcome(REFUSE, code=400, message="malformed chunked body: chunk data not followed by CRLF")
            self._total += size
            self._cursor = data_end + 2


@dataclass(frozen=True)
class Limits:
    """What one request may cost, enforced by the worker's event loop before any thread runs.

    The body limit (`--max-body-bytes`) is owned here, and only here. The event loop buffers a
    whole request before handing it to a thread, so it must know the limit to bound its memory,
    and it is the only layer that can refuse a body before reading it (413 on the announced
    Content-Length, or on the first chunk that crosses the limit) and then drain what the client
    still sends. The application therefore never sees a body over the limit and does not check.
    """

    max_body: int
    request_timeout: float = 10.0  # handshake + head + body, from the connection or the first byte
    linger: float = 5.0  # after a closing answer: how long what the client still sends is read and dropped
    max_head: int = 65536
    # Memory one worker sets aside for unfinished large requests (see WebhookWorker._take_large_slot):
    # read_budget // max_body of them are read at once, the others wait (TCP pushes back), so
    # many clients each sending a large body cannot grow memory without bound.
    max_buffered: int = 0  # 0: 4 x max_body

    @property
    def read_budget(self) -> int:
        return self.max_buffered or 4 * self.max_body
