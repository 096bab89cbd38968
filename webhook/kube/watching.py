"""Keeps a ProjectionStore current from the API server: list, then watch, per looked-up kind.

One daemon thread per kind lists every object of it (all namespaces, pages of 500, decoded from
JSON and projected one by one: a page is the most ever held whole), then watches from the list's
resourceVersion with bookmarks. A watch that is too old (410 Gone, as a status or as an ERROR
event) lists again; so does the periodic resync, which repairs whatever a lost event left
wrong. Any other failure is noted in the store (readiness detail, metrics), backs off (1 s,
doubling to 60 s) and tries again, forever; the store keeps its objects meanwhile. The first
answer of the API server, and the first after each such failure, calls `on_reconnect()` (the
server reads the API server's version again then: kube/serverversion.py). A kind the API server
does not serve (404: its CRD is not installed) is marked missing in the store (its checks are
skipped; one log line, and a line in /readyz's detail) and asked for again at each resync, so
installing the CRD later is noticed.

`audit` fills its store from its own paged list instead and needs none of this.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..policies.projections import LookedUp
from ..policies.store import ProjectionStore
from .errors import ApiCall, KubeAccessError, describe_api_error
from .responses import WatchExpired, json_body, watch_events

log = logging.getLogger("servinggate.lookups")

PAGE = 500
MAX_BACKOFF = 60.0


class StoreWatcher:
    """List+watch of every kind `store` keeps, into `store`, until `stop()`. `on_change(store)`
    runs after each list and each change of a kind's health (the server's metrics)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        store: ProjectionStore,
        *,
        resync: float = 600.0,
        watch_timeout: int = 300,
        on_change: Callable[[ProjectionStore], None] | None = None,
        on_reconnect: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._host = str(getattr(api_client.configuration, "host", "") or "")
        self.store = store
        self.resync = resync
        self.watch_timeout = watch_timeout
        self._on_change = on_change or (lambda _store: None)
        self._on_reconnect = on_reconnect or (lambda: None)
        self._clock = clock
        self._stop = threading.Event()
        self.threads: list[threading.Thread] = []
        # The API server has not answered since start or since a watch failed: its next answer,
        # whichever kind gets it first, is the one reconnection `on_reconnect` hears of (every
        # kind's watch breaks together when the API server restarts).
        self._outage = True
        self._outage_lock = threading.Lock()

    def start(self) -> None:
        for entry in self.store.kinds:
            thread = threading.Thread(target=self.run, args=(entry,), name=f"lookups-{entry.plural}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self) -> None:
        self._stop.set()

    def _list(self, entry: LookedUp, **options: Any) -> Any:
        """One list or watch request of the kind, across namespaces (Nodes are the one core kind)."""
        if not entry.group:
            if entry.kind != "Node":
                raise ValueError(f"no list call for core kind {entry.kind}")
            return self._core.list_node(**options)
        if entry.field_selector:
            options["field_selector"] = entry.field_selector
        return self._custom.list_cluster_custom_object(entry.group, entry.version, entry.plural, **options)

    def _pages(self, entry: LookedUp, out: dict[str, str]) -> Iterator[dict[str, Any]]:
        """Every object of the kind, page by page; the list's resourceVersion lands in `out`."""
        cont = None
        while True:
            body = json_body(self._list(entry, limit=PAGE, _continue=cont, _preload_content=False, _request_timeout=(10, 60)))
            meta = body.get("metadata") or {}
            yield from body.get("items") or ()
            cont = meta.get("continue")
            if not cont:
                out["rv"] = str(meta.get("resourceVersion") or "")
                return

    def list_once(self, entry: LookedUp) -> str:
        """Replace the kind's objects with a fresh list; its resourceVersion."""
        out: dict[str, str] = {}
        count = self.store.replace(entry, self._pages(entry, out))
        rv = out.get("rv", "")
        # known only after the last page: recorded the way a watch bookmark records it
        self.store.apply(entry, "BOOKMARK", {"metadata": {"resourceVersion": rv}})
        log.info({"msg": "lookups listed", "kind": entry.kind, "objects": count})
        return rv

    def list_all(self) -> None:
        """Every kept kind listed once, no watch (`check --kubeconfig`): a kind not served is
        marked missing; any other failure raises KubeAccessError, one line naming what to fix."""
        for entry in self.store.kinds:
            try:
                self.list_once(entry)
            except ApiException as exc:
                if exc.status == 404:
                    self.store.mark_missing(entry)
                    continue
                raise KubeAccessError(describe_api_error(exc, ApiCall("list", entry.plural, group=entry.group), self._host)) from None
            except (HTTPError, OSError) as exc:
                raise KubeAccessError(describe_api_error(exc, ApiCall("list", entry.plural, group=entry.group), self._host)) from None

    def watch_once(self, entry: LookedUp, rv: str, seconds: int, opened: Callable[[], None] = lambda: None) -> str:
        """One watch request from `rv` for at most `seconds`; returns the last resourceVersion.
        `opened()` runs once the API server has answered the request (before any event)."""
        resp: Any = self._list(  # the urllib3 response: not preloaded
            entry,
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=seconds,
            _preload_content=False,
            _request_timeout=(10, seconds + 30),
        )
        opened()
        events = watch_events(resp)
        try:
            for etype, obj in events:
                if self._stop.is_set():
                    break
                if etype in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                    self.store.apply(entry, etype, obj)
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if etype != "BOOKMARK":
                        self._on_change(self.store)  # the objects gauge (ModelServings change rarely)
        finally:
            events.close()
        return rv

    def _healthy(self, entry: LookedUp, trouble: str) -> None:
        self.store.note_trouble(entry, trouble)
        self._on_change(self.store)

    def run(self, entry: LookedUp) -> None:
        """List, then watch until the resync is due, again and again; never raises."""
        rv, backoff, listed_at, down = "", 1.0, 0.0, True  # down: not connected yet, or failed since

        def opened() -> None:  # a watch that answers after a failure is a reconnection
            nonlocal down
            down = self._reconnected(down)

        while not self._stop.is_set():
            try:
                if not rv or self._clock() - listed_at >= self.resync:
                    rv, listed_at = self.list_once(entry), self._clock()
                    self._healthy(entry, "")
                    down = self._reconnected(down)
                left = max(1, int(min(self.watch_timeout, self.resync - (self._clock() - listed_at))))
                rv = self.watch_once(entry, rv, left, opened)
                if backoff > 1.0:
                    self._healthy(entry, "")
                backoff = 1.0
            except WatchExpired:
                rv = ""
            except ApiException as exc:
                if exc.status == 410:
                    rv = ""
                    continue
                if exc.status == 404:
                    rv = self._missing(entry)
                    continue
                backoff, down = self._failed(entry, exc, backoff), True
            except Exception as exc:  # network trouble: back off, go on
                if self._stop.is_set():
                    break
                backoff, down = self._failed(entry, exc, backoff), True

    def _reconnected(self, down: bool) -> bool:
        """This kind's first answer, or its first after a failure (`down`): tell `on_reconnect`,
        once per outage across the kinds. False: up."""
        if down:
            with self._outage_lock:
                first, self._outage = self._outage, False
            if not first:
                return False
            try:
                self._on_reconnect()
            except Exception:  # the watch goes on whatever the listener does
                log.exception({"msg": "on_reconnect failed"})
        return False

    def _missing(self, entry: LookedUp) -> str:
        """The kind is not served: noted once, asked for again after a resync period."""
        if self.store.installed(entry.api_version, entry.kind) or not self.store.synced(entry.api_version, entry.kind):
            log.info({"msg": "lookups: kind not installed; its checks are skipped", "kind": entry.kind, "group": entry.group})
        self.store.mark_missing(entry)
        self._on_change(self.store)
        self._stop.wait(self.resync)
        return ""

    def _failed(self, entry: LookedUp, exc: BaseException, backoff: float) -> float:
        verb = "watch" if self.store.synced(entry.api_version, entry.kind) else "list"
        trouble = describe_api_error(exc, ApiCall(verb, entry.plural, group=entry.group), self._host)
        log.warning({"msg": "lookups list/watch failed; backing off", "kind": entry.kind, "error": trouble, "seconds": backoff})
        with self._outage_lock:
            self._outage = True
        self._healthy(entry, trouble)
        self._stop.wait(backoff)
        return min(backoff * 2, MAX_BACKOFF)
