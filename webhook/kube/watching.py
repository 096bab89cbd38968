"""Keeps a ProjectionStore current from the API server: one Reflector (reflector.py) per kept kind.

Each kind is listed across namespaces and watched; its objects are projected one by one into the
store as they arrive (a page is the most ever held whole). The store keeps its objects while a
watch fails; the failure shows in its state (readiness detail, metrics) until the API server
answers again. The periodic relist (`resync`) repairs whatever a lost event left wrong. A kind the
API server does not serve (404: its CRD is not installed) is marked missing in the store (its
checks are skipped; one log line, and a line in /readyz's detail) and asked for again at each
resync, so installing the CRD later is noticed. The first answer of the API server, and the first
after a failure, calls `on_reconnect()` once for all kinds (the server reads the API server's
version again then: kube/serverversion.py).

This module holds the calls the webhook's identity makes to list and watch (its RBAC follows
them); the loop itself is the reflector's.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client

from ..policies.projections import LookedUp
from ..policies.store import ProjectionStore
from .errors import ApiCall
from .reflector import MAX_BACKOFF, Backoff, ListWatch, NotServed, Reconnects, Reflector, ReflectorMetrics, read

log = logging.getLogger("servinggate.lookups")


class _IntoStore:
    """A Reflector's Sink for one kind of the store; `on_change(store)` after each list, each
    change of an object and each change of the kind's health (the server's metrics)."""

    def __init__(self, store: ProjectionStore, entry: LookedUp, on_change: Callable[[ProjectionStore], None]) -> None:
        self.store, self.entry, self.on_change = store, entry, on_change

    def replace(self, items: Iterator[dict[str, Any]]) -> None:
        self.store.replace(self.entry, items)

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        self.store.apply(self.entry, event, obj)
        if event != "BOOKMARK":
            self.on_change(self.store)  # the objects gauge (ModelServings change rarely)

    def absent(self, status: int) -> None:
        log.info({"msg": "lookups: kind not installed; its checks are skipped", "kind": self.entry.kind, "group": self.entry.group})
        self.store.mark_missing(self.entry)
        self.on_change(self.store)

    def health(self, trouble: str) -> None:
        self.store.note_trouble(self.entry, trouble)
        self.on_change(self.store)


class StoreWatcher:
    """List+watch of every kind `store` keeps, into `store`, until `stop()`."""

    def __init__(
        self,
        api_client: client.ApiClient,
        store: ProjectionStore,
        *,
        resync: float = 600.0,
        watch_timeout: int = 300,
        on_change: Callable[[ProjectionStore], None] | None = None,
        on_reconnect: Callable[[], None] | None = None,
        metrics: ReflectorMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        backoff_cap: float = MAX_BACKOFF,
    ) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._host = str(getattr(api_client.configuration, "host", "") or "")
        self.store = store
        self.resync = resync
        self.watch_timeout = watch_timeout
        self._on_change = on_change or (lambda _store: None)
        self._on_reconnect = on_reconnect
        self._metrics = metrics
        self._clock = clock
        self._backoff_cap = backoff_cap  # the longest wait after a failure (tests make it short)
        self._stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def list_watch(self, entry: LookedUp) -> ListWatch:
        """The kind's list and watch calls, across namespaces (Nodes are the one core kind)."""
        call = ApiCall("list", entry.plural, group=entry.group)
        if not entry.group:
            if entry.kind != "Node":
                raise ValueError(f"no list call for core kind {entry.kind}")
            return ListWatch(call, self._core.list_node, functools.partial(self._core.list_node, watch=True), self._host)
        fixed: dict[str, Any] = {"field_selector": entry.field_selector} if entry.field_selector else {}
        listing = functools.partial(self._custom.list_cluster_custom_object, entry.group, entry.version, entry.plural, **fixed)
        return ListWatch(call, listing, functools.partial(listing, watch=True), self._host)

    def start(self) -> None:
        """One reflector thread per kind, fresh in this process (after a fork too)."""
        reconnects = Reconnects(self._on_reconnect)  # one reconnection per outage, not one per kind
        self.threads = []
        for entry in self.store.kinds:
            reflector = Reflector(
                self.list_watch(entry),
                _IntoStore(self.store, entry, self._on_change),
                stop=self._stop,
                metrics=self._metrics,
                reconnects=reconnects,
                relist_every=self.resync,
                watch_timeout=self.watch_timeout,
                backoff=Backoff(self._backoff_cap),
                absent_retry=self.resync,
                logger=log,
                clock=self._clock,
            )
            thread = threading.Thread(target=reflector.run, name=f"lookups-{entry.plural}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self) -> None:
        self._stop.set()

    def list_all(self) -> None:
        """Every kept kind listed once, no watch (`check --kubeconfig`): a kind not served is
        marked missing; any other failure raises KubeAccessError, one line naming what to fix."""
        for entry in self.store.kinds:
            try:
                self.store.replace(entry, (item for page in read(self.list_watch(entry)) for item in page.items))
            except NotServed:
                self.store.mark_missing(entry)
