"""Reading running processes from Linux /proc: a gunicorn server's workers, the connections each
holds, CPU and memory. Shared by the server tests and the benchmarks."""

from __future__ import annotations

import os
from pathlib import Path


def worker_pids(master: int) -> list[int]:
    """The child processes of `master`, whichever of its threads forked them."""
    return [int(p) for task in Path(f"/proc/{master}/task").iterdir() for p in (task / "children").read_text().split()]


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process `pid` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


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


def listening_pids(port: int) -> list[int]:
    """The processes holding a listening TCP socket on `port` (every worker of a gunicorn server,
    and its master): whose CPU a server's work costs, whatever language it is written in."""
    listeners = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                listeners.add(fields[9])
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if socket_inodes(int(entry.name)) & listeners:
                    pids.append(int(entry.name))
            except OSError:
                continue  # gone, or not ours to read
    return pids


def passive_opens() -> int:
    """TCP connections this machine has accepted since boot (/proc/net/snmp's PassiveOpens)."""
    rows = [row.split() for row in Path("/proc/net/snmp").read_text().splitlines() if row.startswith("Tcp:")]
    return int(rows[1][rows[0].index("PassiveOpens")])


def connections_per_worker(master: int, port: int) -> dict[int, int]:
    """Established TCP connections to `port` held by each worker process of `master`."""
    inodes = established(port).keys()
    return {pid: len(socket_inodes(pid) & inodes) for pid in worker_pids(master)}


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of one process so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def status_kib(pid: int, field: str) -> int:
    """A memory figure of process `pid` in KiB from /proc/PID/status (`VmRSS` now, `VmHWM` its
    peak); 0 when the process has none (a zombie). OSError once the process is gone."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0
