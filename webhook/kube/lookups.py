"""Lookups answered by the Kubernetes API, with a small TTL cache (the server's wiring for rules).

Only custom resources are read (ModelServing, AutoscalingPolicy), with CustomObjectsApi. 404
means "does not exist" (None); any other API or transport error raises LookupFailed, and the
rule decides what that means (ours allow with a warning). The client comes from
`kube.client.load_api_client`, like every other API client in the package.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..admission.review import plural_of
from ..policies.context import LookupFailed

_Key = tuple[str, str, str, str]


class KubeLookups:
    """`Lookups` over the API server. Thread-safe; entries (including "absent") live `ttl` seconds."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        ttl: float = 5.0,
        timeout: float = 2.0,
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._ttl = ttl
        self._timeout = timeout
        self._max = max_entries
        self._clock = clock
        self._cache: dict[_Key, tuple[float, dict[str, Any] | None]] = {}
        self._lock = threading.Lock()

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = (api_version, kind, namespace, name)
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        found = self._fetch(api_version, kind, namespace, name)
        with self._lock:
            if len(self._cache) >= self._max:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= self._max:
                    self._cache.clear()
            self._cache[key] = (now + self._ttl, found)
        return found

    def _fetch(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        if not group:
            raise LookupFailed(f"lookups of core kind {kind} are not supported")
        plural = plural_of(kind)
        try:
            if namespace:
                found = self._custom.get_namespaced_custom_object(group, version, namespace, plural, name, _request_timeout=self._timeout)
            else:
                found = self._custom.get_cluster_custom_object(group, version, plural, name, _request_timeout=self._timeout)
            return cast("dict[str, Any]", found)  # a custom object arrives as the API server's JSON object
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise LookupFailed(f"reading {kind} {namespace}/{name}: HTTP {exc.status} {exc.reason}") from None
        except (HTTPError, OSError) as exc:
            raise LookupFailed(f"reading {kind} {namespace}/{name}: {exc.__class__.__name__}") from None
