"""Kubernetes Events the reconciler posts on pods: `DeletionCostContested`, when another writer
keeps changing a cost we wrote (contest.py). An I/O module: the worker only calls `post`, which
queues; one thread sends through the official client, so the worker never waits for the API
server. An Event that cannot be posted (a missing RBAC grant, say) is logged once and counted;
scale-in goes on without it."""

from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
import uuid
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..cluster import PodView
from .health import Metrics

log = logging.getLogger("servinggate.scalein")

REASON = "DeletionCostContested"
COMPONENT = "servinggate-scale-in"


def contested_event(pod: PodView, key: str, want: int, current: str | None, window: int, now: dt.datetime) -> dict[str, Any]:
    """The core/v1 Event for one contested pod."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    message = f"another writer keeps changing {key} (now {current!r}); servinggate wanted {want} and leaves this pod's cost alone for {window} s"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod.name[:236]}.{uuid.uuid4().hex[:16]}", "namespace": pod.namespace},  # a DNS subdomain, at most 253
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": pod.namespace,
            "name": pod.name,
            "uid": pod.uid,
            "resourceVersion": pod.resource_version,
        },
        "reason": REASON,
        "message": message[:1024],
        "type": "Warning",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class EventPoster:
    """Posts queued Events on one daemon thread until `stop`."""

    def __init__(self, core: client.CoreV1Api, key: str, window: int, metrics: Metrics, stop: threading.Event, instance: str = "") -> None:
        self.core, self.key, self.window, self.metrics, self.stop = core, key, window, metrics, stop
        self.instance = instance
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=1000)  # None: wake()
        self.refused_logged = False

    def post(self, pod: PodView, want: int, current: str | None) -> None:
        """Queue the Event; never blocks (a full queue drops it, counted)."""
        body = contested_event(pod, self.key, want, current, self.window, dt.datetime.now(dt.UTC))
        if self.instance:
            body["reportingInstance"] = self.instance[:128]
        try:
            self.queue.put_nowait(body)
        except queue.Full:
            self.metrics.errors.labels("event", "queue-full").inc()

    def start(self) -> threading.Thread:
        t = threading.Thread(target=self.loop, name="events", daemon=True)
        t.start()
        return t

    def loop(self) -> None:
        while not self.stop.is_set():
            try:
                body = self.queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if body is not None:
                self.send(body)

    def wake(self) -> None:
        """Wake the loop so that it sees `stop` now (a full queue is busy and sees it soon anyway)."""
        try:
            self.queue.put_nowait(None)
        except queue.Full:
            pass

    def send(self, body: dict[str, Any]) -> bool:
        """Create one Event; a failure is counted, and logged once per kind of failure."""
        ns = body["metadata"]["namespace"]
        try:
            self.core.create_namespaced_event(ns, body, _request_timeout=10)  # type: ignore[arg-type]  # a dict serializes as is
            return True
        except ApiException as exc:
            code = int(exc.status or 0)
            self.metrics.errors.labels("event", str(code)).inc()
            if code in (401, 403):
                if not self.refused_logged:
                    self.refused_logged = True
                    log.warning({"msg": "cannot post Events (grant create on events); scale-in goes on without them", "status": code})
            else:
                log.warning({"msg": "cannot post Event", "pod": f"{ns}/{body['involvedObject']['name']}", "status": code})
        except Exception as exc:  # the network: an Event is never worth stopping for
            self.metrics.errors.labels("event", "0").inc()
            log.warning({"msg": "cannot post Event", "error": repr(exc)})
        return False
