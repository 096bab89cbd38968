"""Review requests the event loop reads without gunicorn's parser (plainreview.py): only the plainest
form is taken, anything gunicorn reads specially is left to gunicorn, and the answer is the same
bytes either way."""

from __future__ import annotations

import re
import socket
import time
from types import SimpleNamespace

import pytest
from serverproc import Server  # noqa: E402  (tests/server is on sys.path via conftest)
from support import ADMISSION_FIXTURES as FIXTURES

from webhook.server.plainreview import HeadLimits, plain_review

POD_MUTATE = (FIXTURES / "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json").read_bytes()
MS_VALIDATE = (FIXTURES / "modelservings-create-gang-example-validating.json").read_bytes()
LIMITS = HeadLimits(line=4094, fields=100, field_size=8190)


def api_server_request(
    body: bytes = b'{"kind":"AdmissionReview"}', path: str = "/mutate?timeout=10s", fields: tuple[str, ...] = (), content_type: str = "application/json"
) -> bytes:
    """A review request as kube-apiserver 1.28 sends one (its header set), plus `fields`."""
    head = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1:8443",
        "User-Agent: kube-apiserver-admission",
        f"Content-Length: {len(body)}",
        "Accept: application/json, */*",
        f"Content-Type: {content_type}",
        "Accept-Encoding: gzip",
        *fields,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_the_api_servers_review_request_is_plain():
    body = b'{"kind":"AdmissionReview"}'
    plain = plain_review(api_server_request(body), LIMITS)
    assert plain is not None and not plain.closes
    environ = plain.environ
    assert (environ["REQUEST_METHOD"], environ["PATH_INFO"], environ["CONTENT_TYPE"], environ["CONTENT_LENGTH"]) == (
        "POST",
        "/mutate",
        "application/json",
        str(len(body)),
    )
    assert environ["wsgi.input"].read(len(body)) == body and environ["wsgi.input"].read() == b""
    assert plain_review(api_server_request(body, fields=("Connection: Close",)), LIMITS).closes
    assert "CONTENT_TYPE" not in plain_review(b"POST /validate HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", LIMITS).environ


DECLINED = {
    "another method": api_server_request().replace(b"POST", b"PUT", 1),
    "a lower-case method": api_server_request().replace(b"POST", b"post", 1),
    "HTTP/1.0": api_server_request().replace(b"HTTP/1.1", b"HTTP/1.0", 1),
    "an escaped path": api_server_request(path="/mut%61te"),
    "a fragment": api_server_request(path="/mutate#x"),
    "an absolute-form target": api_server_request(path="https://x/mutate"),
    "chunked framing": api_server_request(fields=("Transfer-Encoding: chunked",)),
    "Expect": api_server_request(fields=("Expect: 100-continue",)),
    "an upgrade to h2c": api_server_request(fields=("Upgrade: h2c", "HTTP2-Settings: AAMAAABkAAQAAP__")),
    "TE": api_server_request(fields=("TE: trailers",)),
    "a forwarded scheme": api_server_request(fields=("X-Forwarded-Proto: http",)),
    "Forwarded": api_server_request(fields=("Forwarded: for=1.2.3.4",)),
    "an underscore in a name": api_server_request(fields=("X_Via: 1",)),
    "a repeated field": api_server_request(fields=("Content-Type: text/plain",)),
    "a repeated unrelated field": api_server_request(fields=("Accept: a", "Accept: b")),
    "obs-fold": api_server_request(fields=("X-A: 1", " folded")),
    "a byte past ASCII": api_server_request(fields=("X-A: caf\xe9",)).replace("caf\xe9".encode(), b"caf\xc3\xa9"),
    "a control byte": api_server_request(fields=("X-A: a\x01b",)),
    "no Content-Length": api_server_request().replace(b"Content-Length: 26\r\n", b""),
    "a signed length": api_server_request().replace(b"Content-Length: 26", b"Content-Length: +26"),
    "a length longer than the body": api_server_request().replace(b"Content-Length: 26", b"Content-Length: 27"),
    "Connection: upgrade": api_server_request(fields=("Connection: upgrade",)),
    "a field without a colon": api_server_request(fields=("X-A 1",)),
    "a space before the colon": api_server_request(fields=("X-A : 1",)),
    "a request line past the limit": api_server_request(path="/mutate?" + "a" * 4100),
    "a field past the limit": api_server_request(fields=("X-A: " + "a" * 8190,)),
    "more fields than the limit": api_server_request(fields=tuple(f"X-{i}: 1" for i in range(100))),
    "no end of head": api_server_request()[:40],
}


