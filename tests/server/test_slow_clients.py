"""The real server against clients that stall, garble their framing or send too much: each one
costs an event-loop entry, never an application thread, and every answer is JSON."""

from __future__ import annotations

import json
import resource
import socket
import ssl
import threading
import time
from contextlib import suppress
from http import HTTPStatus

import pytest
import yaml
from serverproc import Server  # noqa: E402  (tests/server is on sys.path via conftest)
from support import REPO, admission_fixture_paths, admission_path  # noqa: E402
from support.procfs import status_kib  # noqa: E402

FUZZ = REPO / "tests/fixtures/fuzz-findings"
REVIEW = admission_fixture_paths()[0].read_bytes()
THREADS = 2 * 8  # the server below: 2 workers of 8 threads


def webhook_timeout_seconds() -> int:
    """The longest timeoutSeconds our webhook configurations give the API server."""
    docs = yaml.safe_load_all((REPO / "manifests/base/webhook-configurations.yaml").read_text())
    return max(hook["timeoutSeconds"] for doc in docs if doc for hook in doc.get("webhooks", []))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("slow"), "--max-body-bytes", "1Mi", "--threads", "8").start()
    yield srv
    srv.stop()


def tls(srv: Server, timeout: float = 10) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    return srv.ssl_context().wrap_socket(raw, server_hostname="localhost")


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return int(lines[0].split()[1]), headers, body


def json_status(headers: dict[str, str], body: bytes, code: int) -> dict:
    assert headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["kind"] == "Status" and doc["code"] == code and doc["status"] == "Failure"
    return doc


