"""Reading a running gunicorn server from Linux /proc: its workers and the connections each holds.
Shared by the server tests (tests/server/serverproc.py) and benchmarks/serve.py."""

from __future__ import annotations

import os
from pathlib import Path


def worker_pids(master: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def connections_per_worker(master: int, port: int) -> dict[int, int]:
    """Established TCP connections to `port` held by each worker process of `master`."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                established.add(fields[9])
    counts = {}
    for pid in worker_pids(master):
        held = 0
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            held += target.startswith("socket:[") and target[8:-1] in established
        counts[pid] = held
    return counts
