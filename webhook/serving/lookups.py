"""Lookups as the webhook's reviews use them: the API server's when reachable, every failure counted
in a metric.

`CountingLookups` wraps whatever lookups the server has (the Kubernetes API's, or none) and passes
`try_get` through for a review that may not wait (policies/context.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..config import ConfigError
from ..policies import LookupFailed, Lookups, NoLookups
from ..policies.clusterfacts import ClusterFacts, NoFacts
from ..policies.context import NotHere
from ..policies.store import StoreLookups
from ..servesettings import ServeSettings
from . import metrics

log = logging.getLogger("servinggate.server")


class CountingLookups(Lookups):
    """Counts failed lookups in a metric; the rule still decides what a failure means."""

    def __init__(self, inner: Lookups):
        self.inner = inner

    def for_review(self) -> Lookups | None:
        view = self.inner.for_review()
        return CountingLookups(view) if view is not None else None

    def describe(self) -> str:
        """The lookups' state for /readyz ("" when they have none to tell)."""
        return self.inner.describe()

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.inner.get(api_version, kind, namespace, name)
        except LookupFailed:
            metrics.child(metrics.LOOKUP_FAILURES, kind).inc()
            raise

    def try_get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None | NotHere:
        try:
            return self.inner.try_get(api_version, kind, namespace, name)
        except LookupFailed:
            metrics.child(metrics.LOOKUP_FAILURES, kind).inc()
            raise


def require_api(settings: ServeSettings) -> None:
    """`--kube-lookups on`: an API configuration must load, checked at start (serving/startup.py)
    before anything else reads the API (the Kubernetes version would warn first)."""
    if settings.lookups.kube_lookups != "on":
        return
    from ..kube import KubeAccessError, load_api_client

    try:
        load_api_client(settings.kube.kubeconfig).close()
    except KubeAccessError as exc:
        raise _needed(exc) from None


def _needed(exc: Exception) -> ConfigError:
    return ConfigError(f"--kube-lookups on: {exc}; fix the API access (--kubeconfig) or choose --kube-lookups auto")


def default_lookups(settings: ServeSettings, on_reconnect: Callable[[], None] | None = None) -> Lookups:
    """The Kubernetes API when reachable (kube-lookups auto/on), otherwise lookups that fail softly.
    `on_reconnect()`: called when the lookups' watch answers again after a failure."""
    if settings.lookups.kube_lookups == "off":
        return NoLookups()
    from ..kube import KubeAccessError
    from ..kube.lookups import serving_lookups

    try:
        return serving_lookups(
            settings.kube.kubeconfig,
            budget=settings.lookups.lookup_budget_seconds,
            resync=settings.lookups.lookup_resync_seconds,
            on_change=metrics.lookup_cache_changed,
            on_reconnect=on_reconnect,
        )
    except KubeAccessError as exc:
        if settings.lookups.kube_lookups == "on":
            raise _needed(exc) from None
        log.warning("no Kubernetes API configuration found (%s): rules that read other objects will allow with a warning", exc)
        return NoLookups()


def cluster_facts(lookups: Lookups) -> ClusterFacts:
    """The cluster facts of the lookups' store (the watch keeps both). Without one (no API access,
    `--kube-lookups off`) the will-it-run rules say nothing: a warning on every ModelServing and
    autoscaler that no cluster was read would only be noise; /readyz already says so."""
    return ClusterFacts(lookups.store) if isinstance(lookups, StoreLookups) else NoFacts("no Kubernetes API access", quiet=True)
