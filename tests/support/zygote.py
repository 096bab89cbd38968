"""The process tests/support/commands.py forks its commands from: `python zygote.py FD`.

It imports the webhook's heavy dependencies and the modules of the commands that need nothing
else once (never prometheus_client, whose first import `serve` must make itself after setting its
metrics folder, nor the modules of `audit` and `reconcile`, which import it), then serves requests on the
Unix socket FD: each is a JSON object (module, argv, cwd, env) with three file descriptors (the
child's stdin, stdout and stderr). For each it forks a child that runs the module as `python -m`
would, and answers `{"pid": N}` at once and `{"status": S}` (os.waitstatus_to_exitcode) when the
child ends. It ends when the socket closes, which happens when the test process ends.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import socket
import sys
import traceback

# What the commands' starts spend their time importing. None reads the environment at import in
# a way a command relies on (the kubeconfig path is read when a client is made; of ours, only
# webhook/serving/metrics.py reads it, for prometheus_client, and none of these imports it).
PRELOADED = (
    "kubernetes.client",
    "kubernetes.config",
    "kubernetes.watch",
    "cryptography.x509",
    "yaml",
    "jsonpatch",
    "urllib3",
    "flask",
    "gunicorn.app.base",
    "webhook.check.cli",
    "webhook.scalein.plan.planning",
    "webhook.deploy.generating",
    "webhook.certs.cli",
    "webhook.crds.refresh",
    "webhook.version",
    "webhook.smoke.cli",
    "webhook.server.launch",
)


def _run(request: dict, fds: list[int]) -> int:
    """In the child: become `python -m MODULE ARGV` with the request's folder and environment."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]  # `python -m` puts the working folder first
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.argv = ["-m", *request["argv"]]
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # what Python's own handler prints for an exception that escapes
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


def serve(sock: socket.socket) -> None:
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            return
        if not message:
            return
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                sock.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = _run(request, fds)
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        sock.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    for name in PRELOADED:
        __import__(name)
    assert "prometheus_client" not in sys.modules, "serve must import prometheus_client itself"
    serve(sock)


if __name__ == "__main__":
    main()
