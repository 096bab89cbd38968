"""The request scanner (framing.py) and the plain-review reader (plainreview.py) against the parsers
they stand in front of: gunicorn's pure-Python HTTP/1.1 parser and its C parser (gunicorn_h1c).

hypothesis builds requests from the parts that decide where a request ends (Content-Length in any
spelling, Transfer-Encoding lists, chunk extensions and trailers, repeated and conflicting framing
fields, obs-fold, odd bytes, pipelined bytes after the request), mutates some of them byte by
byte, and splits every input at arbitrary points, as TCP may. For each input it asks gunicorn's
parser what the request is (where it ends, its body, or which status it refuses with) and holds
our readers to it:

- a request gunicorn accepts whole ends where gunicorn says (the scanner's COMPLETE), unless it
  is over one of our own limits (body, head), which gunicorn does not have;
- a request gunicorn refuses is refused (a 4xx: the scanner judges the body, gunicorn may find the
  head wrong first, so the codes may differ), or handed to the parser (DISPATCH, or COMPLETE:
  gunicorn then refuses it in a thread), never waited on when the refusal is in the framing fields;
- a request gunicorn still waits on is waited on (MORE), handed over, or over a limit;
- where the input is split never changes the scanner's decision;
- when plainreview reads a request itself, gunicorn reads the same method, path, content type,
  body and keep-alive decision from it.

The C parser is a hard requirement here: `./dev` installs `.[test,fast]` and the image ships it,
so a missing gunicorn_h1c fails this module instead of skipping half of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support import FUZZ_FINDINGS

from webhook.server import gunicorn_adapter as adapter
from webhook.server.framing import COMPLETE, DISPATCH, MORE, REFUSE, RequestScanner
from webhook.server.plainreview import HeadLimits, plain_review

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
    """What gunicorn's parser makes of an input."""

    kind: str  # "whole", "refused" or "unfinished"
    end: int = 0  # whole: where the request ends (what follows is the next request)
    body: bytes = b""
    code: int = 0  # refused: the status the worker answers
    error: str = ""
    request: object = None


def gunicorn_reads(raw: bytes, parser: str, cuts: list[int] = ()) -> Reading:
    cfg = adapter.gunicorn_config(http_parser=parser)
    source = _pieces(raw, list(cuts))
    reader = adapter.request_parser(cfg, source, PEER)
    try:
        request = next(reader)
        body = request.body.read()
        length = request.body.reader.length if isinstance(request.body.reader, adapter.LengthReader) else 0
        if length:  # a LengthReader returns what there is at the end of its input
            raise Starved()
    except Starved:
        return Reading("unfinished")
    except StopIteration:
        return Reading("unfinished")
    except Exception as exc:  # every parser error is a refusal with a status
        return Reading("refused", code=adapter.parse_error_status(exc), error=f"{type(exc).__name__}: {exc}"[:120])
    rest = reader.unreader.take_buffered()
    try:
        while True:
            rest += next(source)
    except (Starved, StopIteration):
        pass
    return Reading("whole", end=len(raw) - len(rest), body=body, request=request)


def scan(raw: bytes, cuts: list[int] = ()):
    """The scanner fed the input in pieces, as the event loop would; its last outcome."""
    scanner, buf = RequestScanner(MAX_HEAD, MAX_BODY), bytearray()
    bounds = sorted(set(c for c in cuts if 0 < c < len(raw))) + [len(raw)]
    last = 0
    outcome = None
    for cut in bounds:
        buf += raw[last:cut]
        last = cut
        outcome = scanner.scan(buf)
        if outcome.kind != MORE:
            return outcome
    return outcome


def _framing_refusal(reading: Reading) -> bool:
    """A refusal decided by the framing fields alone (or by a folded line, which may continue one):
    the body would not change it, so the scanner must not wait for one."""
    framing = ("CONTENT-LENGTH", "TRANSFER-ENCODING", "TRANSFER_ENCODING", "UNSUPPORTEDTRANSFERCODING", "OBSOLETEFOLDING")
    if reading.kind != "refused" or reading.error.partition(":")[0] in REQUEST_LINE_REFUSALS:
        return False  # decided by the request line, whatever of the head its message quotes
    return any(f in reading.error.upper() for f in framing)


