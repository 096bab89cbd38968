"""Start-up problems an operator can fix end in exit code 2 and one line naming the fix, never a
traceback: refused permissions, an unreachable or erroring API server, an unusable kubeconfig.
The real commands run as subprocesses against the fake API server (tests/fakes/apiserver.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
NS, SECRET = "servinggate-system", "servinggate-webhook-tls"


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    return subprocess.run([sys.executable, "-m", "webhook", *argv], cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)


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
        "0",  # no fixed port: tests run side by side (./dev test runs one worker per core)
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


# ---- reconcile -------------------------------------------------------------------------------


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
