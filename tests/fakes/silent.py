"""A hanging API server: a TCP endpoint that accepts connections and never answers, and a
kubeconfig pointing at any URL (the fake's own `write_kubeconfig` is for a running FakeAPI)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path


class Silent:
    """A TCP endpoint that accepts connections and never answers: a hanging API server."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted += 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


def kubeconfig_for(url: str, path: Path) -> str:
    path.write_text(f"""apiVersion: v1
kind: Config
current-context: c
clusters: [{{name: c, cluster: {{server: "{url}"}}}}]
users: [{{name: u, user: {{}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
""")
    return str(path)
