"""`python -m webhook ARGV` as a child process forked from the test process, not a new interpreter.

A new interpreter spends most of a second importing the webhook's dependencies (the Kubernetes
client, cryptography, flask) before the command does anything, and the command-line tests run
the commands about a hundred times. The test process has imported them already, so `run_webhook`
forks it and runs the real entry point (`webhook.__main__.main`) in the child with the argv,
environment, working directory and stdin given, stdout and stderr on pipes, exiting with the
command's code. What a test observes is what a new interpreter shows: the exit code (1 and a
traceback on stderr for an exception that escapes, as Python's own handler prints it), both
streams, and files written; the child is a process of its own, so its sockets, signals and
logging are its own. What differs: modules are imported before the child's environment is set,
so a module that read the environment at import would see the test process's, and the child
starts with the test process's other module state (caches), never with its threads. `serve` is
the one command that cares: prometheus_client must first be imported after the metrics folder is
set (webhook/serving/startup.py), and a test process has often imported it, so `serve` runs in a
new interpreter, as it would from the shell.
"""

from __future__ import annotations

import importlib
import io
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _child(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None) -> int:
    """In the forked child, fds 0-2 already the pipes: run the command as `python -m webhook` would."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGALRM):
        signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
    signal.setitimer(signal.ITIMER_REAL, 0)
    os.chdir(cwd)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.argv = [str(REPO / "webhook" / "__main__.py"), *argv]
    root = logging.getLogger()
    root.handlers.clear()  # the test process's (pytest's capture): a new interpreter has none
    root.setLevel(logging.WARNING)
    try:
        from webhook.__main__ import main

        code: object = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # what Python's own handler does with an exception that escapes
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    return code


def _import_command(argv: Sequence[str]) -> None:
    """Import the command's module here, once, so that no child imports it again."""
    from webhook.__main__ import COMMANDS

    if argv and argv[0] in COMMANDS:
        importlib.import_module(COMMANDS[argv[0]][0])


def run_webhook(
    argv: Sequence[str], *, cwd: Path | str = REPO, env: Mapping[str, str] | None = None, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """As `subprocess.run([sys.executable, "-m", "webhook", *argv], cwd=cwd, env=env, input=input,
    capture_output=True, text=True, timeout=timeout)`, in a child forked from this process."""
    if list(argv[:1]) == ["serve"]:
        return subprocess.run([sys.executable, "-m", "webhook", *argv], cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=timeout)
    _import_command(argv)
    fds = [os.pipe() for _ in range(3)]
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = fds
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test process
        code = 1
        try:
            os.dup2(in_r, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            code = _child(argv, Path(cwd), env)
        finally:
            os._exit(code)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    return _collect(pid, list(argv), in_w, out_r, err_r, input, timeout)


def _collect(pid: int, argv: list[str], in_w: int, out_r: int, err_r: int, input: str | None, timeout: float) -> subprocess.CompletedProcess[str]:
    """Feed stdin, read both streams to their end, and reap the child (killed past `timeout`)."""
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
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(["python", "-m", "webhook", *argv], timeout)
            for key, _ in sel.select(left):
                fd = key.fd
                if fd == in_w:
                    try:
                        pending = pending[os.write(in_w, pending[:65536]) :]
                    except BrokenPipeError:
                        pending = b""
                    if not pending:
                        sel.unregister(in_w)
                        os.close(in_w)
                    continue
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    sel.unregister(fd)
                    os.close(fd)
    finally:
        for key in list(sel.get_map().values()):  # left open only when the child was killed
            os.close(key.fd)
        sel.close()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    out, err = (b"".join(chunks[fd]).decode("utf-8", "replace") for fd in (out_r, err_r))
    return subprocess.CompletedProcess(["python", "-m", "webhook", *argv], code, out, err)
