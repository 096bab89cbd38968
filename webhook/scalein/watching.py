"""The reconciler's view of the cluster: one list+watch loop per kind (Nodes, Pods, and
Volcano's HyperNodes unless --compaction-scope is node).

Each loop lists everything once (pages of 500, decoded straight from JSON), then watches from
the list's resourceVersion; every change goes to the worker's queue as a `Changed` stamped with
the time it arrived (the start of the event-to-write latency), and a full list as a `Listed`
(events.py). A watch that is too old (410 Gone, as a status or as an ERROR event) starts over
with a list; any other failure backs off (Retry-After on 429) and tries again, forever: the
worker keeps scoring from the cache it has meanwhile.

HyperNodes are optional: a cluster without Volcano's topology CRD (404), or a reconciler not
allowed to read them (403), has none. That is listed once as an empty list, so scoring goes on by
node, and asked again every few minutes, quietly, in case the CRD is installed later."""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, cast, get_args

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..kube.responses import WatchExpired, json_body, watch_events
from .events import Change, Changed, Event, Listed, Resource
from .health import Metrics
from .pacing import MAX_BACKOFF, retry_after
from .settings import ReconcileSettings
from .topology import GROUP as HN_GROUP
from .topology import PLURAL as HN_PLURAL
from .topology import VERSION as HN_VERSION

log = logging.getLogger("servinggate.scalein")

CHANGES = frozenset(get_args(Change))  # the watch event types that change an object
ABSENT_RETRY = 300.0  # seconds between asks for HyperNodes while the cluster has none to give


class Watcher:
    """List+watch of Nodes, Pods and HyperNodes into `events`, until `stop`."""

    def __init__(
        self,
        core: client.CoreV1Api,
        custom: client.CustomObjectsApi,
        settings: ReconcileSettings,
        events: queue.Queue[Event],
        metrics: Metrics,
        stop: threading.Event,
        sleep_cap: float = MAX_BACKOFF,
    ) -> None:
        self.core = core
        self.custom = custom
        self.settings = settings
        self.events = events
        self.metrics = metrics
        self.stop = stop
        self.sleep_cap = sleep_cap

    def _list_fn(self, kind: Resource) -> Callable[..., Any]:
        if kind == "hypernodes":
            return functools.partial(self.custom.list_cluster_custom_object, HN_GROUP, HN_VERSION, HN_PLURAL)
        return self.core.list_node if kind == "nodes" else self.core.list_pod_for_all_namespaces

    def list_all(self, kind: Resource) -> tuple[list[dict[str, Any]], str]:
        """A full list in pages of 500, decoded straight from JSON (no model objects)."""
        items: list[dict[str, Any]] = []
        cont = None
        while True:
            body = json_body(self._list_fn(kind)(limit=500, _continue=cont, _preload_content=False, _request_timeout=60))
            items += body.get("items") or []
            meta = body.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                return items, meta.get("resourceVersion") or ""

    def watch_once(self, kind: Resource, rv: str) -> str:
        """One watch request from `rv`; events go to the queue; returns the last resourceVersion."""
        resp = self._list_fn(kind)(
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=self.settings.runtime.watch_timeout_seconds,
            _preload_content=False,
            _request_timeout=(10, self.settings.runtime.watch_timeout_seconds + 30),
        )
        events = watch_events(resp)
        try:
            for etype, obj in events:
                if self.stop.is_set():
                    break
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if etype in CHANGES:
                    self.events.put(Changed(cast(Change, etype), kind, obj))
        finally:
            events.close()
        return rv

    def loop(self, kind: Resource) -> None:
        """List, then watch, again and again; never raises (failures back off)."""
        rv, backoff, absent = "", 1.0, False
        while not self.stop.is_set():
            try:
                if not rv:
                    items, rv = self.list_all(kind)
                    self.metrics.relists.labels(kind).inc()
                    self.events.put(Listed(kind, items))
                    absent = False
                rv = self.watch_once(kind, rv)
                backoff = 1.0
            except WatchExpired:
                log.info({"msg": "watch expired (410 Gone); listing again", "kind": kind})
                rv = ""
            except ApiException as exc:
                if exc.status == 410:
                    log.info({"msg": "watch expired (410 Gone); listing again", "kind": kind})
                    rv = ""
                    continue
                if kind == "hypernodes" and exc.status in (403, 404):
                    if not absent:  # said once; an empty list lets scoring go on by node
                        absent = True
                        log.info({"msg": "no HyperNodes to read; costs order by node", "status": exc.status})
                        self.events.put(Listed(kind, []))
                    rv = ""
                    self.stop.wait(min(ABSENT_RETRY, self.sleep_cap))
                    continue
                self.metrics.errors.labels(f"watch-{kind}", str(exc.status)).inc()
                wait = retry_after(exc, backoff) if exc.status == 429 else backoff
                log.warning({"msg": "list/watch failed; backing off", "kind": kind, "status": exc.status, "seconds": wait})
                self.stop.wait(min(wait, self.sleep_cap))
                backoff = min(backoff * 2, MAX_BACKOFF)
            except Exception as exc:  # network trouble: back off, go on
                if self.stop.is_set():
                    break
                self.metrics.errors.labels(f"watch-{kind}", "0").inc()
                log.warning({"msg": "list/watch failed; backing off", "kind": kind, "error": repr(exc), "seconds": backoff})
                self.stop.wait(min(backoff, self.sleep_cap))
                backoff = min(backoff * 2, MAX_BACKOFF)