def request(path: str, body: bytes = b"", method: str = "POST", ctype: str = "application/json", extra: str = "") -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def stall(srv: Server, kind: str) -> socket.socket:
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    if kind == "idle-tcp":
        return raw
    if kind == "partial-clienthello":
        raw.sendall(b"\x16\x03\x01\x02\x00\x01")  # a record header announcing 512 bytes, then 1
        return raw
    if kind == "clienthello-only":  # a whole ClientHello; the server's flight is never answered
        out = ssl.MemoryBIO()
        with suppress(ssl.SSLWantReadError):
            srv.ssl_context().wrap_bio(ssl.MemoryBIO(), out, server_hostname="localhost").do_handshake()
        raw.sendall(out.read())
        return raw
    conn = srv.ssl_context().wrap_socket(raw, server_hostname="localhost")
    if kind == "slow-headers":
        conn.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-")
    elif kind == "slow-body":
        conn.sendall(request("/validate", REVIEW)[: -len(REVIEW) // 2])
    return conn


def review_seconds(srv: Server, timeout: float) -> float:
    """A review on a new connection: answered 200 with its uid, in how many seconds."""
    started = time.monotonic()
    with tls(srv, timeout=timeout) as conn:
        conn.sendall(request("/validate", REVIEW))
        code, _, body = read_answer(conn)
    assert code == 200 and json.loads(body)["response"]["uid"]
    return time.monotonic() - started


def test_stalled_clients_hold_no_thread_and_a_review_is_answered_within_the_webhook_timeout(server):
    budget = webhook_timeout_seconds()
    kinds = ["partial-clienthello", "clienthello-only", "idle-after-handshake", "slow-headers", "slow-body", "idle-tcp"]
    stalled = [stall(server, kind) for kind in kinds for _ in range(THREADS // 2)]
    assert len(stalled) > THREADS
    try:
        results: list[float] = []

        clients = [threading.Thread(target=lambda: results.append(review_seconds(server, 2 * budget))) for _ in range(4)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        assert len(results) == 4 and max(results) < budget, results
    finally:
        for s in stalled:
            s.close()


def test_a_client_that_does_not_finish_its_request_in_time_gets_a_408_and_is_closed(tmp_path):
    srv = Server(tmp_path, "--request-timeout", "1", workers=1).start()
    try:
        # all three stalled at once: each is timed out on its own clock
        slow, silent, idle = (stall(srv, kind) for kind in ("slow-headers", "partial-clienthello", "idle-after-handshake"))
        code, headers, body = read_answer(slow)
        assert code == 408 and headers["connection"] == "close"
        assert "not received within 1 s" in json_status(headers, body, 408)["message"]
        assert slow.recv(100) == b""
        assert silent.recv(100) == b""  # nothing to answer: closed
        assert idle.recv(100) == b""
        for sock in (slow, silent, idle):  # our side too: the server lingers on a refused one until then
            sock.close()
        with tls(srv) as conn:  # the server is fine
            conn.sendall(request("/healthz", method="GET"))
            assert read_answer(conn)[0] == 200
    finally:
        srv.stop()


def closed_after(sock: socket.socket, since: float) -> float:
    """Seconds from `since` until the server closed the connection; what it sent before (its TLS
    flight) is read and dropped."""
    while sock.recv(65536):
        pass
    return time.monotonic() - since


def test_a_handshake_that_never_finishes_holds_no_thread_and_is_closed_at_the_request_timeout(tmp_path):
    """Clients that connect and send nothing, half a ClientHello, or a ClientHello and then never
    answer the server's flight (issue 38's bad input): with one worker of one thread, a request
    that needs that thread and a review on fresh connections are answered at once while they are
    held, and the server closes each of them when its request timeout (3 s) is up, not before."""
    timeout = 3
    srv = Server(tmp_path, "--request-timeout", str(timeout), "--threads", "1", workers=1).start()
    stalled: list[socket.socket] = []
    try:
        since = time.monotonic()
        stalled += [stall(srv, kind) for kind in ("idle-tcp", "partial-clienthello", "clienthello-only") for _ in range(3)]
        for path, method, body in [("/healthz", "GET", b""), ("/validate", "POST", REVIEW)]:
            with tls(srv, timeout=2 * timeout) as conn:
                conn.sendall(request(path, body, method=method))
                assert read_answer(conn)[0] == 200
        answered = time.monotonic() - since
        assert answered < timeout / 2, f"answered after {answered:.2f} s while handshakes stalled"
        closed = [closed_after(s, since) for s in stalled]
        assert all(0.9 * timeout <= t < timeout + 2 for t in closed), closed
    finally:
        for s in stalled:
            s.close()
        srv.stop()


@pytest.mark.parametrize(
    "name, code, needle",
    [
        ("http-TE-chunked-with-invalid-chunk-size", 400, "invalid chunk size"),
        ("http-TE-chunked-with-chunk-size-overflow", 413, "exceeds the limit of 1048576 bytes"),
    ],
)
def test_fuzzed_chunked_framing_is_refused_at_once_with_json(server, name, code, needle):
    with tls(server) as conn:
        conn.sendall((FUZZ / f"{name}.raw").read_bytes())
        status, headers, body = read_answer(conn)
        assert status == code and headers["connection"] == "close"
        assert needle in json_status(headers, body, code)["message"]
        assert conn.recv(100) == b""


def test_a_bad_chunk_extension_is_a_json_400_not_a_500(server):
    with tls(server) as conn:
        conn.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\x01\r\n{}\r\n0\r\n\r\n")
        status, headers, body = read_answer(conn)
        assert status == 400 and headers["connection"] == "close"
        json_status(headers, body, 400)


@pytest.mark.parametrize(
    "raw, code",
    [
        (b"GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),
        (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n", 431),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X: y\r\n" * 20000 + b"\r\n", 431),
        (b"POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: snappy\r\n\r\n", 400),  # gunicorn_h1c 0.6.10's answer (Python parser: 501)
        (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400),
        (b"OPTIONS /validate HTTP/1.1\r\nHost: x\r\n\r\n", 405),
        (b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 404),
        (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", 400),  # more digits than int() reads
    ],
)
def test_every_error_answer_is_json(server, raw, code):
    with tls(server) as conn:
        conn.sendall(raw)
        status, headers, body = read_answer(conn)
    assert status == code
    json_status(headers, body, code)


@pytest.mark.parametrize(
    "raw, code",
    [
        (request("/validate", REVIEW), 200),  # a review answered on the event loop
        (request("/validate", REVIEW, extra="X-Forwarded-For: 1.2.3.4\r\n"), 200),  # a field reviews do not read
        (request("/nope", b"{}"), 404),  # Flask's own path, in a thread
        (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n", 413),  # the reader's refusal
        (b"POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),  # the reader's refusal
        (b"GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),  # H1CProtocol refuses it
    ],
)
def test_every_answer_has_the_same_head_fields_and_the_standard_reason_phrase(server, raw, code):
    with tls(server) as conn:
        conn.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            assert chunk
            data += chunk
    lines = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    assert lines[0] == f"HTTP/1.1 {code} {HTTPStatus(code).phrase}"
    names = [line.partition(":")[0].lower() for line in lines[1:]]
    assert names[:3] == ["server", "date", "connection"] and "content-type" in names


def test_a_length_with_leading_zeros_is_read_as_gunicorn_reads_it(server):
    padded = request("/validate", REVIEW).replace(b"Content-Length: ", b"Content-Length: " + b"0" * 24)
    with tls(server) as conn:
        conn.sendall(padded)
        status, headers, body = read_answer(conn)
    assert status == 200 and json.loads(body)["response"]["allowed"] in (True, False)


def test_a_connection_stays_usable_after_errors_that_leave_a_body_unread(server):
    big = b"x" * (300 * 1024)  # far more than gunicorn would drain before reusing a connection
    with tls(server) as conn:
        for raw, code in [
            (request("/nope", big), 404),
            (request("/validate", big, ctype="text/plain"), 415),
            (request("/validate", big, method="PUT"), 405),
            (request("/validate", REVIEW), 200),
        ]:
            conn.sendall(raw)
            status, headers, _ = read_answer(conn)
            assert status == code and headers["connection"] == "keep-alive"


def test_a_client_still_sending_a_refused_body_reads_the_413_and_a_clean_close(server):
    body = b"[" + b"0," * (1800 * 1024) + b"0]"  # 3.5 MiB against a 1 MiB limit
    with tls(server) as conn:
        conn.sendall(request("/mutate", body))  # as http.client does: everything, then read
        status, headers, answer = read_answer(conn)
        assert status == 413 and headers["connection"] == "close"
        assert f"body of {len(body)} bytes exceeds the limit of 1048576 bytes" in json_status(headers, answer, 413)["message"]
        assert conn.recv(100) == b""


def test_an_app_answer_with_connection_close_is_announced_and_kept(server):
    # Chunked and over the limit: refused before the application; the close is on the wire.
    with tls(server) as conn:
        conn.sendall(
            b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            + (b"10000\r\n" + b" " * 0x10000 + b"\r\n") * 17
            + b"0\r\n\r\n"
        )
        status, headers, _ = read_answer(conn)
        assert status == 413 and headers["connection"] == "close"
        assert conn.recv(100) == b""


def test_expect_100_continue_is_answered_before_the_body(server):
    with tls(server) as conn:
        conn.sendall(request("/validate", REVIEW, extra="Expect: 100-continue\r\n")[: -len(REVIEW)])
        assert conn.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        conn.sendall(REVIEW)
        status, _, _ = read_answer(conn)
        assert status == 200


def test_pipelined_requests_are_answered_in_order(server):
    with tls(server) as conn:
        conn.sendall(request("/validate", REVIEW) + request("/healthz", method="GET") + request("/nope", b"{}"))
        assert [read_answer(conn)[0] for _ in range(3)] == [200, 200, 404]


def test_many_unfinished_large_bodies_do_not_grow_a_worker_past_its_read_budget(tmp_path):
    """24 clients each send 1.9 MiB of a 2 MiB body and pause: 45 MiB offered to one worker whose
    budget for unfinished requests is 4 x 2 MiB. The worker stops reading (the rest waits in the
    kernel's socket buffers), its memory stays bounded, and every request is answered once the
    clients finish."""
    srv = Server(tmp_path, "--max-body-bytes", "2Mi", "--request-timeout", "60", workers=1).start()
    try:
        [pid] = srv.worker_pids()
        with tls(srv) as warm:  # the app loaded, one request served: the baseline
            warm.sendall(request("/healthz", method="GET"))
            assert read_answer(warm)[0] == 200
        before = status_kib(pid, "VmRSS")
        size, sent = 2 * 1024 * 1024, 1900 * 1024
        clients = [tls(srv, timeout=60) for _ in range(24)]
        head = (f"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n").encode()
        left = {}
        for c in clients:
            c.sendall(head)
            c.settimeout(0.2)
            done = 0
            while done < sent:  # until 1.9 MiB are out, or the server stops reading
                try:
                    done += c.send(b" " * min(65536, sent - done))
                except (TimeoutError, ssl.SSLWantWriteError):
                    break
            left[c] = size - done
            c.settimeout(60)
        time.sleep(1)
        grown_mib = (status_kib(pid, "VmRSS") - before) / 1024
        assert grown_mib < 30, f"the worker grew {grown_mib:.0f} MiB holding unfinished bodies"
        # finish every body (a 400 each: blanks are not a review); parked clients are read again
        threads = [threading.Thread(target=c.sendall, args=(b" " * left[c],)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:  # all sends finish: the server reads every parked client in turn
            t.join(timeout=60)
            assert not t.is_alive(), "a client could not finish sending: the server stopped reading it"
        for c in clients:
            code, headers, _ = read_answer(c)
            assert code == 400 and headers["content-type"] == "application/json"
        for c in clients:
            c.close()
    finally:
        srv.stop()


def many_errors_review(roles: int = 120) -> bytes:
    """A ModelServing review of about 27 KiB (answered on the event loop) whose denial is about
    360 KiB: every role breaks several rules."""
    review = json.loads(admission_path("modelservings-create-gang-example-validating").read_bytes())
    template = review["request"]["object"]["spec"]["template"]
    template.pop("gangPolicy", None)
    template["roles"] = [
        {"name": f"Role_{i}_" + "X" * 40, "replicas": -1, "workerReplicas": -1, "entryTemplate": {"spec": {"containers": [{"name": f"BAD_{i}", "image": ""}]}}}
        for i in range(roles)
    ]
    return json.dumps(review).encode()


def test_a_client_that_does_not_read_its_answers_does_not_hold_up_the_event_loop(tmp_path):
    """Small requests are answered on the event loop, which must never wait for a client: an
    answer the socket does not take at once is finished by a thread. One worker, so the prompt
    client shares the loop with the one that does not read."""
    srv = Server(tmp_path, "--threads", "2", workers=1).start()
    big = many_errors_review()
    count = 24  # about 8.6 MiB of answers: far beyond what the sockets' buffers hold
    try:
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
        raw.settimeout(30)
        raw.connect(("127.0.0.1", srv.port))
        reader = srv.ssl_context().wrap_socket(raw, server_hostname="localhost")

        def send_all() -> None:
            for _ in range(count):
                reader.sendall(request("/validate", big))
                time.sleep(0.02)  # one at a time: each request arrives alone

        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        time.sleep(1.5)  # the server has answered what the sockets hold and is stuck on the rest
        for _ in range(3):
            assert review_seconds(srv, 5) < 1.0
        answers = [read_answer(reader) for _ in range(count)]
        sender.join(timeout=10)
        assert all(code == 200 and json.loads(body)["response"]["status"]["code"] == 422 for code, _, body in answers)
        reader.close()
    finally:
        srv.stop()


def test_at_the_connection_limit_silent_clients_make_room_for_a_review(tmp_path):
    """More silent clients than a worker's `worker_connections` (gunicorn's 1000): the worker closes
    the one that has waited longest without a request, so a review on a new connection is answered
    at once instead of waiting in the backlog until a silent one's request timeout frees a slot.
    A kept-alive connection that sent a request before stays."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 1400  # 1,100 silent clients, the server's 1,000 accepted and a margin, in each process
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"needs {need} open files; the hard limit here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need) if soft != resource.RLIM_INFINITY else soft, hard))
    srv = Server(tmp_path, "--request-timeout", "30", workers=1).start()  # the server inherits the limit
    silent: list[socket.socket] = []
    try:
        kept = tls(srv)
        kept.sendall(request("/healthz", method="GET"))
        assert read_answer(kept)[0] == 200
        silent = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(1100)]
        assert review_seconds(srv, 10) < 5
        kept.sendall(request("/healthz", method="GET"))
        assert read_answer(kept)[0] == 200
        silent[0].settimeout(5)
        assert silent[0].recv(100) == b""  # the oldest silent client made room
    finally:
        for s in silent:
            s.close()
        srv.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
