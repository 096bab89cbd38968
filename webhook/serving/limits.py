"""What one request may cost the webhook's worker: the settings its HTTP reader and loop enforce."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limits:
    """What one request may cost, enforced by the worker before the application sees it.

    The body limit (`--max-body-bytes`) is owned here, and only here: the worker buffers a whole
    request before anything answers it, so it must know the limit to bound its memory, and it is
    the only layer that can refuse a body before reading it (413 on the announced Content-Length
    or on the first chunk size that crosses the limit) and then drain what the client still sends.
    """

    max_body: int
    request_timeout: float = 10.0  # handshake + head + body, from the connection or the first byte
    linger: float = 5.0  # after a closing answer: how long what the client still sends is read and dropped
    max_head: int = 65536
    # gunicorn's limit_request_* settings, as its message.py reads them (0: no limit on the line)
    line: int = 4094
    fields: int = 100
    field_size: int = 8190
    # Memory one worker sets aside for unfinished large requests (read_budget // max_body of them
    # are read at once, the others wait: TCP pushes back), so many clients each sending a large
    # body cannot grow memory without bound.
    max_buffered: int = 0  # 0: 4 x max_body

    @property
    def read_budget(self) -> int:
        return self.max_buffered or 4 * self.max_body

    def with_gunicorn(self, cfg: Any) -> Limits:
        """These limits with gunicorn's head limits from its settings (as gunicorn/http/message.py reads them)."""
        line = cfg.limit_request_line
        return Limits(
            self.max_body,
            self.request_timeout,
            self.linger,
            self.max_head,
            1 << 20 if line == 0 else 8190 if line < 0 or line >= 8190 else line,
            cfg.limit_request_fields if 0 < cfg.limit_request_fields <= 32768 else 32768,
            cfg.limit_request_field_size if cfg.limit_request_field_size > 0 else 8190,
            self.max_buffered,
        )
