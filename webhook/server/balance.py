"""How many connections each worker holds, in memory shared by the gunicorn master and workers,
so that a worker can leave a new connection to a sibling that holds fewer.

The master creates the table before forking and gives each worker a slot (pre_fork), freed when
the worker exits (child_exit). Each worker writes only its own slot: whether it is accepting and
how many connections it holds. Reads of the other slots may be a moment stale; the accept rule
(worker.py) tolerates that.
"""

from __future__ import annotations

import mmap

FREE, IDLE, ACCEPTING = 0, 1, 2


class LoadTable:
    def __init__(self, slots: int = 128):
        self.slots = slots
        self._mem = mmap.mmap(-1, slots * 2 * 8)  # anonymous and MAP_SHARED: inherited by fork
        self._cells = memoryview(self._mem).cast("q")  # per slot: state, connections

    def claim(self, taken: set[int]) -> int | None:
        """Master: the lowest slot no live worker holds (None when all are taken)."""
        for slot in range(self.slots):
            if slot not in taken:
                self.publish(slot, IDLE, 0)
                return slot
        return None

    def release(self, slot: int) -> None:
        self.publish(slot, FREE, 0)

    def publish(self, slot: int, state: int, connections: int) -> None:
        self._cells[2 * slot + 1] = connections
        self._cells[2 * slot] = state

    def connections(self, slot: int) -> int:
        return self._cells[2 * slot + 1]

    def fewest_elsewhere(self, slot: int) -> int | None:
        """The fewest connections held by another accepting worker (None if there is none)."""
        cells = self._cells
        counts = [cells[2 * s + 1] for s in range(self.slots) if s != slot and cells[2 * s] == ACCEPTING]
        return min(counts) if counts else None
