"""Start the real `python -m webhook serve` in a subprocess on a free port, for TLS tests."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

from support import REPO, free_port  # tests/ is on sys.path via the root conftest
from support.procfs import connections_per_worker, established, socket_inodes, worker_pids


class Server:
    def __init__(self, tmp: Path, *extra: str, workers: int = 2, env: dict[str, str] | None = None, client_cert: tuple[Path, Path] | None = None):
        self.client_cert = client_cert  # (certificate, key) presented by ssl_context(), for --client-ca-file
        self.port = free_port()
        self.metrics_port = free_port()
        self.certs = tmp / "certs"
        self.log_path = tmp / "server.log"
        self.args = [
            sys.executable,
            "-m",
            "webhook",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--certs-dir",
            str(self.certs),
            "--workers",
            str(workers),
            "--metrics-dir",
            str(tmp / "metrics"),
            "--kube-lookups",
            "off",
            "--cert-reload-seconds",
            "1",
            "--metrics-port",
            str(self.metrics_port),
            *extra,
        ]
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://localhost:{self.port}"

    @property
    def ca(self) -> str:
        return str(self.certs / "ca.crt")

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca)
        if self.client_cert is not None:
            context.load_cert_chain(*map(str, self.client_cert))
        return context

    def start(self, timeout: float = 20.0) -> Server:
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.args, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            if (self.certs / "ca.crt").exists():
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw:
                        with self.ssl_context().wrap_socket(raw, server_hostname="localhost"):
                            return self
                except (OSError, ssl.SSLError):
                    pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not come up in {timeout}s:\n{self.log()}")

    def worker_pids(self) -> list[int]:
        assert self.proc is not None
        return worker_pids(self.proc.pid)

    def connections_per_worker(self) -> dict[int, int]:
        """Established TCP connections to our port held by each worker process (Linux /proc)."""
        assert self.proc is not None
        return connections_per_worker(self.proc.pid, self.port)

    def worker_of(self, client_port: int) -> int | None:
        """The worker process that holds the server end of the client's connection from `client_port`."""
        inodes = {inode for inode, peer in established(self.port).items() if int(peer.rsplit(":", 1)[1], 16) == client_port}
        return next((pid for pid in self.worker_pids() if socket_inodes(pid) & inodes), None)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode
