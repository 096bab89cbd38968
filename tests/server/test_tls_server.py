"""The real server: gunicorn in a subprocess, real TLS verified against the generated CA."""

from __future__ import annotations

import base64
import http.client
import json
import re
import signal
import socket
import ssl
import threading
import time

import jsonpatch
import pytest
from cryptography import x509
from serverproc import Server  # noqa: E402  (tests/server is on sys.path via conftest)
from support import admission_fixture_paths, admission_path  # noqa: E402  (tests/ is on sys.path via the root conftest)

from webhook.certs.files import write_file
from webhook.certs.issuing import generate_ca, generate_serving

FIXTURES = admission_fixture_paths()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("srv"), "--max-body-bytes", "1Mi").start()
    yield srv
    srv.stop()


def post(server, path, body, content_type="application/json", conn=None):
    own = conn is None
    conn = conn or http.client.HTTPSConnection("localhost", server.port, context=server.ssl_context(), timeout=10)
    conn.request("POST", path, body=body, headers={"Content-Type": content_type})
    resp = conn.getresponse()
    data = resp.read()
    if own:
        conn.close()
    return resp, data


def test_generated_certificates_cover_the_service_names_and_keys_are_private(server):
    cert = x509.load_pem_x509_certificate((server.certs / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = set(sans.get_values_for_type(x509.DNSName))
    assert {
        "localhost",
        "servinggate-webhook",
        "servinggate-webhook.servinggate-system",
        "servinggate-webhook.servinggate-system.svc",
        "servinggate-webhook.servinggate-system.svc.cluster.local",
    } <= names
    assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    ca = x509.load_pem_x509_certificate((server.certs / "ca.crt").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.issuer == ca.subject and cert.subject != cert.issuer
    for key in ("tls.key", "ca.key"):
        assert (server.certs / key).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_recorded_review_gets_a_contract_answer_over_tls(server, path):
    raw = path.read_bytes()
    doc = json.loads(raw)
    endpoint = "/mutate" if path.stem.endswith("-mutating") else "/validate"
    resp, data = post(server, endpoint, raw)
    assert resp.status == 200 and resp.getheader("Content-Type") == "application/json"
    answer = json.loads(data)
    assert answer["apiVersion"] == doc["apiVersion"] and answer["kind"] == "AdmissionReview"
    r = answer["response"]
    assert r["uid"] == doc["request"]["uid"]
    assert isinstance(r["allowed"], bool)
    for w in r.get("warnings", []):
        assert len(w) <= 256
    if not r["allowed"]:
        assert r["status"]["code"] in (403, 422) and r["status"]["message"]
    if "patch" in r:
        assert endpoint == "/mutate" and r["patchType"] == "JSONPatch"
        ops = json.loads(base64.b64decode(r["patch"]))
        assert ops, "an empty patch must be left out"
        patched = jsonpatch.apply_patch(doc["request"]["object"], ops)
        assert patched != doc["request"]["object"]
    else:
        assert "patchType" not in r


def test_many_reviews_on_one_keep_alive_connection(server):
    conn = http.client.HTTPSConnection("localhost", server.port, context=server.ssl_context(), timeout=10)
    body = FIXTURES[0].read_bytes()
    conn.connect()
    first_sock = conn.sock
    for _ in range(20):
        resp, _ = post(server, "/validate", body, conn=conn)
        assert resp.status == 200
    assert conn.sock is first_sock  # the server kept the connection open
    conn.close()


def status(data):
    body = json.loads(data)
    assert body["kind"] == "Status" and body["status"] == "Failure"
    return body


def test_bad_input_matrix_over_tls(server):
    pod = FIXTURES[0].read_bytes()
    conn = http.client.HTTPSConnection("localhost", server.port, context=server.ssl_context(), timeout=10)
    conn.request("GET", "/validate")
    resp = conn.getresponse()
    assert resp.status == 405 and "method GET not allowed" in status(resp.read())["message"]
    conn.close()
    cases = [
        ("/validate", pod, "text/yaml", 415, "Content-Type must be application/json"),
        ("/validate", b"{oops", "application/json", 400, "body is not valid JSON"),
        ("/validate", b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', "application/json", 400, "request: required"),
        ("/validate", b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}', "application/json", 400, "request.uid: required"),
        ("/validate", b'{"apiVersion":"v1","kind":"AdmissionReview","request":{"uid":"1"}}', "application/json", 400, "apiVersion: unsupported"),
        ("/mutate", b"[" + b"0," * 600_000 + b"0]", "application/json", 413, "exceeds the limit of 1048576 bytes"),
    ]
    for path, body, ctype, code, needle in cases:
        resp, data = post(server, path, body, ctype)
        assert resp.status == code, (path, ctype, code, data[:200])
        assert needle in status(data)["message"]
        assert b"<html" not in data.lower()


def test_oversized_chunked_body_is_413_over_tls(server):
    conn = http.client.HTTPSConnection("localhost", server.port, context=server.ssl_context(), timeout=10)

    def chunks():
        yield b"["
        for _ in range(300):
            yield b"0," * 2000
        yield b"0]"

    conn.request("POST", "/validate", body=chunks(), headers={"Content-Type": "application/json"}, encode_chunked=True)
    resp = conn.getresponse()
    assert resp.status == 413 and "exceeds the limit" in status(resp.read())["message"]
    conn.close()


def test_no_session_tickets_for_a_client_that_keeps_no_sessions(server):
    """The API server's webhook client keeps no TLS session cache, so a ticket is never used:
    each would cost our server an encryption and a record per new connection, and the API server
    a decryption. A TLS 1.3 client that has read an answer holds no ticket from us."""
    context = server.ssl_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    conn = http.client.HTTPSConnection("localhost", server.port, context=context, timeout=10)
    try:
        resp, _ = post(server, "/validate", b"{}", conn=conn)  # tickets arrive after the handshake
        assert resp.status == 400
        assert conn.sock.version() == "TLSv1.3"
        assert conn.sock.session is not None and not conn.sock.session.has_ticket
    finally:
        conn.close()


def test_tls_below_the_minimum_version_is_refused(tmp_path):
    srv = Server(tmp_path, "--tls-min-version", "1.3", workers=1).start()
    try:
        ctx = srv.ssl_context()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises(ssl.SSLError):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as raw:
                with ctx.wrap_socket(raw, server_hostname="localhost"):
                    pass
        ok = srv.ssl_context()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as raw:
            with ok.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.version() == "TLSv1.3"
    finally:
        srv.stop()


def served_serial(srv) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # we only read which certificate is presented
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def test_replaced_certificate_files_are_served_to_new_connections_without_restart(tmp_path):
    srv = Server(tmp_path, workers=2).start()
    try:
        old = x509.load_pem_x509_certificate((srv.certs / "tls.crt").read_bytes()).serial_number
        assert served_serial(srv) == old
        ca = generate_ca("rotated-ca")
        pair = generate_serving(ca, ["localhost", "127.0.0.1"])
        new = x509.load_pem_x509_certificate(pair.cert_pem).serial_number
        write_file(srv.certs / "tls.key", pair.key_pem, 0o600)
        write_file(srv.certs / "tls.crt", pair.cert_pem, 0o644)
        write_file(srv.certs / "ca.crt", ca.cert_pem, 0o644)
        seen = set()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # both workers must pick it up; the reload period is 1 s
            seen = {served_serial(srv) for _ in range(8)}
            if seen == {new}:
                break
            time.sleep(0.3)
        assert seen == {new}
        resp, _ = post(srv, "/validate", FIXTURES[0].read_bytes())  # verified against the new CA
        assert resp.status == 200
        assert served_serial(srv) == new and "serial" in srv.log()
    finally:
        srv.stop()


def test_metrics_add_up_across_workers_and_concurrent_clients(tmp_path):
    srv = Server(tmp_path, workers=2).start()
    try:
        body = admission_path("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating").read_bytes()
        per_client, clients = 25, 8
        errors: list[str] = []

        def run():
            conn = None
            for i in range(per_client):
                if conn is None or i % 5 == 0:  # new connections spread the load over both workers
                    if conn is not None:
                        conn.close()
                    conn = http.client.HTTPSConnection("localhost", srv.port, context=srv.ssl_context(), timeout=10)
                resp, _ = post(srv, "/mutate", body, conn=conn)
                if resp.status != 200:
                    errors.append(str(resp.status))
            conn.close()

        threads = [threading.Thread(target=run) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        conn = http.client.HTTPSConnection("localhost", srv.port, context=srv.ssl_context(), timeout=10)
        conn.request("GET", "/metrics")
        assert conn.getresponse().status == 404  # the admission port serves reviews and health only
        plain = http.client.HTTPConnection("127.0.0.1", srv.metrics_port, timeout=10)
        plain.request("GET", "/metrics")
        text = plain.getresponse().read().decode()
        total = sum(float(v) for v in re.findall(r'^servinggate_admission_requests_total\{[^}]*endpoint="mutate"[^}]*\} (\S+)$', text, re.M))
        count = sum(float(v) for v in re.findall(r'^servinggate_admission_request_duration_seconds_count\{endpoint="mutate"\} (\S+)$', text, re.M))
        assert total == per_client * clients
        assert count == per_client * clients
        assert len(list((tmp_path / "metrics").glob("counter_*.db"))) >= 2  # one file per process
        in_flight = re.findall(r'^servinggate_admission_in_flight_requests\{endpoint="mutate"\} (\S+)$', text, re.M)
        assert in_flight == ["0.0"]
    finally:
        srv.stop()


def test_sigterm_lets_an_in_flight_review_finish(tmp_path):
    srv = Server(tmp_path, workers=1).start()
    body = admission_path("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating").read_bytes()
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    tls = srv.ssl_context().wrap_socket(raw, server_hostname="localhost")
    head = (f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    tls.sendall(head + body[:100])
    time.sleep(0.5)  # the worker is now reading this request
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    tls.sendall(body[100:])
    data = b""
    while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < 50:
        chunk = tls.recv(65536)
        if not chunk:
            break
        data += chunk
    tls.close()
    assert data.startswith(b"HTTP/1.1 200")
    answer = json.loads(data.split(b"\r\n\r\n", 1)[1])
    assert answer["response"]["uid"] == json.loads(body)["request"]["uid"]
    assert srv.proc.wait(30) == 0
    srv.stop()
