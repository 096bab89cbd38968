"""Who owns a pod's cost annotation, and what to do with it: leave it (it is right, or another
writer's under `--scale-in-priority wl`), write it (unset, or still our record), or overwrite
another writer's value (`binpack`). One decision for the reconciler, which then writes, and for
`plan`, which shows what would be written. Pure."""

from __future__ import annotations

from dataclasses import dataclass

NONE, WRITE, OVERWRITE, FOREIGN = "none", "write", "overwrite", "foreign"


@dataclass(frozen=True)
class CostAction:
    """What to do with one pod's cost annotation, and what it will hold afterwards."""

    action: str  # none | write | overwrite | foreign (left alone)
    value: str | None  # what the annotation will hold after we act


def decide(current: str | None, record: str | None, desired: int, priority: str) -> CostAction:
    """Compare the pod's annotations with the desired cost. A value that differs from our
    record was set by someone else: `wl` leaves it, `binpack` overwrites it (and the caller logs)."""
    want = str(desired)
    if current == want:
        return CostAction(NONE, current)
    if current is None or current == record:
        return CostAction(WRITE, want)
    if priority == "wl":
        return CostAction(FOREIGN, current)
    return CostAction(OVERWRITE, want)
