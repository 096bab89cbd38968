"""Prometheus metrics of the admission server.

Under gunicorn every worker is its own process, so `serve` points PROMETHEUS_MULTIPROC_DIR at an
emptied folder before this module is imported; the /metrics view then aggregates all workers'
files. Without that variable (tests, `check`) the default in-process registry is used.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import REGISTRY as DEFAULT_REGISTRY

MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

REQUESTS = Counter(
    "servinggate_admission_requests_total",
    "Admission reviews answered, by endpoint, resource, operation, verdict and status code.",
    ["endpoint", "resource", "operation", "allowed", "code"],
)
LATENCY = Histogram(
    "servinggate_admission_request_duration_seconds",
    "Time from reading the body to the serialised answer, by endpoint.",
    ["endpoint"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
IN_FLIGHT = Gauge("servinggate_admission_in_flight_requests", "Admission reviews being processed.", ["endpoint"], multiprocess_mode="livesum")
RULE_ERRORS = Counter("servinggate_rule_errors_total", "Rules that raised instead of answering.", ["rule"])
RULE_VERDICTS = Counter(
    "servinggate_rule_verdicts_total",
    "Rule verdicts by rule, enforcement action (deny, warn, audit; on for mutators) and verdict (pass, fail).",
    ["rule", "action", "verdict"],
)
BUILD_INFO = Gauge("servinggate_build_info", "Always 1; the labels say which build is running.", ["version"], multiprocess_mode="max")
UNMATCHED = Counter(
    "servinggate_admission_unmatched_total",
    "Reviews for a resource and operation no rule is registered for (allowed unchanged).",
    ["endpoint", "resource", "operation"],
)
BAD_REQUESTS = Counter("servinggate_admission_bad_requests_total", "Requests refused before a review could be judged.", ["code"])
LOOKUP_FAILURES = Counter("servinggate_lookup_failures_total", "Lookups of other objects that failed; the rule allowed with a warning.", ["kind"])
LOOKUP_CACHE_SYNCED = Gauge(
    "servinggate_lookup_cache_synced",
    "1 when every worker has listed the looked-up kind and its watch is healthy; 0 while one has not (its rules then read through GETs).",
    ["kind"],
    multiprocess_mode="livemin",
)
LOOKUP_CACHE_OBJECTS = Gauge(
    "servinggate_lookup_cache_objects",
    "Objects of the looked-up kind a worker keeps (projections), largest over the workers.",
    ["kind"],
    multiprocess_mode="livemax",
)
CERT_EXPIRY = Gauge(
    "servinggate_certificate_expiry_timestamp_seconds", "Expiry (Unix time) of the serving certificate loaded.", multiprocess_mode="livemostrecent"
)
CERT_RELOADS = Counter("servinggate_certificate_reloads_total", "Serving certificate (re)loads, by result.", ["result"])


_CHILDREN: dict[tuple, Any] = {}
_CHILDREN_MAX = 4096


def child(metric: Any, *values: str) -> Any:
    """`metric.labels(*values)`, cached: the label lookup costs more than the increment itself.
    Label values come from reviews the API server sends; the cap only guards memory."""
    key = (id(metric), values)
    found = _CHILDREN.get(key)
    if found is None:
        found = metric.labels(*values)
        if len(_CHILDREN) < _CHILDREN_MAX:
            _CHILDREN[key] = found
    return found


def refused(code: int) -> None:
    """A request refused before a review could be judged, counted once, by whoever decided it: the
    event loop (its own limits and gunicorn's parser), the application (bad method, path, type or
    body) or the review reader (a uid but no usable review)."""
    child(BAD_REQUESTS, str(code)).inc()


def initialise(rules: list[tuple[str, str]], version: str) -> None:
    """Create every bounded series at zero, so dashboards and alerts see them from the start
    (a counter with labels is otherwise absent until its first increment)."""
    BUILD_INFO.labels(version=version).set(1)
    for rule, action in rules:
        for verdict in ("pass", "fail"):
            child(RULE_VERDICTS, rule, action, verdict)
        child(RULE_ERRORS, rule)
    for code in ("400", "404", "405", "413", "415"):
        BAD_REQUESTS.labels(code=code)


def render() -> tuple[bytes, str]:
    if MULTIPROCESS:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(DEFAULT_REGISTRY), CONTENT_TYPE_LATEST


def certificate_loaded(loaded, previous) -> None:
    """Callback of CertificateSource: a (re)load or a failed attempt."""
    if loaded is None:
        CERT_RELOADS.labels(result="error").inc()
        return
    CERT_RELOADS.labels(result="ok").inc()
    CERT_EXPIRY.set(loaded.not_after.timestamp())


def lookup_cache_changed(store: Any) -> None:
    """Callback of the lookups' watcher (a ProjectionStore's states): the cache gauges."""
    for state in store.states():
        LOOKUP_CACHE_SYNCED.labels(kind=state.kind).set(1 if state.synced and not state.trouble else 0)
        LOOKUP_CACHE_OBJECTS.labels(kind=state.kind).set(state.objects)
