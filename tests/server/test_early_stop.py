"""A SIGTERM that reaches a worker between its fork and gunicorn's own signal handlers.

Until `Worker.init_signals`, the child runs the master's handler, which queues the signal in the
child's copy of the master's queue, where nobody reads it: the worker served on until the master
killed it `graceful_timeout` (20 s) later. Each case runs in a process of its own, with the
master's handler as gunicorn 27.0 installs it, so that real signals reach real handlers and the
test runner's own handlers are left alone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from support import REPO

CHILD = textwrap.dedent(
    """
    import os, queue, signal, sys, tempfile, types
    from webhook.config import compose
    from webhook.server.launch import gunicorn_options
    from webhook.servesettings import ServeSettings

    def forked_child(*queued):
        # What the child has right after the fork: the master's queue and the master's handler.
        arbiter = types.SimpleNamespace(SIG_QUEUE=queue.SimpleQueue())
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(sig, lambda signum, frame: arbiter.SIG_QUEUE.put_nowait(signum))
        for sig in queued:
            os.kill(os.getpid(), sig)  # sent before post_fork: lands in the queue
        return arbiter, types.SimpleNamespace(alive=True)

    post_fork = gunicorn_options(compose(ServeSettings, certs_dir=tempfile.mkdtemp()), certificates=None)["post_fork"]
    case = sys.argv[1]
    if case == "queued-term":
        arbiter, worker = forked_child(signal.SIGTERM)
        post_fork(arbiter, worker)
    elif case == "queued-hup":
        arbiter, worker = forked_child(signal.SIGHUP)
        post_fork(arbiter, worker)
    elif case == "term-after":
        arbiter, worker = forked_child()
        post_fork(arbiter, worker)
        os.kill(os.getpid(), signal.SIGTERM)  # before gunicorn's handlers: ours has it
    print("alive" if worker.alive else "stopping")
    """
)


def child(case: str) -> str:
    proc = subprocess.run([sys.executable, "-c", CHILD, case], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_sigterm_queued_before_post_fork_stops_the_worker():
    assert child("queued-term") == "stopping"


def test_a_sigterm_after_post_fork_and_before_gunicorns_handlers_stops_the_worker():
    assert child("term-after") == "stopping"


def test_a_signal_that_is_no_stop_leaves_the_worker_serving():
    """SIGHUP is the master's (reload); the worker it reached before its handlers goes on."""
    assert child("queued-hup") == "alive"
