"""A worker's stop signals across its fork, with documented hooks only (gunicorn's `when_ready`
and `post_fork`, Python's `os.register_at_fork`).

Until `Worker.init_signals`, a forked worker runs the master's handler, which puts the signal in
the child's copy of the master's queue (`Arbiter.signal`, gunicorn 27.0), where nobody reads it: a
worker sent SIGTERM then served on until the master killed it `graceful_timeout` later (a pod
stopped right after it started took 20 s longer to go).
"""

from __future__ import annotations

import os
import signal
from typing import Any

STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


_stopped_early: list[int] = []  # in a worker, the stops that came before post_fork


def _note_stop(signum: int, _frame: Any) -> None:
    _stopped_early.append(signum)


def _unblock_stops() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def _note_stops_in_child() -> None:
    for sig in STOPS:
        signal.signal(sig, _note_stop)
    _unblock_stops()


def hold_stops_over_fork() -> None:
    """In the master, once before it forks a worker (gunicorn's `when_ready`): a stop sent to a
    worker before gunicorn gives it its own signal handlers still stops it. Stops are blocked
    across each fork; the parent unblocks them at once, the child once a handler of ours notes
    them, and `catch_early_stop` ends the worker for what was noted."""
    os.register_at_fork(before=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, STOPS), after_in_parent=_unblock_stops, after_in_child=_note_stops_in_child)


def catch_early_stop(worker: Any) -> None:
    """First in the worker's `post_fork`: a stop noted since the fork, or one arriving before
    gunicorn's handlers replace ours, ends the worker as gunicorn's SIGTERM handler would
    (`alive` false: run() stops at once)."""

    def stop(_signum: int, _frame: Any) -> None:
        worker.alive = False

    for sig in STOPS:
        signal.signal(sig, stop)
    if _stopped_early:
        worker.alive = False
