"""A stop signal that reaches a worker between its fork and gunicorn's own signal handlers.

Until `Worker.init_signals`, a forked worker runs the master's handler, which queues the signal in
the child's copy of the master's queue, where nobody reads it: the worker served on until the
master killed it `graceful_timeout` (20 s) later. Each case runs in a process of its own that
plays the master as gunicorn 27.0 does (its handler queues the signal), forks as it does, and
sends real signals, so that the test runner's own handlers are left alone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from support import REPO

MASTER = textwrap.dedent(
    """
    import os, queue, signal, sys, tempfile, types
    from webhook.config import compose
    from webhook.server.launch import gunicorn_options
    from webhook.servesettings import ServeSettings

    STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
    queued = queue.SimpleQueue()  # the master's handler, as gunicorn's Arbiter.signal
    for sig in (*STOPS, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: queued.put_nowait(signum))
    options = gunicorn_options(compose(ServeSettings, certs_dir=tempfile.mkdtemp(), metrics_port=0), certificates=None)
    if sys.argv[1] != "unguarded":
        options["when_ready"](None)  # the master, once ready

    def worker(send_before, send_after):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: signals before and after post_fork, then what it would do
            for sig in send_before:
                os.kill(os.getpid(), sig)
            w = types.SimpleNamespace(alive=True)
            options["post_fork"](None, w)
            for sig in send_after:
                os.kill(os.getpid(), sig)
            os.write(write, b"serving" if w.alive else b"stopping")
            os._exit(0)
        os.close(write)
        _, status = os.waitpid(pid, 0)
        return os.read(read, 100).decode() or f"died: {status}"

    case = sys.argv[2]
    sig = getattr(signal, sys.argv[3])
    answer = worker([sig], []) if case == "before" else worker([], [sig])
    os.kill(os.getpid(), signal.SIGTERM)  # the master still gets its own stops after the forks
    print(answer, "master-queued" if queued.get_nowait() == signal.SIGTERM else "master-missed")
    """
)


def fork(guard: str, when: str, sig: str) -> str:
    proc = subprocess.run([sys.executable, "-c", MASTER, guard, when, sig], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_stop_sent_right_after_the_fork_stops_the_worker():
    assert fork("guarded", "before", "SIGTERM") == "stopping master-queued"
    assert fork("guarded", "before", "SIGQUIT") == "stopping master-queued"


def test_a_stop_sent_between_post_fork_and_gunicorns_handlers_stops_the_worker():
    assert fork("guarded", "after", "SIGTERM") == "stopping master-queued"
    assert fork("guarded", "after", "SIGINT") == "stopping master-queued"


def test_without_the_guard_the_stop_is_lost_in_the_masters_queue():
    """What gunicorn alone does, so that the cases above show the guard at work."""
    assert fork("unguarded", "before", "SIGTERM") == "serving master-queued"


def test_a_signal_that_is_no_stop_leaves_the_worker_serving():
    """SIGHUP is the master's (reload): the worker it reached before its handlers goes on."""
    assert fork("guarded", "before", "SIGHUP") == "serving master-queued"
