"""The writer threads: they take the worker's pending writes (writequeue.py) at the rate
`--scoring-qps` allows, send them through patching.py, and hand every answer back to the worker,
which alone touches the cache.

Several threads, because a write costs the API server's round trip (tens of milliseconds on a
busy control plane) and one synchronous writer would cap the rate at one over that latency, far
below `--scoring-qps 100`. One thread at a time waits for the next token and only then picks the
entry, so the pick is made at the moment of sending: an event that arrived during the wait is
written next, and a cost that changed meanwhile is sent as it is now. A throttled answer holds
the token bucket for its Retry-After, which pauses every writer and never the worker."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..settings import RECORD_KEY, ReconcileSettings
from .health import Metrics
from .patching import Patcher, PatchResult, write_patch
from .writequeue import Pending, WriteQueue

log = logging.getLogger("servinggate.scalein")

WRITERS = 4  # concurrent patches: the default --scoring-qps holds while a round trip stays under WRITERS / qps


@dataclass(frozen=True)
class WriteAttempt:
    """What became of one pending write. `outcome` None: not sent (no longer the leader);
    `fresh`: the pod as read again after the server refused the patch as stale."""

    entry: Pending
    outcome: PatchResult | None
    fresh: PatchResult | None = None


class Writers:
    """A small pool of threads draining one WriteQueue into the API server."""

    def __init__(
        self,
        queue: WriteQueue,
        patcher: Patcher,
        settings: ReconcileSettings,
        metrics: Metrics,
        may_write: Callable[[], bool],
        deliver: Callable[[WriteAttempt], None],
        stop: threading.Event,
        sleep_cap: float,
        count: int = WRITERS,
    ) -> None:
        self.queue, self.patcher, self.settings, self.metrics = queue, patcher, settings, metrics
        self.may_write, self.deliver, self.stop = may_write, deliver, stop
        self.sleep_cap, self.count = sleep_cap, count
        self.turn = threading.Lock()  # who waits for the next token and then picks

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.loop, name=f"writer-{i}", daemon=True) for i in range(self.count)]
        for t in threads:
            t.start()
        return threads

    def loop(self) -> None:
        while not self.stop.is_set():
            entry = self.next_entry()
            if entry is not None:
                self.deliver(self.write(entry))

    def next_entry(self) -> Pending | None:
        with self.turn:
            if not self.queue.wait(timeout=0.5) or not self.patcher.wait_turn():
                return None
            return self.queue.pop()  # None only if the worker dropped it during the wait

    def write(self, entry: Pending) -> WriteAttempt:
        """Send one pending write; never raises (the patcher classifies every failure)."""
        if not self.may_write():
            self.metrics.skips.labels("not-leader").inc()
            return WriteAttempt(entry, None)
        s = self.settings
        ops = write_patch(entry.annotations, entry.resource_version, s.scoring.score_annotation_key, RECORD_KEY, str(entry.value))
        outcome = self.patcher.send(entry.key, ops, entry.purpose, paced=False)
        if outcome.status == "written":
            if entry.event_at is not None:
                self.metrics.event_to_write.observe(time.monotonic() - entry.event_at)
            if entry.purpose == "overwrite":
                log.info(
                    {
                        "msg": "overwrote a cost set by someone else (scale-in-priority binpack)",
                        "pod": entry.key,
                        "from": (entry.annotations or {}).get(s.scoring.score_annotation_key),
                        "to": entry.value,
                    }
                )
            log.info({"msg": "cost written", "pod": entry.key, "cost": entry.value})
            return WriteAttempt(entry, outcome)
        if outcome.status == "changed":
            # the pod changed under us (a failed `test`, or a storage conflict): read it again so
            # the worker decides from what it holds now; never resend the same patch blindly
            log.info({"msg": "pod changed since read; re-reading", "pod": entry.key, "status": outcome.code})
            return WriteAttempt(entry, outcome, self.patcher.read(entry.key))
        if outcome.status == "throttled":
            log.warning({"msg": "throttled by the API server; pausing writes", "pod": entry.key, "retry_after": outcome.wait})
            self.patcher.limiter.hold(min(outcome.wait, self.sleep_cap))
        elif outcome.status == "failed" and outcome.code:
            log.warning({"msg": "patch failed", "pod": entry.key, "status": outcome.code})
        return WriteAttempt(entry, outcome)
