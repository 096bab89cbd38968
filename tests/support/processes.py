"""Ending a child process as its supervisor would: SIGTERM, a grace period, then SIGKILL. Shared by
the e2e supervisor and the benchmarks, so a process that ignores SIGTERM never hangs a run."""

from __future__ import annotations

import signal
import subprocess


def stop(proc: subprocess.Popen, grace: float = 30) -> None:
    """End `proc` unless it has ended: SIGTERM, up to `grace` seconds, then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