# gunicorn's refusals of the request line: the message quotes the rest of the line, which may hold
# a framing field's name when a bare CR kept the line from ending ("HTTP/1.1\r\x00Content-Length").
REQUEST_LINE_REFUSALS = frozenset({"InvalidRequestLine", "InvalidRequestMethod", "InvalidHTTPVersion"})


def _over_our_limits(outcome) -> bool:
    return outcome.kind == REFUSE and outcome.code in (413, 431)


def check_scanner(raw: bytes, cuts: list[int]) -> None:
    outcome = scan(raw, cuts)
    whole = scan(raw)
    assert (outcome.kind, outcome.end, outcome.code) == (whole.kind, whole.end, whole.code), "the split changed the decision"
    for parser in PARSERS:
        reading = gunicorn_reads(raw, parser, cuts)
        said = f"{parser} parser: {reading.kind} {reading.code or ''} {reading.error}; scanner: {outcome}"
        if _over_our_limits(outcome):
            continue
        if reading.kind == "whole":
            assert outcome.kind == COMPLETE and outcome.end == reading.end, said
        elif reading.kind == "refused":
            waits = outcome.kind == MORE and not _framing_refusal(reading)  # refused in a thread once the body is in
            # The scanner's own refusals are of the body (malformed chunks); gunicorn may find the
            # head wrong first (an Expect it cannot meet: 417): refused either way, as a 4xx.
            assert waits or outcome.kind in (DISPATCH, COMPLETE) or (outcome.kind == REFUSE and 400 <= outcome.code < 500), said
        else:
            assert outcome.kind in (MORE, DISPATCH), said


def check_plain(raw: bytes) -> None:
    outcome = scan(raw)
    if outcome.kind != COMPLETE or outcome.end != len(raw):
        return  # the loop reads a plain review only when the buffer is exactly one request
    plain = plain_review(raw, HeadLimits.of(adapter.gunicorn_config()))
    if plain is None:
        return
    body = plain.environ["wsgi.input"].read()
    for parser in PARSERS:
        reading = gunicorn_reads(raw, parser)
        assert reading.kind == "whole" and reading.end == len(raw), f"{parser}: {reading}"
        request = reading.request
        environ = plain.environ
        assert (request.method, request.version) == ("POST", (1, 1))
        assert request.path == environ["PATH_INFO"]
        content_type = next((v for k, v in request.headers if k == "CONTENT-TYPE"), None)
        assert content_type == environ.get("CONTENT_TYPE")
        assert reading.body == body
        assert request.should_close() == plain.closes


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


_plain_fields = st.sampled_from(
    [
        "Host: 10.96.0.1:443",
        "User-Agent: kube-apiserver-admission",
        "Accept: application/json, */*",
        "Accept-Encoding: gzip",
        "Content-Type: application/json",
        "content-type: application/json; charset=utf-8",
        "Content-Type:application/json",
        "Content-Type: application/json ",
        "Connection: close",
        "Connection: Keep-Alive",
        "Connection: keep-alive, close",
        "Connection: upgrade",
        "X-Request-Id: a_b",
        "Host: other",
        "Expect: 100-continue",
        "X-Forwarded-Proto: https",
    ]
)


@st.composite
def plain_requests(draw) -> bytes:
    """The API server's shape, with the variations a plain-review reader must get right."""
    body = draw(st.sampled_from([b'{"kind":"AdmissionReview"}', b"{}", b""]))
    target = draw(st.sampled_from(["/validate", "/mutate?timeout=10s", "/validate?a=%20", "/mutate/"]))
    length = draw(st.sampled_from(["%d", "%d", "0%d", "%d ", "+%d"])) % len(body)
    fields = draw(st.lists(_plain_fields, max_size=5)) + [f"Content-Length: {length}"]
    fields = draw(st.permutations(fields))
    raw = (f"POST {target} HTTP/1.1\r\n" + "".join(f + "\r\n" for f in fields) + "\r\n").encode("latin-1") + body
    if draw(st.integers(0, 3)) == 0:
        where = draw(st.integers(0, len(raw) - 1))
        raw = raw[:where] + bytes([draw(st.sampled_from([9, 32, 95, 127, 200]))]) + raw[where + 1 :]
    return raw