@pytest.mark.parametrize("raw", DECLINED.values(), ids=DECLINED.keys())
def test_what_gunicorn_reads_specially_is_left_to_gunicorn(raw):
    assert plain_review(raw, LIMITS) is None


def test_the_head_limits_are_gunicorns_reading_of_its_settings():
    def of(line: int, fields: int = 100, size: int = 8190) -> HeadLimits:
        return HeadLimits.of(SimpleNamespace(limit_request_line=line, limit_request_fields=fields, limit_request_field_size=size))

    assert of(4094) == HeadLimits(4094, 100, 8190)
    assert of(0).line == 1 << 20 and of(-1).line == 8190 and of(10000).line == 8190  # 0: unlimited; capped at 8190
    assert of(4094, fields=0).fields == 32768 and of(4094, size=0).field_size == 8190


def exchange(srv: Server, raw: bytes) -> bytes:
    """Send one request, read until the server has answered (Content-Length), mask the Date."""
    with srv.ssl_context().wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10), server_hostname="localhost") as conn:
        conn.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < int(re.search(rb"Content-Length: (\d+)", data).group(1)):
            chunk = conn.recv(65536)
            assert chunk, data
            data += chunk
    return re.sub(rb"Date: [^\r]+", b"Date: -", data)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("plain")).start()
    yield srv
    srv.stop()


CASES = {
    "patched pod": (POD_MUTATE, "/mutate?timeout=10s", "application/json", ()),
    "validated ModelServing": (MS_VALIDATE, "/validate?timeout=10s", "application/json", ()),
    "closing": (POD_MUTATE, "/mutate", "application/json", ("Connection: close",)),
    "not JSON (400)": (b"{not json", "/mutate", "application/json", ()),
    "wrong type (415)": (POD_MUTATE, "/validate", "text/plain", ()),
    "no such path (404)": (POD_MUTATE, "/nope", "application/json", ()),
}


@pytest.mark.parametrize(("body", "path", "content_type", "fields"), CASES.values(), ids=CASES.keys())
def test_a_plain_request_is_answered_with_the_bytes_gunicorns_path_writes(server, body, path, content_type, fields):
    plain = api_server_request(body, path, fields, content_type)
    parsed = api_server_request(body, path, (*fields, "X_Via: 1"), content_type)  # gunicorn drops the field
    assert plain_review(parsed, LIMITS) is None
    answer = exchange(server, plain)
    assert answer == exchange(server, parsed)
    assert answer.startswith(b"HTTP/1.1 ") and b"\r\nServer: gunicorn\r\nDate: -\r\n" in answer
    assert (b"Connection: close" in answer) == bool(fields)


def test_keep_alive_holds_across_plain_and_parsed_requests(server):
    """One connection alternating the two paths: each answer complete, in order, kept alive."""
    with server.ssl_context().wrap_socket(socket.create_connection(("127.0.0.1", server.port), timeout=10), server_hostname="localhost") as conn:
        for i in range(6):
            fields = ("X_Via: 1",) if i % 2 else ()
            conn.sendall(api_server_request(POD_MUTATE, fields=fields))
            data = b""
            while b'"uid"' not in data or not data.endswith(b"}}"):
                chunk = conn.recv(65536)
                assert chunk, (i, data)
                data += chunk
            assert data.startswith(b"HTTP/1.1 200 OK") and b"Connection: keep-alive" in data
            time.sleep(0.01)
