"""A readers-writer lock over one cluster, shared by every pytest process that tests it.

`tests/e2e` runs on several pytest-xdist workers, and a scenario that restarts the API server or
Kthena's controller takes the cluster away from the tests on the other workers. Every e2e test
holds the lock shared; a scenario marked `cluster_to_itself` holds it exclusively, so it starts
once the others have finished and none starts while it runs, whatever the worker count.

Two `flock(2)` files: the lock itself, and a turnstile taken briefly before it, so that a
waiting exclusive holder is not starved by shared holders that keep arriving (a worker that
releases the lock between two tests and takes it again at once). Locks held by a process that
dies are released by the kernel: a run cut off leaves nothing to clean up."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path


def lock_dir_for(kubeconfig: str) -> Path:
    """One folder per cluster (by its kubeconfig's path), in the machine's temporary folder."""
    digest = hashlib.sha256(os.path.abspath(kubeconfig).encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"servinggate-e2e-{digest}"
    path.mkdir(exist_ok=True)
    return path


class ClusterLock:
    """`shared()` for a test that only adds and removes its own objects; `exclusive()` for one
    that restarts a component everybody uses."""

    def __init__(self, folder: Path) -> None:
        self.lock = folder / "cluster.lock"
        self.turnstile = folder / "turnstile.lock"

    @contextmanager
    def _held(self, mode: int) -> Iterator[None]:
        with open(self.lock, "a+b") as lock:
            with open(self.turnstile, "a+b") as turnstile:
                fcntl.flock(turnstile, fcntl.LOCK_EX)
                try:
                    fcntl.flock(lock, mode)
                finally:
                    fcntl.flock(turnstile, fcntl.LOCK_UN)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def shared(self) -> AbstractContextManager[None]:
        return self._held(fcntl.LOCK_SH)

    def exclusive(self) -> AbstractContextManager[None]:
        return self._held(fcntl.LOCK_EX)
