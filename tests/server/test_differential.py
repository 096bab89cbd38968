"""The one HTTP/1.1 reader (http1.py: gunicorn_h1c's H1CProtocol plus our checks) against the parsers
gunicorn serves with: its pure-Python HTTP/1.1 parser and its C parser (gunicorn_h1c's, through
gunicorn's Request).

hypothesis builds requests from the parts that decide where a request ends (Content-Length in any
spelling, Transfer-Encoding lists, chunk extensions and trailers, repeated and conflicting framing
fields, obs-fold, odd bytes, pipelined bytes after the request), mutates some of them byte by
byte, and splits every input at arbitrary points, as TCP may. For each input it asks gunicorn's
parser what the request is (where it ends, its body, or which status it refuses with) and holds
our reader to it: the answer a client got from gunicorn, or a better one (issue 38):

- a request gunicorn accepts whole is read whole, ending where gunicorn says, with the same
  method, path and body, unless it is over one of our own limits (body, head), or it is one of
  the `STRICTER` readings listed below;
- a request gunicorn refuses is refused with a 4xx, never read whole (the codes may differ:
  whichever part of the request each reads first decides);
- a request gunicorn still waits on is waited on, or refused (judged as its bytes arrive);
- where the input is split never changes the reader's decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

import pytest
from gunicorn.config import Config
from gunicorn.http import errors as herrors
from gunicorn.http.body import LengthReader
from gunicorn.http.parser import RequestParser
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support import FUZZ_FINDINGS
from support.examples import examples

from webhook.server.calls import split_target
from webhook.server.http1 import Refusal, RequestReader
from webhook.serving.limits import Limits

MAX_HEAD, MAX_BODY = 65536, 4096
PARSERS = ("python", "fast")
PEER = ("10.0.0.1", 40000)
FIXTURES_RAW = ("http-TE-chunked-with-chunk-size-overflow.raw", "http-TE-chunked-with-invalid-chunk-size.raw")


class Starved(BaseException):
    """The reference parser asked for bytes past the end of the input: the request is unfinished."""


def _pieces(raw: bytes, cuts: list[int]):
    last = 0
    for cut in sorted(set(c for c in cuts if 0 < c < len(raw))):
        yield raw[last:cut]
        last = cut
    yield raw[last:]
    raise Starved()


@dataclass(frozen=True)
class Reading:
    """What a parser makes of an input."""

    kind: str  # "whole", "refused" or "unfinished"
    end: int = 0  # whole: where the request ends (what follows is the next request)
    body: bytes = b""
    code: int = 0  # refused: the status
    error: str = ""
    method: str = ""
    path: str = ""


# The status gunicorn's worker answers for what its parser refuses (gunicorn/workers/base.py,
# Worker.handle_error, 27.0); the first class that matches wins.
_PARSE_ERRORS = (
    (herrors.LimitRequestLine, 414),
    (herrors.LimitRequestHeaders, 431),
    (herrors.UnsupportedTransferCoding, 501),
    (herrors.ExpectationFailed, 417),
    (herrors.ParseException, 400),
)


def gunicorn_status(exc: BaseException) -> int:
    return next((code for kind, code in _PARSE_ERRORS if isinstance(exc, kind)), 500)


def gunicorn_reads(raw: bytes, parser: str, cuts: list[int] = ()) -> Reading:
    cfg = Config()
    cfg.set("http_parser", parser)
    source = _pieces(raw, list(cuts))
    reader = RequestParser(cfg, source, PEER)
    try:
        request = next(reader)
        body = request.body.read()
        length = request.body.reader.length if isinstance(request.body.reader, LengthReader) else 0
        if length:  # a LengthReader returns what there is at the end of its input
            raise Starved()
    except (Starved, StopIteration):
        return Reading("unfinished")
    except Exception as exc:  # every parser error is a refusal with a status
        return Reading("refused", code=gunicorn_status(exc), error=f"{type(exc).__name__}: {exc}"[:120])
    rest = reader.unreader.take_buffered()
    try:
        while True:
            rest += next(source)
    except (Starved, StopIteration):
        pass
    return Reading("whole", end=len(raw) - len(rest), body=body, method=request.method, path=unquote(request.path, "latin-1"))  # PATH_INFO, as wsgi.py makes it


def ours(raw: bytes, cuts: list[int] = ()) -> Reading:
    """The reader fed the input in pieces, as the worker's loop would (it stops at a request's end)."""
    reader = RequestReader(Limits(max_body=MAX_BODY, max_head=MAX_HEAD))
    bounds = sorted(set(c for c in cuts if 0 < c < len(raw))) + [len(raw)]
    last = 0
    try:
        for cut in bounds:
            reader.feed(raw[last:cut])
            last = cut
            if reader.complete:
                req = reader.request()
                end = last - len(reader.parser.remaining())
                return Reading("whole", end=end, body=req.body, method=req.method.decode("latin-1"), path=split_target(req.target)[0])
    except Refusal as refusal:
        return Reading("refused", code=refusal.code, error=refusal.message)
    return Reading("unfinished")


def _over_our_limits(reading: Reading) -> bool:
    return reading.kind == "refused" and reading.code in (413, 431) and "exceeds" in reading.error


# Where the reader is stricter than gunicorn, each a rule the API server never breaks: blank space
# before a chunk extension's `;` (RFC 9112 7.1.1 has none; H1CProtocol refuses it, gunicorn skips it).
STRICTER = ("Whitespace in chunk size",)


def check_reader(raw: bytes, cuts: list[int]) -> None:
    mine = ours(raw, cuts)
    whole = ours(raw)
    assert (mine.kind, mine.end, mine.code) == (whole.kind, whole.end, whole.code), f"the split changed the decision: {mine} / {whole}"
    for parser in PARSERS:
        reading = gunicorn_reads(raw, parser, cuts)
        said = f"{parser} parser: {reading.kind} {reading.code or ''} {reading.error}; ours: {mine}"
        if _over_our_limits(mine) or (mine.kind == "refused" and mine.error in STRICTER):
            continue
        if reading.kind == "whole":
            assert mine.kind == "whole" and mine.end == reading.end and mine.body == reading.body, said
            assert (mine.method, mine.path) == (reading.method, reading.path), said
        elif reading.kind == "refused":
            assert mine.kind != "whole" and (mine.kind == "unfinished" or 400 <= mine.code < 500), said
        else:
            assert mine.kind in ("unfinished", "refused"), said


# ---- the generator --------------------------------------------------------------------------

_digits = st.text("0123456789", min_size=1, max_size=30)
_length_value = st.one_of(
    st.integers(0, 300).map(str),
    st.tuples(st.integers(0, 40), st.integers(0, 300)).map(lambda z: "0" * z[0] + str(z[1])),
    _digits,
    st.sampled_from(["", "+5", "-5", " 5", "5 ", "5 5", "5,5", "0x10", "1e2", "\u00b2", "\u00bd", "5\x0b", "\t7\t", "00", "0"]),
    st.integers(4290, 4320).map(lambda n: "0" * (n - 2) + "29"),
    st.integers(1, 6000).map(lambda n: "9" * n),
)
_codings = st.lists(
    st.sampled_from(["chunked", "identity", "gzip", "deflate", "compress", "br", "Chunked", " chunked", "chunked "]), min_size=1, max_size=3
).map(", ".join)
_names = st.sampled_from(
    [
        "Content-Length",
        "content-length",
        "CONTENT-LENGTH",
        "Content-Length ",
        " Content-Length",
        "Content_Length",
        "Transfer-Encoding",
        "transfer-encoding",
        "Transfer-Encoding ",
        "Expect",
        "Connection",
    ]
)
_other_fields = st.sampled_from(
    [
        "Host: example",
        "Content-Type: application/json",
        "Connection: close",
        "Connection: keep-alive",
        "Connection: upgrade",
        "Expect: 100-continue",
        "Expect: nothing",
        "Accept-Encoding: gzip",
        "X_Odd: 1",
        "X-Forwarded-For: 1.2.3.4",
        " folded",
        "\tfolded",
        "Bad Name: 1",
        "NoColon",
        "X-Bin: \x7f",
        "X-Latin: caf\u00e9",
        "X-Empty:",
        "Te: trailers",
        "Upgrade: h2c",
    ]
)
_methods = st.sampled_from(["POST", "POST", "POST", "GET", "PUT", "post", "OPTIONS"])
_targets = st.one_of(
    st.sampled_from(["/validate", "/mutate?timeout=10s", "/validate/../x", "/a%20b", "*", "http://h/validate", "/v#frag", "/ x"]),
    st.integers(4070, 4090).map(lambda n: "/" + "a" * n),  # around gunicorn's request-line limit (4094)
)
_versions = st.sampled_from(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.10", "http/1.1"])


@st.composite
def chunked_body(draw, data: bytes) -> bytes:
    out = bytearray()
    rest = data
    while rest:
        n = draw(st.integers(1, max(1, len(rest))))
        piece, rest = rest[:n], rest[n:]
        size = draw(st.sampled_from(["%x", "%X", "0%x", "%x ", "%x;", "%x;ext", "%x;a=b", '%x ;a="q"', "%x\t;e"])) % n
        out += size.encode() + b"\r\n" + piece + b"\r\n"
    out += draw(st.sampled_from([b"0\r\n\r\n", b"0\r\n\r\n", b"0;e=1\r\n\r\n", b"0\r\nX-T: 1\r\n\r\n", b"00\r\n\r\n", b"0\r\n", b"0\r\nX-T: 1\r\n"]))
    return bytes(out)


@st.composite
def requests(draw) -> bytes:
    line = f"{draw(_methods)} {draw(_targets)} {draw(_versions)}"
    body = draw(st.binary(max_size=64))
    fields: list[str] = []
    framing = draw(st.sampled_from(["length", "length", "chunked", "none", "mixed"]))
    if framing in ("length", "mixed"):
        fields.append(f"Content-Length: {draw(st.one_of(st.just(str(len(body))), _length_value))}")
    if framing in ("chunked", "mixed"):
        fields.append(f"Transfer-Encoding: {draw(st.one_of(st.just('chunked'), _codings))}")
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["other", "framing"]))
        if kind == "other":
            fields.append(draw(_other_fields))
        else:
            name = draw(_names)
            value = draw(_length_value) if "length" in name.lower() else draw(_codings)
            fields.append(f"{name}: {value}")
    fields = draw(st.permutations(fields))
    chunked = any(f.lower().startswith("transfer-encoding") for f in fields)
    payload = draw(chunked_body(body)) if chunked and draw(st.booleans()) else body
    head = "\r\n".join([line, *fields]) + "\r\n\r\n"
    if draw(st.booleans()):
        head = "\r\n" + head  # the one empty line gunicorn skips before a request
    raw = head.encode("latin-1") + payload
    raw += draw(st.sampled_from([b"", b"", b"GET /healthz HTTP/1.1\r\n\r\n", b"POST /validate HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"]))
    for _ in range(draw(st.integers(0, 2))):  # a byte changed, dropped or added
        where = draw(st.integers(0, len(raw)))
        how = draw(st.sampled_from(["set", "drop", "add"]))
        byte = bytes([draw(st.sampled_from([0, 9, 10, 13, 32, 48, 57, 58, 59, 127, 255]))])
        if how == "set" and where < len(raw):
            raw = raw[:where] + byte + raw[where + 1 :]
        elif how == "drop":
            raw = raw[:where] + raw[where + 1 :]
        else:
            raw = raw[:where] + byte + raw[where:]
    if draw(st.integers(0, 3)) == 0:  # a client that has not sent it all yet
        raw = raw[: draw(st.integers(0, len(raw)))]
    return raw


_cuts = st.lists(st.integers(1, 400), max_size=6)
PROPERTY = settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---- the tests ---------------------------------------------------------------------------------


@PROPERTY
@given(requests(), _cuts)
@example(b"\r\nGET /mutate?timeout=10s HTTP/1.1\r\x00Content-Length: 0\r\n", [])  # a bare CR in the request line
@example(b"POST /v HTTP/1.1\r\nContent-Length\x00 0\r\nContent-Length: 1\r\n\r\n", [])  # a name gunicorn refuses
@example(b"POST /validate HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", [])
@example(b"POST /validate HTTP/1.1\r\nContent-Length: 000000000000000000000029\r\n\r\n" + b"x" * 29, [])
@example(b"POST /v HTTP/1.1\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", [])
@example(b"POST /v HTTP/1.1\r\nContent-Length: 5\r\n folded\r\n\r\n", [])
@example(b"POST /v HTTP/1.1\r\nExpect: nothing\r\nContent-Length: 0\r\n\r\n", [])
@example(b"POST /v HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", [])
@example(b"POST /v HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\x01\r\n{}\r\n0\r\n\r\n", [])
@example(b"POST /v HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nGET /healthz HTTP/1.1\r\n\r\n", [])  # a bad trailer field
@example(b"POST /\xffalidate HTTP/1.1\r\nContent-Length: 0\r\n\r\n", [])  # a byte above 0x7e in the target
def test_the_reader_ends_and_refuses_requests_where_gunicorn_does(raw, cuts):
    check_reader(raw, cuts)


@pytest.mark.parametrize("parser", PARSERS)
def test_a_length_of_5000_digits_is_refused_as_gunicorn_refuses_it(parser):
    raw = b"POST /validate HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"
    assert gunicorn_reads(raw, parser).code == 400
    assert ours(raw).code == 400


def test_leading_zeros_in_a_length_are_accepted_as_gunicorn_accepts_them():
    raw = b"POST /validate HTTP/1.1\r\nContent-Length: 000000000000000000000029\r\n\r\n" + b"x" * 29
    assert (ours(raw).kind, ours(raw).end) == ("whole", len(raw))
    for parser in PARSERS:
        assert gunicorn_reads(raw, parser).end == len(raw)


@pytest.mark.parametrize(
    "raw, code",
    [
        (b"POST /v HTTP/1.1\r\nExpect: nothing\r\nContent-Length: 0\r\n\r\n", 417),
        (b"POST /v HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        (b"POST /v HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\x01\r\n{}\r\n0\r\n\r\n", 400),
    ],
)
def test_what_h1cprotocol_accepts_and_gunicorn_refuses_is_refused_by_our_checks(raw, code):
    assert ours(raw).code == code
    assert all(gunicorn_reads(raw, parser).kind == "refused" for parser in PARSERS)


@pytest.mark.parametrize("limit, code", [(b"GET /" + b"a" * 5000, 414), (b"GET / HTTP/1.1\r\nX: " + b"b" * 9000, 431)])
def test_a_line_over_the_limits_is_refused_before_its_end_arrives(limit, code):
    assert ours(limit, list(range(1000, len(limit), 1000))).code == code


@pytest.mark.parametrize("name", FIXTURES_RAW)
def test_recorded_findings_split_at_every_byte(name):
    raw = (FUZZ_FINDINGS / name).read_bytes()
    for cut in range(1, len(raw)):
        check_reader(raw, [cut])


def test_a_small_request_split_at_every_byte():
    raw = b"POST /validate HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    for cut in range(1, len(raw)):
        for second in (cut + 1, cut + 7):
            check_reader(raw, [cut, second])


def test_the_checks_catch_a_reader_that_ends_a_request_early(monkeypatch):
    """The harness itself: a reader one byte short of gunicorn's end is caught."""
    raw = b"POST /validate HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
    real = RequestReader.request

    def short(self):
        req = real(self)
        req.body = req.body[:-1]
        return req

    monkeypatch.setattr(RequestReader, "request", short)
    with pytest.raises(AssertionError):
        check_reader(raw, [])
