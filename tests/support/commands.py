"""`python -m webhook ARGV` as a child process forked from a warm interpreter, not a new one.

A new interpreter spends most of a second importing the webhook's dependencies (the Kubernetes
client, cryptography, flask) before a command does anything, and the command-line tests run the
commands about a hundred times. Each test process starts one helper interpreter
(tests/support/zygote.py) that has imported those dependencies and the modules of the commands
that import nothing reading the environment at import; `run_webhook`
asks it to fork a child that runs `python -m webhook ARGV` with the environment, working folder
and stdin given, and stdout and stderr on pipes. The child starts as a new interpreter would, but
for those imports: prometheus_client is imported by the command (`serve` must import it after
setting its metrics folder), and so are `audit`'s and `reconcile`'s modules. What a test observes is
what a new interpreter shows: the exit code (1 and a traceback on stderr for an exception that
escapes), both streams, and files written.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ZYGOTE = Path(__file__).with_name("zygote.py")


class _Zygote:
    """The helper interpreter of this process, started on first use, one request at a time."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen([sys.executable, str(ZYGOTE), str(theirs.fileno())], pass_fds=[theirs.fileno()], cwd=REPO)
        theirs.close()
        self.sock = ours
        self.replies = ours.makefile("rb")
        self.lock = threading.Lock()
        self.pid = os.getpid()
        atexit.register(self.close)

    def close(self) -> None:
        self.replies.close()  # the file holds the socket open too: both go, and the zygote sees EOF
        self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def reply(self) -> dict:
        line = self.replies.readline()
        if not line:
            raise RuntimeError(f"the command zygote ended (exit {self.proc.poll()})")
        return json.loads(line)


_zygote: _Zygote | None = None


def _the_zygote() -> _Zygote:
    global _zygote
    if _zygote is None or _zygote.pid != os.getpid() or _zygote.proc.poll() is not None:
        _zygote = _Zygote()
    return _zygote


def run_module(
    module: str, argv: Sequence[str], *, cwd: Path | str = REPO, env: Mapping[str, str] | None = None, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """As `subprocess.run([sys.executable, "-m", module, *argv], cwd=cwd, env=env, input=input,
    capture_output=True, text=True, timeout=timeout)`, forked from the zygote."""
    args = ["python", "-m", module, *argv]
    request = {"module": module, "argv": list(argv), "cwd": str(cwd), "env": dict(os.environ if env is None else env)}
    zygote = _the_zygote()
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe(), os.pipe()
    with zygote.lock:
        try:
            socket.send_fds(zygote.sock, [json.dumps(request).encode()], [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        pid = zygote.reply()["pid"]
        try:
            out, err = _collect(pid, in_w, out_r, err_r, input, timeout)
        except subprocess.TimeoutExpired:
            zygote.reply()  # the killed child's status
            raise subprocess.TimeoutExpired(args, timeout) from None
        status = zygote.reply()["status"]
    return subprocess.CompletedProcess(args, status, out, err)


def run_webhook(argv: Sequence[str], **kwargs) -> subprocess.CompletedProcess[str]:
    """`python -m webhook ARGV` (run_module's keywords)."""
    return run_module("webhook", argv, **kwargs)


def _collect(pid: int, in_w: int, out_r: int, err_r: int, input: str | None, timeout: float) -> tuple[str, str]:
    """Feed stdin and read both streams to their end; past `timeout` the child is killed."""
    pending = (input or "").encode()
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    sel = selectors.DefaultSelector()
    os.set_blocking(in_w, False)
    if pending:
        sel.register(in_w, selectors.EVENT_WRITE)
    else:
        os.close(in_w)
    for fd in chunks:
        sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired("", timeout)
            for key, _ in sel.select(left):
                if key.fd == in_w:
                    try:
                        pending = pending[os.write(in_w, pending[:65536]) :]
                    except BrokenPipeError:
                        pending = b""
                    if not pending:
                        sel.unregister(in_w)
                        os.close(in_w)
                    continue
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fd)
                    os.close(key.fd)
    finally:
        for key in list(sel.get_map().values()):  # left open only when the child was killed
            os.close(key.fd)
        sel.close()
    out, err = (b"".join(chunks[fd]).decode("utf-8", "replace") for fd in (out_r, err_r))
    return out, err
