"""Start-up problems an operator can fix end in exit code 2 and one line naming the fix, never a
traceback: refused permissions, an unreachable or erroring API server, an unusable kubeconfig, a
port taken or a host not this machine's, certificate and other files that cannot be read or written.
The real commands run as child processes (forked: tests/support/commands.py) against the fake API
server (tests/fakes/apiserver.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
import yaml
from support.commands import run_webhook

REPO = Path(__file__).resolve().parents[1]
NS, SECRET = "servinggate-system", "servinggate-webhook-tls"


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def taken_port():
    """A port something listens on, for as long as the test runs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


NOT_HERE = "192.0.2.1"  # TEST-NET-1 (RFC 5737): an address no machine of ours has, no DNS asked


def kubeconfig_for(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return path


def run(tmp: Path, *argv: str, kubeconfig: Path | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """`python -m webhook ARGV` outside any cluster: only `kubeconfig` (if given) leads to an API."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "SERVINGGATE_", "KUBECONFIG"))}
    env["HOME"] = str(tmp)
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return run_webhook(argv, env=env, timeout=timeout)


def serve_self(tmp: Path, *extra: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run(
        tmp,
        "serve",
        "--cert-management",
        "self",
        "--host",
        "127.0.0.1",
        "--port",
        str(closed_port()),
        "--certs-dir",
        str(tmp / "certs"),
        "--metrics-dir",
        str(tmp / "metrics"),
        "--metrics-port",
        "0",  # no fixed port: tests run side by side (./dev test runs several workers)
        "--kube-lookups",
        "off",
        *extra,
        kubeconfig=kubeconfig,
    )


def _is_log_record(line: str) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and "level" in record


def the_one_line(proc: subprocess.CompletedProcess[str], command: str) -> str:
    """Exit 2, no traceback, and besides the JSON log records of work done before the failure,
    stderr is one line, the last: `servinggate COMMAND: ...`. No warning-level chatter either
    (urllib3's retry notices said the same thing three times)."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if not _is_log_record(line)]
    assert errors == lines[-1:], proc.stderr
    assert lines[-1].startswith(f"servinggate {command}: "), lines[-1]
    assert not [line for line in lines[:-1] if json.loads(line)["level"] != "info"], proc.stderr
    return lines[-1]


# ---- serve --cert-management self ---------------------------------------------------------------


def test_serve_without_permission_to_read_its_secret(fake_api, tmp_path):
    fake_api.fail(
        "GET",
        r"/secrets/",
        403,
        "Forbidden",
        f'secrets "{SECRET}" is forbidden: User "system:serviceaccount:{NS}:servinggate-webhook" '
        f'cannot get resource "secrets" in API group "" in the namespace "{NS}"',
    )
    proc = serve_self(tmp_path, kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig"))
    line = the_one_line(proc, "serve")
    assert proc.stderr.strip() == line  # nothing happened before: the line is all there is
    assert "forbidden" in line and "cannot get secrets" in line and f"in namespace {NS}" in line
    assert not (tmp_path / "certs" / "tls.crt").exists()


def test_serve_without_permission_to_create_its_secret(fake_api, tmp_path):
    fake_api.fail("POST", r"/secrets$", 403, "Forbidden", "forbidden")
    line = the_one_line(serve_self(tmp_path, kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig")), "serve")
    assert "cannot create secrets" in line and f"in namespace {NS}" in line


def test_serve_without_permission_to_patch_a_webhook_configuration(fake_api, tmp_path):
    for doc in yaml.safe_load_all((REPO / "manifests" / "base" / "webhook-configurations.yaml").read_text()):
        if doc:
            fake_api.put_hook(doc)
    fake_api.fail("PATCH", r"mutatingwebhookconfigurations/", 403, "Forbidden", "forbidden")
    line = the_one_line(serve_self(tmp_path, kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig")), "serve")
    assert "cannot patch mutatingwebhookconfigurations" in line


@pytest.mark.parametrize("code, reason, needle", [(401, "Unauthorized", "unauthorized"), (500, "InternalError", "API server error 500")])
def test_serve_when_the_api_server_refuses_or_fails(fake_api, tmp_path, code, reason, needle):
    fake_api.fail("GET", r"/secrets/", code, reason, "no")
    line = the_one_line(serve_self(tmp_path, kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig")), "serve")
    assert needle in line


def test_serve_with_the_api_server_unreachable(tmp_path):
    port = closed_port()
    proc = serve_self(tmp_path, kubeconfig=kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}"))
    line = the_one_line(proc, "serve")
    assert proc.stderr.strip() == line
    assert f"API server unreachable at 127.0.0.1:{port}" in line


def test_serve_uses_the_kubeconfig_flag(fake_api, tmp_path):
    fake_api.fail("GET", r"/secrets/", 403, "Forbidden", "forbidden")
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    line = the_one_line(serve_self(tmp_path, "--kubeconfig", str(kubeconfig)), "serve")
    assert "cannot get secrets" in line


def test_serve_without_any_kubeconfig(tmp_path):
    line = the_one_line(serve_self(tmp_path), "serve")
    assert "--cert-management self needs access to the API server" in line


def test_serve_with_an_unwritable_certs_dir(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    proc = run(
        tmp_path,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(closed_port()),
        "--certs-dir",
        str(tmp_path / "file" / "certs"),
        "--metrics-dir",
        str(tmp_path / "metrics"),
        "--metrics-port",
        "0",
        "--kube-lookups",
        "off",
    )
    line = the_one_line(proc, "serve")
    assert str(tmp_path / "file" / "certs") in line


@pytest.mark.parametrize("flag", ["--port", "--metrics-port"])
def test_serve_with_a_port_taken(tmp_path, taken_port, flag):
    """At once, before any work (no certificate made): gunicorn's own bind would retry a taken
    --port five times, a second apart, then exit 1 with its own lines."""
    proc = serve_self(tmp_path, "--cert-management", "files", flag, str(taken_port))
    line = the_one_line(proc, "serve")
    assert proc.stderr.strip() == line
    assert f"{flag} {taken_port}: 127.0.0.1:{taken_port} is already in use" in line and f"choose another {flag}" in line
    assert not (tmp_path / "certs").exists()


def test_serve_on_a_host_not_this_machines(tmp_path):
    line = the_one_line(serve_self(tmp_path, "--cert-management", "files", "--host", NOT_HERE), "serve")
    assert f"--host {NOT_HERE}: not an address of this machine" in line and "0.0.0.0" in line


def test_serve_with_the_metrics_port_its_https_port(tmp_path):
    line = the_one_line(serve_self(tmp_path, "--cert-management", "files", "--port", "9443", "--metrics-port", "9443"), "serve")
    assert "--metrics-port 9443: the same as --port" in line


def _pair(folder: Path) -> tuple[bytes, bytes]:
    assert run_webhook(["certs", "--certs-dir", str(folder)]).returncode == 0
    return (folder / "tls.crt").read_bytes(), (folder / "tls.key").read_bytes()


@pytest.mark.parametrize(
    "broken, needle",
    [
        ("garbage", "tls.crt is not a PEM certificate"),
        ("not a key", "tls.key is not an unencrypted PEM private key"),
        ("another key", "tls.key is not the key of tls.crt"),
        ("folders", "tls.crt: Is a directory"),
    ],
)
def test_serve_with_unusable_certificate_files(tmp_path, broken, needle):
    """One line with the reason; no error record before it (the reload loop logs one)."""
    certs = tmp_path / "certs"
    crt, key = _pair(tmp_path / "pair")
    certs.mkdir()
    if broken == "folders":
        (certs / "tls.crt").mkdir()
        (certs / "tls.key").mkdir()
    else:
        other_key = _pair(tmp_path / "other")[1]
        (certs / "tls.crt").write_bytes(b"garbage\n" if broken == "garbage" else crt)
        (certs / "tls.key").write_bytes({"garbage": key, "not a key": b"garbage\n", "another key": other_key}[broken])
    line = the_one_line(serve_self(tmp_path, "--cert-management", "files"), "serve")
    assert f"--certs-dir {certs}: no usable tls.crt/tls.key: " in line and needle in line
    assert "replace them with a PEM certificate and its key" in line


@pytest.mark.parametrize("make, needle", [(None, "No such file or directory"), (Path.mkdir, "Is a directory")])
def test_serve_with_an_unreadable_client_ca_file(tmp_path, make, needle):
    """After a development pair was generated (a log record, not a bare line before the error)."""
    ca = tmp_path / "clients.pem"
    if make is not None:
        make(ca)
    line = the_one_line(serve_self(tmp_path, "--cert-management", "files", "--client-ca-file", str(ca)), "serve")
    assert f"--client-ca-file {ca}: {needle}; give a readable PEM file of CA certificates" in line
    assert (tmp_path / "certs" / "tls.crt").exists()


def test_serve_with_kube_lookups_on_and_no_api_access(tmp_path):
    """Said once, before the Kubernetes version is read through the same missing kubeconfig."""
    line = the_one_line(serve_self(tmp_path, "--cert-management", "files", "--kube-lookups", "on", "--kubeconfig", str(tmp_path / "nowhere")), "serve")
    assert f"--kube-lookups on: unusable kubeconfig {tmp_path / 'nowhere'}: no such file" in line
    assert "--kube-lookups auto" in line


# ---- reconcile -------------------------------------------------------------------------------


def test_reconcile_with_its_health_port_taken(tmp_path, taken_port):
    kubeconfig = kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{closed_port()}")  # read nothing: scoring is off
    argv = ["reconcile", "--kubeconfig", str(kubeconfig), "--health-host", "127.0.0.1", "--health-port", str(taken_port)]
    line = the_one_line(run(tmp_path, *argv), "reconcile")
    assert f"--health-port {taken_port}: 127.0.0.1:{taken_port} is already in use" in line and "choose another --health-port" in line


def test_reconcile_on_a_host_not_this_machines(tmp_path):
    kubeconfig = kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{closed_port()}")
    line = the_one_line(run(tmp_path, "reconcile", "--kubeconfig", str(kubeconfig), "--health-host", NOT_HERE, "--health-port", "8081"), "reconcile")
    assert f"--health-host {NOT_HERE}: not an address of this machine" in line


def test_reconcile_with_an_unreadable_kubeconfig(tmp_path):
    (tmp_path / "kubeconfig").write_text("not: [valid\n")
    line = the_one_line(run(tmp_path, "reconcile", "--kubeconfig", str(tmp_path / "kubeconfig"), "--health-port", "0"), "reconcile")
    assert f"kubeconfig {tmp_path / 'kubeconfig'}" in line


@pytest.mark.parametrize("extra", [["--clear"], ["--enable-scale-in-score"], ["--dry-run"]])
def test_reconcile_with_the_api_server_unreachable(tmp_path, extra):
    port = closed_port()
    kubeconfig = kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    line = the_one_line(run(tmp_path, "reconcile", "--kubeconfig", str(kubeconfig), "--health-port", "0", *extra, timeout=60), "reconcile")
    assert f"API server unreachable at 127.0.0.1:{port}" in line


def test_reconcile_without_permission_to_list_pods(fake_api, tmp_path):
    fake_api.fail("GET", r"^/api/v1/pods$", 403, "Forbidden", "forbidden")
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    line = the_one_line(run(tmp_path, "reconcile", "--kubeconfig", str(kubeconfig), "--health-port", "0", "--enable-scale-in-score", timeout=60), "reconcile")
    assert "forbidden: cannot list pods" in line


# ---- audit, plan, manifests, certs, check, smoke -------------------------------------------------


def test_audit_every_with_its_health_port_taken(tmp_path, taken_port):
    """A named Kubernetes version: nothing is read before the health port is bound."""
    kubeconfig = kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{closed_port()}")
    argv = ["audit", "--kubeconfig", str(kubeconfig), "--every", "10m", "--kubernetes-version", "1.30"]
    line = the_one_line(run(tmp_path, *argv, "--health-host", "127.0.0.1", "--health-port", str(taken_port)), "audit")
    assert f"--health-port {taken_port}: 127.0.0.1:{taken_port} is already in use" in line


@pytest.mark.parametrize("where", ["missing/plan.svg", "folder"])
def test_plan_with_an_unwritable_svg(tmp_path, where):
    (tmp_path / "folder").mkdir()
    (tmp_path / "snapshot.json").write_text('{"nodes": {"items": []}, "pods": {"items": []}}')
    svg = tmp_path / where
    line = the_one_line(run(tmp_path, "plan", "--snapshot", str(tmp_path / "snapshot.json"), "--svg", str(svg)), "plan")
    assert f"--svg {svg}: cannot write: " in line and "give a file in a folder that exists" in line


def test_manifests_into_a_file(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    line = the_one_line(run(tmp_path, "manifests", "--manifests-dir", str(tmp_path / "file"), "--chart-dir", str(tmp_path / "chart")), "manifests")
    assert f"--manifests-dir {tmp_path / 'file'}: not a folder" in line
    assert not (tmp_path / "chart").exists()  # nothing written


def test_manifests_into_a_folder_that_cannot_be_made(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    chart = tmp_path / "file" / "chart"
    line = the_one_line(run(tmp_path, "manifests", "--manifests-dir", str(tmp_path / "manifests"), "--chart-dir", str(chart)), "manifests")
    assert f"--chart-dir {chart}: cannot write the generated files" in line and "Not a directory" in line


def test_certs_into_a_folder_that_cannot_be_made(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    line = the_one_line(run(tmp_path, "certs", "--certs-dir", str(tmp_path / "file" / "certs")), "certs")
    assert f"--certs-dir {tmp_path / 'file' / 'certs'}: cannot write certificates there" in line


def test_check_with_a_config_file_that_is_a_folder(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "empty.yaml").write_text("")
    line = the_one_line(run(tmp_path, "check", "--config", str(tmp_path / "config"), str(tmp_path / "empty.yaml")), "check")
    assert f"--config {tmp_path / 'config'}: cannot read: Is a directory" in line


def test_smoke_with_a_missing_kubeconfig(tmp_path):
    line = the_one_line(run(tmp_path, "smoke", "--kubeconfig", str(tmp_path / "nowhere")), "smoke")
    assert f"unusable kubeconfig {tmp_path / 'nowhere'}: no such file" in line
