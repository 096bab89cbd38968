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


ESTABLISHED, LISTEN = "01", "0A"  # TCP states as /proc/net/tcp prints them


def _tcp_sockets(port: int, state: str) -> list[list[str]]:
    """The rows of /proc/net/tcp and tcp6 (IPv4 and IPv6) whose local port is `port` and whose
    state is `state`, split into fields: [2] is the peer's address, [9] the socket's inode."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == state and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.append(fields)
    return found


def established(port: int) -> dict[str, str]:
    """The established TCP connections whose local port is `port` (the server's end): socket
    inode -> peer address as /proc/net prints it."""
    return {fields[9]: fields[2] for fields in _tcp_sockets(port, ESTABLISHED)}


def listening_pids(port: int) -> list[int]:
    """The processes holding a listening TCP socket on `port` (every worker of a gunicorn server,
    and its master): whose CPU a server's work costs, whatever language it is written in."""
    listeners = {fields[9] for fields in _tcp_sockets(port, LISTEN)}
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
