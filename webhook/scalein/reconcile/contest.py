"""Never fight another writer of the deletion cost. Pure: the clock is handed in, no I/O.

Karpenter, CCE's compaction and zone-spreading controllers may write the same annotation, and
some of them overwrite whatever is there. Two controllers that each overwrite the other would
rewrite the same pods forever, as fast as their rate limits allow. So the reconciler keeps a
record of what it wrote to each pod (value and time), and:

- a cost that differs from that record was changed by another writer; under
  `--scale-in-priority binpack` we overwrite it, but at most once per pod per backoff window
  (`--contest-backoff-seconds`);
- when it changes again within the window after our overwrite, the pod is contested: we leave it
  alone for the window, and the caller posts an Event on it and counts it;
- when the window has passed, the pod is ours to overwrite once more.

`--scale-in-priority wl` never overwrites a foreign value, so nothing is ever contested there.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass

OVERWRITE, CONTESTED, BACKING_OFF = "overwrite", "contested", "backing-off"


@dataclass(frozen=True, slots=True)
class Written:
    """What we last wrote to one pod, and when (the injected clock's seconds)."""

    value: int
    at: float


class Contests:
    """The record of our writes, and which pods another writer contests (see the module doc)."""

    def __init__(self, window: float, clock: Callable[[], float]) -> None:
        self.window = window
        self.clock = clock
        self.written: dict[str, Written] = {}
        self.overwrote: dict[str, float] = {}  # pod -> when we last overwrote a foreign value
        self.contested: dict[str, float] = {}  # pod -> until when we leave it alone

    def wrote(self, key: str, value: int, overwrite: bool) -> None:
        """Our write of `value` to pod `key` was applied; `overwrite`: it replaced a foreign value."""
        now = self.clock()
        self.written[key] = Written(value, now)
        if overwrite:
            self.overwrote[key] = now

    def foreign(self, key: str, current: str | None) -> bool:
        """The pod's cost is not what we last wrote to it (and it holds one)."""
        mine = self.written.get(key)
        return mine is not None and current is not None and current != str(mine.value)

    def on_foreign(self, key: str) -> str:
        """A foreign value sits where we want ours: OVERWRITE (once per window), CONTESTED (it
        changed again after our overwrite: the caller posts the Event), or BACKING_OFF."""
        now = self.clock()
        until = self.contested.get(key)
        if until is not None:
            if now < until:
                return BACKING_OFF
            del self.contested[key]
        last = self.overwrote.get(key)
        if last is not None and now - last < self.window:
            self.contested[key] = now + self.window
            return CONTESTED
        return OVERWRITE

    def active(self) -> int:
        """Pods left alone now; expired entries are dropped on the way."""
        now = self.clock()
        for key in [k for k, until in self.contested.items() if until <= now]:
            del self.contested[key]
        return len(self.contested)

    def keep_only(self, keys: Container[str]) -> None:
        """A relist: forget the pods that are gone."""
        for table in (self.written, self.overwrote, self.contested):
            for key in [k for k in table if k not in keys]:
                del table[key]

    def forget(self, key: str) -> None:
        """The pod is gone."""
        self.written.pop(key, None)
        self.overwrote.pop(key, None)
        self.contested.pop(key, None)
