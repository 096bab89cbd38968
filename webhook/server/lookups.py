"""Lookups as the webhook's reviews use them: every failure counted in a metric.

`CountingLookups` wraps whatever lookups the server has (the Kubernetes API's, or none) and passes
`try_get` through for a review that may not wait (policies/context.py).
"""

from __future__ import annotations

from typing import Any

from ..policies import LookupFailed, Lookups
from ..policies.context import NotHere
from . import metrics


class CountingLookups:
    """Counts failed lookups in a metric; the rule still decides what a failure means."""

    def __init__(self, inner: Lookups):
        self.inner = inner

    def for_review(self) -> Lookups:
        start = getattr(self.inner, "for_review", None)
        return CountingLookups(start()) if start is not None else self

    def describe(self) -> str:
        """The lookups' state for /readyz ("" when they have none to tell)."""
        describe = getattr(self.inner, "describe", None)
        return describe() if describe is not None else ""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.inner.get(api_version, kind, namespace, name)
        except LookupFailed:
            metrics.child(metrics.LOOKUP_FAILURES, kind).inc()
            raise

    def try_get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None | NotHere:
        try_get = getattr(self.inner, "try_get", None)
        if try_get is None:
            return self.get(api_version, kind, namespace, name)
        try:
            found: dict[str, Any] | None | NotHere = try_get(api_version, kind, namespace, name)
        except LookupFailed:
            metrics.child(metrics.LOOKUP_FAILURES, kind).inc()
            raise
        return found
