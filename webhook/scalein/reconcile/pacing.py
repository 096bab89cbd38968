"""How fast the reconciler writes to the API server: a token bucket, paused for the server's own
`Retry-After` when it throttles us (kube/reflector.py reads it; the list/watch back-off is there too).

Shared by patching.py and writing.py, and pure (a clock in, seconds out) so the numbers are tested
without a server. The bucket is shared by several writer threads, hence its lock; `hold` is how one
throttled answer pauses every writer, as the server asked."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Token bucket: `qps` tokens a second, bursts of at most `qps`; thread-safe."""

    def __init__(self, qps: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps, self.clock = float(qps), clock
        self.tokens, self.stamp = float(qps), clock()
        self.held_until = float("-inf")
        self.lock = threading.Lock()

    def delay(self) -> float:
        """Take a token if there is one (0.0), else the seconds until there is."""
        with self.lock:
            now = self.clock()
            if now < self.held_until:
                return self.held_until - now
            self.tokens = min(self.qps, self.tokens + (now - self.stamp) * self.qps)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                return 0.0
            return (1 - self.tokens) / self.qps

    def hold(self, seconds: float) -> None:
        """No token for anyone during the next `seconds` (the server's Retry-After), and no burst
        saved up meanwhile: writing resumes at the steady rate."""
        with self.lock:
            now = self.clock()
            self.held_until = max(self.held_until, now + seconds)
            self.tokens, self.stamp = 0.0, self.held_until
