"""`--client-ca-file`: only a client whose certificate the named CA signed completes a handshake.

A real server in a subprocess and real certificates: the API server's side is a client
certificate (TLS client authentication) given to it through its admission configuration.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import sys

import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID
from serverproc import Server  # noqa: E402  (tests/server is on sys.path via conftest)
from support import REPO  # noqa: E402  (tests/ is on sys.path via the root conftest)

from webhook.certs.files import write_file
from webhook.certs.issuing import SERVING_DAYS, Pair, _leaf, generate_ca


def generate_client(ca: Pair, common_name: str) -> Pair:
    """A client certificate (TLS client authentication) named `common_name`, signed by `ca`: what
    the API server presents to a webhook that requires one (`--client-ca-file`). Only tests make
    one; the serving certificate's leaf builder signs it."""
    return _leaf(ca, common_name, [], ExtendedKeyUsageOID.CLIENT_AUTH, SERVING_DAYS, None)


def _write_client(tmp, name, ca):
    pair = generate_client(ca, name)
    cert, key = tmp / f"{name}.crt", tmp / f"{name}.key"
    write_file(cert, pair.cert_pem, 0o644)
    write_file(key, pair.key_pem, 0o600)
    return cert, key


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clients")
    trusted, stranger = generate_ca("apiserver-clients"), generate_ca("someone-else")
    write_file(tmp / "clients-ca.crt", trusted.cert_pem, 0o644)
    return {"ca": tmp / "clients-ca.crt", "apiserver": _write_client(tmp, "kube-apiserver", trusted), "stranger": _write_client(tmp, "stranger", stranger)}


@pytest.fixture(scope="module")
def server(tmp_path_factory, clients):
    srv = Server(tmp_path_factory.mktemp("srv"), "--client-ca-file", str(clients["ca"]), client_cert=clients["apiserver"]).start()
    yield srv
    srv.stop()


def _get(server, context):
    conn = http.client.HTTPSConnection("localhost", server.port, context=context, timeout=10)
    try:
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _context(server, cert=None):
    context = ssl.create_default_context(cafile=server.ca)
    if cert is not None:
        context.load_cert_chain(*map(str, cert))
    return context


def test_the_api_servers_client_certificate_is_served(server, clients):
    status, _ = _get(server, _context(server, clients["apiserver"]))
    assert status == 200


@pytest.mark.parametrize("who", ["no certificate", "another CA's certificate"])
def test_other_clients_are_refused_at_the_handshake(server, clients, who):
    cert = None if who == "no certificate" else clients["stranger"]
    # TLS 1.3 finishes the client's side of the handshake before the server has judged the client's
    # certificate: the refusal arrives as an alert (or the closed connection) on the first read,
    # before any HTTP answer.
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        _get(server, _context(server, cert))


def test_a_connection_without_certificate_never_reaches_http(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
        with _context(server).wrap_socket(raw, server_hostname="localhost") as tls:
            try:
                tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                data = tls.recv(4096)
            except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
                data = b""
            assert not data.startswith(b"HTTP/"), data


def test_an_unusable_client_ca_file_stops_the_start_with_one_line(tmp_path):
    bad = tmp_path / "not-a-ca.pem"
    bad.write_text("this is no certificate\n")
    for path in (bad, tmp_path / "missing.pem"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "webhook",
                "serve",
                "--certs-dir",
                str(tmp_path / "certs"),
                "--client-ca-file",
                str(path),
                "--kube-lookups",
                "off",
                "--metrics-port",
                "0",
                "--port",
                "1",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        lines = [line for line in done.stderr.splitlines() if "--client-ca-file" in line]
        assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_the_metrics_port_needs_no_client_certificate(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.metrics_port, timeout=10)
    conn.request("GET", "/metrics")
    resp = conn.getresponse()
    assert resp.status == 200 and b"servinggate" in resp.read()
    conn.close()


def test_a_review_from_the_api_servers_client_is_answered(server):
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode()
    conn = http.client.HTTPSConnection("localhost", server.port, context=server.ssl_context(), timeout=10)
    conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 400 and json.loads(resp.read())["kind"] == "Status"
    conn.close()


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_the_kubelets_probes_are_answered_on_the_metrics_port_as_on_the_admission_port(server, path):
    conn = http.client.HTTPConnection("127.0.0.1", server.metrics_port, timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    plain = json.loads(resp.read())
    assert resp.status == 200 and resp.getheader("Content-Type") == "application/json" and plain["status"] == "ok", plain
    conn.close()
    conn = http.client.HTTPSConnection("localhost", server.port, context=server.ssl_context(), timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    admission = json.loads(resp.read())
    conn.close()
    assert resp.status == 200 and admission["status"] == "ok"
    if path == "/readyz":  # one meaning: the certificate's state first; a worker adds its own detail after it
        assert plain["detail"].startswith("certificate serial") and admission["detail"].startswith(plain["detail"] + "; ")
    else:
        assert plain == admission
