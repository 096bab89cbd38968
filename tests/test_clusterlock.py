"""The e2e cluster lock (tests/support/clusterlock.py): tests on other workers share the cluster, a
restart scenario has it to itself, and a waiting restart scenario is not starved. Holders here are
threads, each with its own open files (flock locks belong to an open file, not a process), and one
child process killed while it holds the lock."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from support.clusterlock import ClusterLock, lock_dir_for

WAIT = 0.3  # long enough for a thread that could take the lock to have taken it


class Holder(threading.Thread):
    """Takes `how()` and holds it until `release` is set; `held` is set once it has it."""

    def __init__(self, how: Callable[[], AbstractContextManager[None]], order: list[str], name: str) -> None:
        super().__init__(daemon=True)
        self.how, self.order, self.label = how, order, name
        self.held, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        with self.how():
            self.order.append(self.label)
            self.held.set()
            self.release.wait(10)


def test_shared_holders_run_together(tmp_path: Path) -> None:
    lock, order = ClusterLock(tmp_path), []
    a, b = Holder(lock.shared, order, "a"), Holder(lock.shared, order, "b")
    a.start()
    assert a.held.wait(5)
    b.start()
    assert b.held.wait(5), "a second shared holder waited for the first"
    a.release.set(), b.release.set()


def test_an_exclusive_holder_waits_for_every_shared_one_and_keeps_them_out(tmp_path: Path) -> None:
    lock, order = ClusterLock(tmp_path), []
    first = Holder(lock.shared, order, "shared-1")
    first.start()
    assert first.held.wait(5)
    restart = Holder(lock.exclusive, order, "exclusive")
    restart.start()
    assert not restart.held.wait(WAIT), "the exclusive holder started beside a shared one"
    later = Holder(lock.shared, order, "shared-2")
    later.start()
    assert not later.held.wait(WAIT), "a shared holder arriving after a waiting exclusive one went first"
    first.release.set()
    assert restart.held.wait(5)
    assert not later.held.wait(WAIT), "a shared holder ran during the exclusive one"
    restart.release.set()
    assert later.held.wait(5)
    later.release.set()
    assert order == ["shared-1", "exclusive", "shared-2"]


def test_a_holder_that_dies_releases_the_lock(tmp_path: Path) -> None:
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path;"
        "from support.clusterlock import ClusterLock;"
        "cm = ClusterLock(Path(sys.argv[2])).exclusive(); cm.__enter__(); print('held', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        lock, order = ClusterLock(tmp_path), []
        waiting = Holder(lock.shared, order, "after")
        waiting.start()
        assert not waiting.held.wait(WAIT), "a shared holder ran beside the child's exclusive lock"
        child.kill()
        assert waiting.held.wait(5), "the lock of a killed holder was not released"
        waiting.release.set()
    finally:
        child.kill()
        child.wait()


def test_one_folder_per_kubeconfig(tmp_path: Path) -> None:
    a, b = lock_dir_for(str(tmp_path / "a")), lock_dir_for(str(tmp_path / "b"))
    assert a != b and a.is_dir() and lock_dir_for(str(tmp_path / "a")) == a