_cuts = st.lists(st.integers(1, 400), max_size=6)
PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---- the tests ---------------------------------------------------------------------------------


def test_the_c_parser_is_the_one_gunicorn_uses():
    """Not a skip: the image ships gunicorn_h1c and the worker is measured with it."""
    import gunicorn_h1c  # noqa: F401 - must be importable

    assert adapter.uses_fast_parser(adapter.gunicorn_config(http_parser="fast"))
    assert not adapter.uses_fast_parser(adapter.gunicorn_config(http_parser="python"))


@PROPERTY
@given(requests(), _cuts)
@example(b"\r\nGET /mutate?timeout=10s HTTP/1.1\r\x00Content-Length: 0\r\n", [])  # a bare CR in the request line
@example(b"POST /v HTTP/1.1\r\nContent-Length\x00 0\r\nContent-Length: 1\r\n\r\n", [])  # a name gunicorn refuses
@example(b"POST /validate HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", [])
@example(b"POST /validate HTTP/1.1\r\nContent-Length: 000000000000000000000029\r\n\r\n" + b"x" * 29, [])
@example(b"POST /v HTTP/1.1\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", [])
@example(b"POST /v HTTP/1.1\r\nContent-Length: 5\r\n folded\r\n\r\n", [])
def test_the_scanner_ends_and_refuses_requests_where_gunicorn_does(raw, cuts):
    check_scanner(raw, cuts)


@PROPERTY
@given(st.one_of(requests(), plain_requests()))
@example(b"POST /validate HTTP/1.1\r\nContent-Length: 02\r\n\r\n{}")
@example(b"POST /" + b"a" * 4080 + b" HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")  # a line over gunicorn's limit
def test_a_plain_review_is_read_as_gunicorn_reads_it(raw):
    check_plain(raw)


@pytest.mark.parametrize("parser", PARSERS)
def test_a_length_of_5000_digits_is_refused_as_gunicorn_refuses_it(parser):
    raw = b"POST /validate HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"
    outcome = scan(raw)
    assert gunicorn_reads(raw, parser).code == 400
    assert outcome.kind == DISPATCH  # the parser answers it from the head: 400, a JSON Status (test_http.py)


def test_leading_zeros_in_a_length_are_accepted_as_gunicorn_accepts_them():
    raw = b"POST /validate HTTP/1.1\r\nContent-Length: 000000000000000000000029\r\n\r\n" + b"x" * 29
    outcome = scan(raw)
    assert (outcome.kind, outcome.end) == (COMPLETE, len(raw))
    for parser in PARSERS:
        assert gunicorn_reads(raw, parser).end == len(raw)


@pytest.mark.parametrize("name", FIXTURES_RAW)
def test_recorded_findings_split_at_every_byte(name):
    raw = (FUZZ_FINDINGS / name).read_bytes()
    for cut in range(1, len(raw)):
        check_scanner(raw, [cut])


def test_a_small_request_split_at_every_byte():
    raw = b"POST /validate HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    for cut in range(1, len(raw)):
        for second in (cut + 1, cut + 7):
            check_scanner(raw, [cut, second])


def test_the_checks_catch_a_scanner_that_ends_a_request_early(monkeypatch):
    """The harness itself: a scanner one byte short of gunicorn's end is caught."""
    raw = b"POST /validate HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
    real = RequestScanner.scan

    def short(self, buf):
        outcome = real(self, buf)
        return type(outcome)(COMPLETE, end=outcome.end - 1) if outcome.kind == COMPLETE else outcome

    monkeypatch.setattr(RequestScanner, "scan", short)
    with pytest.raises(AssertionError):
        check_scanner(raw, [])
