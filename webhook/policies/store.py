"""The looked-up objects in memory, as projections: the webhook's lookups and `audit` share it.

The store knows nothing about the API server. Whoever lists a kind hands the items to `replace`
(the webhook's watcher on every relist, `audit` from its own pages, one page at a time through
a generator), and the watcher hands each watch event to `apply`. Only the projection of each
object is kept (projections.py), so memory is bounded by the number of objects, not by their
pod templates.

Thread-safety: one writer per kind (its watcher) and any number of readers (review threads).
A reader takes no lock: a kind's objects are one dict, replaced whole by a relist and changed
one key at a time by events, each a single atomic dict operation under the GIL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..shapes import metadata, only_objects
from .context import LookupFailed, Lookups
from .projections import KEPT, LookedUp, project

_Key = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True, slots=True)
class KindState:
    """Where one kind stands, for /readyz, the metrics and `audit`'s notes."""

    kind: str
    synced: bool  # listed at least once: a miss then means "absent", unless it is very recent
    objects: int
    resource_version: str  # of the last list or event seen
    trouble: str  # "" while the watch is healthy; else why it is not (it keeps retrying)
    since: float  # clock() of the last list, or of the last change of `trouble`
    installed: bool = True  # False: the API server does not serve the kind (its CRD is absent)

    def describe(self) -> str:
        if not self.installed:
            return f"{self.kind}: not installed, its checks skipped"
        if not self.synced:
            return f"{self.kind}: not listed yet" + (f" ({self.trouble})" if self.trouble else "")
        text = f"{self.kind}: {self.objects} cached"
        return text + (f", watch retrying ({self.trouble})" if self.trouble else ", watching")


class _Kind:
    __slots__ = ("entry", "objects", "synced", "resource_version", "trouble", "since", "installed", "generation")

    def __init__(self, entry: LookedUp) -> None:
        self.entry = entry
        self.objects: dict[_Key, dict[str, Any]] = {}
        self.synced = False
        self.installed = True
        self.generation = 0  # counts changes: facts derived from the kind are cached per generation
        self.resource_version = ""
        self.trouble = ""
        self.since = 0.0


def _key(obj: dict[str, Any]) -> _Key:
    meta = metadata(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class ProjectionStore(Lookups):
    """Projections of the looked-up kinds (default: every kind a rule looks up or reads as a
    cluster fact), by namespace and name. `get` is a `Lookups`: a listed kind answers a miss with None (it does not exist),
    a kind not listed yet raises LookupFailed."""

    def __init__(self, kinds: Iterable[LookedUp] = KEPT, clock: Callable[[], float] = time.monotonic) -> None:
        self._kinds = {(e.group, e.kind): _Kind(e) for e in kinds}
        self._clock = clock
        self._write = threading.Lock()

    @property
    def kinds(self) -> tuple[LookedUp, ...]:
        return tuple(k.entry for k in self._kinds.values())

    def _kind(self, api_version: str, kind: str) -> _Kind | None:
        return self._kinds.get((api_version.rpartition("/")[0], kind))

    def _writable(self, entry: LookedUp) -> _Kind:
        state = self._kinds.get((entry.group, entry.kind))
        if state is None:
            raise KeyError(f"{entry.kind} is not kept by this store")
        return state

    # -- writing ----------------------------------------------------------------------------------

    def replace(self, entry: LookedUp, objects: Iterable[dict[str, Any]], resource_version: str = "") -> int:
        """Everything of `entry`'s kind is now `objects` (a full list; a generator is projected
        one item at a time, so a caller reading pages never holds more than one). Returns the count."""
        state = self._writable(entry)
        fresh = {_key(obj): project(entry, obj) for obj in only_objects(objects)}
        with self._write:
            state.objects = fresh
            state.synced = state.installed = True
            state.generation += 1
            state.resource_version = resource_version
            state.since = self._clock()
        return len(fresh)

    def apply(self, entry: LookedUp, event: str, obj: dict[str, Any]) -> None:
        """One watch event: ADDED and MODIFIED store the projection, DELETED drops it."""
        state = self._writable(entry)
        key = _key(obj)
        with self._write:
            if event == "DELETED":
                state.objects.pop(key, None)
                state.generation += 1
            elif event in ("ADDED", "MODIFIED"):
                projected = project(entry, obj)
                if state.objects.get(key) != projected:  # a Node's status heartbeat changes nothing kept
                    state.objects[key] = projected
                    state.generation += 1
            rv = metadata(obj).get("resourceVersion")
            if isinstance(rv, str) and rv:
                state.resource_version = rv

    def mark_missing(self, entry: LookedUp) -> None:
        """The API server does not serve `entry`'s kind (404 on its list: the CRD is not
        installed): no object of it exists, and the checks that read it are skipped."""
        state = self._writable(entry)
        with self._write:
            if state.installed or not state.synced:
                state.since = self._clock()
            state.objects = {}
            state.synced, state.installed, state.trouble = True, False, ""
            state.generation += 1

    def note_trouble(self, entry: LookedUp, trouble: str) -> None:
        """The watch of `entry`'s kind is failing (`trouble`), or healthy again (""); the objects
        are kept meanwhile: the last known state beats no state for the rules that read it."""
        state = self._writable(entry)
        with self._write:
            if state.trouble != trouble:
                state.trouble, state.since = trouble, self._clock()

    # -- reading ----------------------------------------------------------------------------------

    def cached(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The projection when the store holds it, else None (absent, or not listed yet)."""
        state = self._kind(api_version, kind)
        return None if state is None else state.objects.get((namespace, name))

    def synced(self, api_version: str, kind: str) -> bool:
        state = self._kind(api_version, kind)
        return state is not None and state.synced

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        state = self._kind(api_version, kind)
        if state is None:
            raise LookupFailed(f"{kind} objects are not kept in memory")
        found = state.objects.get((namespace, name))
        if found is None and not state.synced:
            raise LookupFailed(f"{kind} objects not listed yet")
        return found

    def installed(self, api_version: str, kind: str) -> bool:
        """False once a list found the kind not served (mark_missing); True otherwise."""
        state = self._kind(api_version, kind)
        return state is not None and state.installed

    def items(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        """Every projection of the kind (none when it is not installed); LookupFailed when the
        kind is not kept or not listed yet."""
        state = self._kind(api_version, kind)
        if state is None:
            raise LookupFailed(f"{kind} objects are not kept in memory")
        if not state.synced:
            raise LookupFailed(f"{kind} objects not listed yet")
        return list(state.objects.values())

    def generation(self, api_version: str, kind: str) -> int:
        """Changes to the kind so far (lists, events): what a fact derived from it is cached by."""
        state = self._kind(api_version, kind)
        return -1 if state is None else state.generation

    def states(self) -> list[KindState]:
        return [KindState(k.entry.kind, k.synced, len(k.objects), k.resource_version, k.trouble, k.since, k.installed) for k in self._kinds.values()]

    def describe(self) -> str:
        """One line for /readyz: each kind's count and watch state."""
        return "; ".join(s.describe() for s in self.states())


class StoreLookups(Lookups):
    """Lookups answered from a watch-fed ProjectionStore (kube/lookups.KubeLookups), the store
    the cluster-fact rules read too (serving/lookups.cluster_facts)."""

    store: ProjectionStore
