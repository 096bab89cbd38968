"""The forked command runner the command-line tests use (tests/support/commands.py) shows what a
new interpreter would: exit codes, both streams, stdin, the environment and working directory
given, and a traceback with exit 1 for an exception that escapes."""

from __future__ import annotations

import subprocess

import pytest
from support.commands import run_webhook

import webhook.version


def test_a_command_runs_with_its_own_streams_environment_and_folder(tmp_path):
    proc = run_webhook(["--version"], env={"PATH": "/usr/bin", "HOME": str(tmp_path)}, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("servinggate ") and proc.stderr == ""
    proc = run_webhook(["check", "-"], input="kind: [unterminated\n")
    assert proc.returncode == 2 and "<stdin>" in proc.stdout + proc.stderr
    proc = run_webhook(["frobnicate"])
    assert proc.returncode == 2 and "unknown command 'frobnicate'" in proc.stderr


def test_an_escaping_exception_is_a_traceback_and_exit_1(monkeypatch):
    def broken(argv):
        raise RuntimeError("a bug")

    monkeypatch.setattr(webhook.version, "main", broken)  # the child is forked after this
    proc = run_webhook(["version"])
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr and "RuntimeError: a bug" in proc.stderr


def test_a_command_past_its_timeout_is_killed(monkeypatch):
    import time

    monkeypatch.setattr(webhook.version, "main", lambda argv: time.sleep(30))
    with pytest.raises(subprocess.TimeoutExpired):
        run_webhook(["version"], timeout=0.5)


def test_serve_runs_in_a_new_interpreter_whatever_this_process_imported(tmp_path):
    import os

    import prometheus_client  # noqa: F401  (as other tests of this process will have)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "SERVINGGATE_", "KUBECONFIG"))}
    env["HOME"] = str(tmp_path)
    argv = ["serve", "--cert-management", "self", "--host", "127.0.0.1", "--metrics-port", "0", "--kube-lookups", "off"]
    proc = run_webhook([*argv, "--certs-dir", str(tmp_path / "certs"), "--metrics-dir", str(tmp_path / "m")], env=env)
    # past the metrics folder's check (webhook/serving/startup.py), to the missing API access
    assert proc.returncode == 2 and "--cert-management self needs access to the API server" in proc.stderr, proc.stderr
