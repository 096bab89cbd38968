"""What reaches the worker's queue: one class per kind of event, so the worker matches on a type
instead of reading a type string and guessing what `kind` and `obj` hold.

The watchers (watching.py) put `Changed` and `Listed`, the writers (writing.py) `Answered`, the
leader election `Resync`. Only `Changed` carries the time it arrived: it starts the
event-to-write latency."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from .writing import WriteAttempt

Resource = Literal["nodes", "pods", "hypernodes"]
Change = Literal["ADDED", "MODIFIED", "DELETED"]

RESOURCES: tuple[Resource, ...] = ("nodes", "pods", "hypernodes")


@dataclass(frozen=True, slots=True)
class Changed:
    """One watch event: a node, a pod or a HyperNode was added, modified or deleted."""

    change: Change
    resource: Resource
    obj: dict[str, Any]
    at: float = field(default_factory=time.monotonic)  # when it arrived (time.monotonic())


@dataclass(frozen=True, slots=True)
class Listed:
    """A full list of one resource, after a start or an expired watch: it replaces the cache's."""

    resource: Resource
    items: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Resync:
    """Score everything again (we just became the leader: pods skipped meanwhile get their turn)."""


@dataclass(frozen=True, slots=True)
class Answered:
    """A writer's answer to one pending write."""

    attempt: WriteAttempt


@dataclass(frozen=True, slots=True)
class Stopping:
    """The reconciler is stopping: wakes the worker so that it sees `stop` without waiting out its turn."""


Event = Changed | Listed | Resync | Answered | Stopping
