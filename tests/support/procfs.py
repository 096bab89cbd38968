"""Reading a running gunicorn server from Linux /proc: its workers and the connections each holds.
Shared by the server tests (tests/server/serverproc.py), benchmarks/serve.py and
benchmarks/apiserver_pods.py."""

from __future__ import annotations

import os
from pathlib import Path


def worker_pids(master: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def established(port: int) -> dict[str, str]:
    """The established TCP connections whose local port is `port` (the server's end, IPv4 and
    IPv6): socket inode -> peer address as /proc/net prints it."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found[fields[9]] = fields[2]
    return found


def connections_per_worker(master: int, port: int) -> dict[int, int]:
    """Established TCP connections to `port` held by each worker process of `master`."""
    inodes = established(port)
    counts = {}
    for pid in worker_pids(master):
        held = 0
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            held += target.startswith("socket:[") and target[8:-1] in inodes
        counts[pid] = held
    return counts


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of one process so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
