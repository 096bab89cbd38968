"""The reconciler's view of the cluster: one Reflector (kube/reflector.py) per kind (Nodes, Pods,
and Volcano's HyperNodes unless --compaction-scope is node), feeding the worker's queue.

A full list goes to the queue as a `Listed`, every change as a `Changed` stamped with the time it
arrived (the start of the event-to-write latency; events.py). The reflector lists again when a
watch is too old and backs off on any other failure, forever: the worker keeps scoring from the
cache it has meanwhile.

HyperNodes are optional: a cluster without Volcano's topology CRD (404), or a reconciler not
allowed to read them (403), has none. That is told once as an empty list, so scoring goes on by
node, and asked again every few minutes, quietly, in case the CRD is installed later.

This module holds the calls the reconciler's identity makes to list and watch (its RBAC follows
them); the loop itself is the reflector's."""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any, cast

from kubernetes import client

from ...kube import ApiCall
from ...kube.reflector import CHANGES, MAX_BACKOFF, Backoff, ListWatch, Reflector, ReflectorMetrics, read
from ..settings import ReconcileSettings
from ..topology import GROUP as HN_GROUP
from ..topology import PLURAL as HN_PLURAL
from ..topology import VERSION as HN_VERSION
from .events import Change, Changed, Event, Listed, Resource

log = logging.getLogger("servinggate.scalein")

ABSENT_RETRY = 300.0  # seconds between asks for HyperNodes while the cluster has none to give


class _IntoQueue:
    """A Reflector's Sink that turns what it reads into the worker's events."""

    def __init__(self, resource: Resource, events: queue.Queue[Event]) -> None:
        self.resource, self.events = resource, events

    def replace(self, items: Iterator[dict[str, Any]]) -> None:
        self.events.put(Listed(self.resource, list(items)))

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        if event in CHANGES:
            self.events.put(Changed(cast(Change, event), self.resource, obj))

    def absent(self, status: int) -> None:
        log.info({"msg": "no HyperNodes to read; costs order by node", "status": status})
        self.events.put(Listed(self.resource, []))  # scoring goes on by node

    def health(self, trouble: str) -> None:
        """Nothing to do: the reflector logs and counts the failure, the worker scores on."""


class Watcher:
    """List+watch of Nodes, Pods and HyperNodes into `events`, until `stop`."""

    def __init__(
        self,
        api_client: client.ApiClient,
        settings: ReconcileSettings,
        events: queue.Queue[Event],
        metrics: ReflectorMetrics,
        stop: threading.Event,
        sleep_cap: float = MAX_BACKOFF,
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.host = str(getattr(api_client.configuration, "host", "") or "")
        self.settings = settings
        self.events = events
        self.metrics = metrics
        self.stop = stop
        self.sleep_cap = sleep_cap

    def list_watch(self, kind: Resource) -> ListWatch:
        if kind == "hypernodes":
            listing = functools.partial(self.custom.list_cluster_custom_object, HN_GROUP, HN_VERSION, HN_PLURAL)
            return ListWatch(ApiCall("list", HN_PLURAL, group=HN_GROUP), listing, functools.partial(listing, watch=True), self.host)
        if kind == "nodes":
            return ListWatch(ApiCall("list", "nodes"), self.core.list_node, functools.partial(self.core.list_node, watch=True), self.host)
        pods = self.core.list_pod_for_all_namespaces
        return ListWatch(ApiCall("list", "pods"), pods, functools.partial(pods, watch=True), self.host)

    def reflector(self, kind: Resource) -> Reflector:
        """The kind's reflector; HyperNodes may be absent (403, 404) without it being a failure."""
        return Reflector(
            self.list_watch(kind),
            _IntoQueue(kind, self.events),
            stop=self.stop,
            metrics=self.metrics,
            watch_timeout=self.settings.runtime.watch_timeout_seconds,
            absent_statuses=frozenset({403, 404}) if kind == "hypernodes" else frozenset(),
            absent_retry=min(ABSENT_RETRY, self.sleep_cap),
            backoff=Backoff(self.sleep_cap),
            logger=log,
        )

    def list_all(self, kind: Resource) -> list[dict[str, Any]]:
        """Every object of the kind, once (`--clear`); KubeAccessError when it cannot be read."""
        return [item for page in read(self.list_watch(kind)) for item in page.items]
