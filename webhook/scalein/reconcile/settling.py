"""Let a ServingGroup Kthena is deleting go before writing to the rest of it. Pure: the clock is
handed in, no I/O.

Kthena 3cc05728 removes a ServingGroup by marking it Deleting in its memory and deleting the
group's pods with one DeleteCollection, which the API server applies pod after pod. The first
pod's devices come free at once, so the costs of its group-mates on that node change; a cost
written to one of them before the collection reaches it is, to Kthena, an update of a Running
pod: handleReadyPod sets the group Running over Deleting, the deletions that follow are taken for
failed pods (RoleRecreate), and Kthena creates pods of the very group it is removing (found beside
the real stack: docs/e2e.md, docs/design-notes.md).

So once a pod of a ServingGroup is being deleted (or is gone without having been), the writes to
the other pods of its group wait SETTLE_SECONDS, and are decided afresh then: the group-mates the
collection reached are terminating by then and get no cost; the live ones are written. Pods of
other owners, on the same nodes or not, are written at once.
"""

from __future__ import annotations

from collections.abc import Callable

from ...kthena import LABEL_GROUP, LABEL_NAME
from ..cluster import PodView

SETTLE_SECONDS = 2.0
KEPT = 1024  # settling groups kept before the expired ones are dropped

Group = tuple[str, str, str]  # (namespace, ModelServing, ServingGroup)


def serving_group(pod: PodView) -> Group | None:
    """The Kthena ServingGroup a pod belongs to, by the labels Kthena's controller sets on it."""
    group = pod.labels.get(LABEL_GROUP)
    return (pod.namespace, pod.labels.get(LABEL_NAME, ""), group) if group else None


class Settling:
    """The ServingGroups a pod of which is being deleted, until when they settle, and the pods
    whose writes wait for that (with when they are due to be scored again)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.until: dict[Group, float] = {}
        self.deferred: dict[str, float] = {}

    def changed(self, before: PodView | None, after: PodView | None, deleted: bool) -> None:
        """A pod event, with the pod as the cache held it and as it is now: a live pod that is
        now being deleted, or is gone, starts its group's wait."""
        pod = before if deleted else after
        if pod is None or (before is not None and before.terminating) or not (deleted or pod.terminating):
            return
        group = serving_group(pod)
        if group is None:
            return
        now = self.clock()
        if len(self.until) >= KEPT:
            self.until = {g: t for g, t in self.until.items() if t > now}
        self.until[group] = now + SETTLE_SECONDS

    def holding(self, pod: PodView) -> float | None:
        """Until when this pod's writes wait (its ServingGroup is settling), or None."""
        group = serving_group(pod)
        until = None if group is None else self.until.get(group)
        if group is None or until is None:
            return None
        if until <= self.clock():
            del self.until[group]
            return None
        return until

    def defer(self, key: str, until: float) -> bool:
        """The pod's write waits until `until`: True when it must be scheduled to be scored again then."""
        if self.deferred.get(key, 0.0) >= until:
            return False
        self.deferred[key] = until
        return True

    def due(self, key: str, at: float) -> None:
        """The pod was scored again at its due time `at` (a later deferral stays)."""
        if self.deferred.get(key, at + 1) <= at:
            del self.deferred[key]

    def forget(self, key: str) -> None:
        self.deferred.pop(key, None)
