"""The command runner the command-line tests use (tests/support/commands.py) shows what a new
interpreter would: exit codes, both streams, stdin, the environment and working folder given, a
traceback with exit 1 for an exception that escapes, and `serve`'s metrics start."""

from __future__ import annotations

import os
import subprocess

import pytest
from support import free_port
from support.commands import run_module, run_webhook


def test_a_command_runs_with_its_own_streams_environment_and_folder(tmp_path):
    proc = run_webhook(["--version"], env={"PATH": "/usr/bin", "HOME": str(tmp_path)}, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("servinggate ") and proc.stderr == ""
    proc = run_webhook(["check", "-"], input="kind: [unterminated\n")
    assert proc.returncode == 2 and "<stdin>" in proc.stdout + proc.stderr
    proc = run_webhook(["frobnicate"])
    assert proc.returncode == 2 and "unknown command 'frobnicate'" in proc.stderr
    (tmp_path / "show.py").write_text("import os, sys\nprint(os.getcwd(), os.environ['ONLY'], sys.stdin.read(), sys.argv[1:])\n")
    proc = run_module("show", ["a", "b"], cwd=tmp_path, env={"ONLY": "this"}, input="fed")
    assert proc.stdout == f"{tmp_path} this fed ['a', 'b']\n"


def test_an_escaping_exception_is_a_traceback_and_exit_1(tmp_path):
    (tmp_path / "crash.py").write_text("raise RuntimeError('a bug')\n")
    proc = run_module("crash", [], cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr and "RuntimeError: a bug" in proc.stderr


def test_a_command_past_its_timeout_is_killed_and_the_next_one_runs(tmp_path):
    (tmp_path / "hang.py").write_text("import time\ntime.sleep(30)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run_module("hang", [], cwd=tmp_path, timeout=0.5)
    assert run_webhook(["--version"]).returncode == 0


def test_serve_imports_prometheus_client_itself(tmp_path):
    """Past the metrics folder's check (webhook/serving/startup.py), to the missing API access."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "SERVINGGATE_", "KUBECONFIG"))}
    env["HOME"] = str(tmp_path)
    argv = ["serve", "--cert-management", "self", "--host", "127.0.0.1", "--port", str(free_port()), "--metrics-port", "0", "--kube-lookups", "off"]
    proc = run_webhook([*argv, "--certs-dir", str(tmp_path / "certs"), "--metrics-dir", str(tmp_path / "m")], env=env)
    assert proc.returncode == 2 and "--cert-management self needs access to the API server" in proc.stderr, proc.stderr
