"""The webhook's lookups: answered from the watch-fed store, never making a review late.

Rules read ModelServings and AutoscalingPolicies (policies/projections.py). A StoreWatcher keeps
their projections in memory (policies/store.py), so a review normally reads a dict. KServe's
ConfigMap is never kept: each lookup of it is a GET. A miss (an
object created a moment ago, or a store not listed yet) falls back to one GET, within the
review's lookup budget (`--lookup-budget`, 0.5 s): the GET's timeout is what is left of it, the
client that makes it never retries, and `Context.for_review` (policies/context.py) makes sure each
object is asked for at most once per review. After a GET that got no answer (timed out, refused)
misses fail at once for `cooldown` seconds instead of waiting again. A failure raises
LookupFailed and the rule decides what it means (ours allow with a warning), so a pod review is
answered within the budget plus its own work even when the API server hangs.

404 means "does not exist" (None). Both API clients come from `kube.client.load_api_client`.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..policies.context import NOT_HERE, LookupFailed, Lookups, NotHere
from ..policies.projections import LookedUp, looked_up, project
from ..policies.store import ProjectionStore, StoreLookups
from .client import load_api_client
from .reflector import ReflectorMetrics
from .responses import json_body
from .watching import StoreWatcher


class KubeLookups(StoreLookups):
    """`Lookups` over a ProjectionStore, with one budgeted GET on a miss. The watcher, when given,
    starts in the process that first uses the lookups (and in every child forked after), never in
    gunicorn's master before the fork: its threads would not survive it."""

    def __init__(
        self,
        store: ProjectionStore,
        api_client: client.ApiClient,
        *,
        budget: float = 0.5,
        cooldown: float = 2.0,
        watcher: StoreWatcher | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self.budget = budget
        self.cooldown = cooldown
        self._clock = clock
        self._watcher = watcher
        self._started_in = 0  # pid of the process whose watcher threads run
        self._start_lock = threading.Lock()
        self._quiet_until = float("-inf")
        self._quiet_reason = ""
        if watcher is not None:
            ref = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: (lambda me: me.start() if me is not None else None)(ref()))

    def start(self) -> None:
        """Start the watcher in this process, once."""
        if self._watcher is None or self._started_in == os.getpid():
            return
        with self._start_lock:
            if self._started_in != os.getpid():
                self._watcher.start()
                self._started_in = os.getpid()

    def close(self) -> None:
        """Stop the watcher (tests; the server's workers end with their process)."""
        if self._watcher is not None:
            self._watcher.stop()

    def for_review(self) -> _Budgeted:
        """The view one review uses: all its lookups within one budget (Context.for_review adds
        ReviewLookups over it, so each object is asked for once)."""
        self.start()
        return _Budgeted(self, self._clock() + self.budget)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.for_review().get(api_version, kind, namespace, name)

    def try_get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None | NotHere:
        return self.for_review().try_get(api_version, kind, namespace, name)

    def describe(self) -> str:
        self.start()
        return "lookups: " + self.store.describe()

    def fetch(self, api_version: str, kind: str, namespace: str, name: str, deadline: float) -> dict[str, Any] | None:
        """The store's projection, else one GET that ends by `deadline` (projected too)."""
        found = self._look(api_version, kind, namespace, name, deadline)
        return self._get(*found) if isinstance(found, tuple) else found

    def fetch_here(self, api_version: str, kind: str, namespace: str, name: str, deadline: float) -> dict[str, Any] | None | NotHere:
        """As `fetch`, but NOT_HERE where `fetch` would ask the API server."""
        found = self._look(api_version, kind, namespace, name, deadline)
        return NOT_HERE if isinstance(found, tuple) else found

    def _look(self, api_version: str, kind: str, namespace: str, name: str, deadline: float) -> dict[str, Any] | None | tuple[LookedUp, str, str, float]:
        """The store's projection, or what the GET for it needs (kind, namespace, name, timeout)."""
        found = self.store.cached(api_version, kind, namespace, name)
        if found is not None:
            return found
        entry = looked_up(api_version.rpartition("/")[0], kind)
        if entry is None:
            raise LookupFailed(f"lookups of {kind} are not supported")
        now = self._clock()
        if now < self._quiet_until:
            raise LookupFailed(f"not asked: {self._quiet_reason} less than {self.cooldown:g} s ago")
        left = deadline - now
        if left <= 0.001:
            raise LookupFailed(f"the lookup budget of {self.budget:g} s is spent")
        return entry, namespace, name, left

    def _get(self, entry: LookedUp, namespace: str, name: str, timeout: float) -> dict[str, Any] | None:
        try:
            if not entry.group:  # the one core kind read by name (projections.FETCHED)
                if entry.kind != "ConfigMap" or not namespace:
                    raise LookupFailed(f"lookups of {entry.kind} are not supported")
                resp: Any = self._core.read_namespaced_config_map(name, namespace, _request_timeout=timeout, _preload_content=False)
            elif namespace:
                resp = self._custom.get_namespaced_custom_object(
                    entry.group, entry.version, namespace, entry.plural, name, _request_timeout=timeout, _preload_content=False
                )
            else:
                resp = self._custom.get_cluster_custom_object(entry.group, entry.version, entry.plural, name, _request_timeout=timeout, _preload_content=False)
            found = json_body(resp)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise LookupFailed(f"reading {entry.kind} {namespace}/{name}: HTTP {exc.status} {exc.reason}") from None
        except (HTTPError, OSError) as exc:
            self._quiet_until = self._clock() + self.cooldown
            self._quiet_reason = f"the API server gave no answer ({exc.__class__.__name__})"
            raise LookupFailed(f"reading {entry.kind} {namespace}/{name}: {exc.__class__.__name__}") from None
        return project(entry, found) if isinstance(found, dict) else None


class _Budgeted(Lookups):
    """KubeLookups for one review: every miss's GET ends by the review's deadline."""

    __slots__ = ("_lookups", "_deadline")

    def __init__(self, lookups: KubeLookups, deadline: float) -> None:
        self._lookups, self._deadline = lookups, deadline

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._lookups.fetch(api_version, kind, namespace, name, self._deadline)

    def try_get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None | NotHere:
        return self._lookups.fetch_here(api_version, kind, namespace, name, self._deadline)


def serving_lookups(
    kubeconfig: str, *, budget: float, resync: float, on_change: Callable[[ProjectionStore], None] | None = None, on_reconnect: Callable[[], None] | None = None
) -> KubeLookups:
    """The webhook's lookups: a store of every looked-up kind, fed by a watcher on its own client,
    and a review client that never retries (a retry would outlast the budget). `on_reconnect`:
    the watcher's, called on the API server's first answer and its first after a failure. Raises
    KubeAccessError when no API configuration is usable."""
    store = ProjectionStore()
    watcher = StoreWatcher(load_api_client(kubeconfig), store, resync=resync, on_change=on_change, on_reconnect=on_reconnect, metrics=ReflectorMetrics.shared())
    return KubeLookups(store, load_api_client(kubeconfig, retries=False), budget=budget, watcher=watcher)
