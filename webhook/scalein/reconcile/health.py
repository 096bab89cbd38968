"""What the reconciler reports about itself: its Prometheus metrics, and the small HTTP server
that answers /healthz (for the kubelet's probes) and /metrics (for Prometheus).

The endpoint is webhook/plainhttp.py, the same small server as the webhook's metrics port: two
cheap GETs do not justify a second web stack in the reconciler's image or process."""

from __future__ import annotations

import http.server
from collections.abc import Callable

import prometheus_client as prom

from ... import plainhttp
from ...kube.reflector import ReflectorMetrics


class Metrics:
    """The reconciler's counters and gauges, in a registry of its own (tests create many)."""

    def __init__(self, registry: prom.CollectorRegistry | None = None) -> None:
        self.registry = registry or prom.CollectorRegistry()
        r = self.registry
        self.writes = prom.Counter("servinggate_scalein_writes", "pod patches sent", ["kind"], registry=r)
        self.skips = prom.Counter("servinggate_scalein_skips", "pods whose cost was not written", ["reason"], registry=r)
        self.conflicts = prom.Counter("servinggate_scalein_conflicts", "patches refused because the pod changed (422 test failed, 409)", registry=r)
        self.errors = prom.Counter(
            "servinggate_scalein_errors", "failed API calls other than lists and watches (servinggate_listwatch_errors)", ["op", "code"], registry=r
        )
        self.scored = prom.Gauge("servinggate_scalein_pods_scored", "pods with a desired cost in the cache", registry=r)
        self.pass_seconds = prom.Histogram(
            "servinggate_scalein_pass_duration_seconds",
            "duration of a scoring pass (full or one event)",
            ["scope"],
            buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10),
            registry=r,
        )
        self.leader = prom.Gauge("servinggate_scalein_leader", "1 while this replica may write", registry=r)
        self.listwatch = ReflectorMetrics(r)  # its lists, list/watch failures and backoff (kube/reflector.py)
        # convergence: how much is left to write, how long the oldest has waited, and how soon
        # an event's write goes out (read at scrape time from the write queue, see `track`)
        self.backlog = prom.Gauge("servinggate_scalein_write_backlog", "pods waiting for a cost write (not counting writes in flight)", registry=r)
        self.backlog_oldest = prom.Gauge(
            "servinggate_scalein_write_backlog_oldest_seconds", "how long the longest-waiting pod has waited for its write", registry=r
        )
        self.event_to_write = prom.Histogram(
            "servinggate_scalein_event_to_write_seconds",
            "from a watch event to the write it made necessary",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300),
            registry=r,
        )
        self.contested = prom.Gauge("servinggate_scalein_contested_pods", "pods whose deletion cost another writer contests", registry=r)
        self.converged = prom.Gauge("servinggate_scalein_last_convergence_seconds", "how long the last full pass took until every cost was written", registry=r)

    def track(self, size: Callable[[], float], oldest: Callable[[], float]) -> None:
        """Read the backlog gauges from the write queue when scraped, never on the hot path."""
        self.backlog.set_function(size)
        self.backlog_oldest.set_function(oldest)


def serve_health(host: str, port: int, healthy: Callable[[], bool], metrics: Metrics) -> http.server.ThreadingHTTPServer:
    """Start answering /healthz (200 while `healthy()`, else 503) and /metrics on a daemon thread."""
    return plainhttp.serve_health(host, port, healthy, metrics.registry)
