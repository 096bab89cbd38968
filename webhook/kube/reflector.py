"""One way to read a resource from the API server, for every reader: the webhook's lookups
(kube/watching.py), the reconciler's cache (scalein/reconcile/watching.py) and `audit`'s pages
(audit/listing.py).

`pages` lists a resource in pages of 500 (`limit`, then `continue` tokens), each decoded straight
from JSON: a page is the most ever held whole, so a reader that consumes them one by one holds
one page at a time. `read` is the same for a reader that lists once (`audit`, `check
--kubeconfig`): a resource the API server does not serve is `NotServed`, any other failure one
line naming what to fix (`KubeAccessError`).

A `Reflector` keeps one resource current in a `Sink`, forever: it lists, then watches from the
list's resourceVersion with bookmarks, and lists again when the watch is too old (410 Gone, as a
status or as an ERROR event) or when the periodic relist is due (`relist_every`; the relist
repairs whatever a lost event left wrong). A resource not served (404: its CRD is not installed;
403 as well where the reader treats the resource as optional) is told to the sink once as absent
and asked for again after `absent_retry`. Any other failure is told to the sink (`health`), counted
and backs off (`Backoff`), and the loop tries again; the sink keeps what it has meanwhile. The
sink hears "listed" (`replace`) before any event, which is the one answer to "synced yet?": a
sink that has had neither `replace` nor `absent` has not been listed.

The first answer of the API server after start, and the first after a failure, is a reconnection
(`Reconnects`): told once per outage to whoever listens, whichever resource's reflector gets it,
because every watch breaks together when the API server restarts.

The model is client-go's Reflector (k8s.io/client-go tools/cache/reflector.go as read at
kubernetes/kubernetes 000c6651: ListAndWatch, list with its pager, watch, watchHandler, and the
exponential backoff manager NewReflectorWithOptions builds) and kopf's watcher
(kopf/_cogs/clients/watching.py as read at nolar/kopf 06d75840: continuous_watch, which lists,
marks the end of the listing and restarts from a list on a 410 ERROR event). Where we differ: our
backoff starts at 1 s and stops at 60 s (client-go: 0.8 s to 30 s), each wait plus up to half
again drawn at random (client-go: up to double), has no reset timer (it resets when a watch ends
cleanly), and honours a 429's Retry-After; every list is a
consistent read (no resourceVersion, where client-go's first list asks for "0", the watch cache);
and the periodic relist is a real list, not client-go's replay of its own cache.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import prometheus_client as prom
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from .errors import ApiCall, KubeAccessError, describe_api_error
from .responses import WatchExpired, json_body, watch_events

log = logging.getLogger("servinggate.kube")

PAGE_SIZE = 500
LIST_TIMEOUT = (10, 60)  # seconds: to connect, and to read one page
FIRST_BACKOFF = 1.0  # seconds: the wait after a first failure, doubled after each further one
MAX_BACKOFF = 60.0  # seconds: the longest a failing list/watch waits before trying again, before jitter
JITTER = 0.5  # each wait is lengthened by up to this share of it, at random
MAX_RETRY_AFTER = 120.0  # seconds: a larger Retry-After is capped (a bad proxy must not stall us)
CHANGES = frozenset(("ADDED", "MODIFIED", "DELETED"))


# ---- what to read -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListWatch:
    """One resource as a reader reads it, after client-go's ListerWatcher: `list` is the official
    client's list method for it with its fixed arguments bound (group, namespace, field
    selector), `watch` the same call with `watch=True`, or None for a reader that never watches.
    `call` names the resource in errors; `host` is the API server's address, for the same."""

    call: ApiCall
    list: Callable[..., Any]
    watch: Callable[..., Any] | None = None
    host: str = ""

    @property
    def resource(self) -> str:
        """The resource's name in logs and metrics: its plural (pods, modelservings)."""
        return self.call.resource


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a list: its items, and what the list says of them."""

    items: list[dict[str, Any]]
    api_version: str  # the list's ("v1", "group/version"): built-in kinds' items come without one
    kind: str  # of the items: the list's kind without its "List" suffix
    resource_version: str  # the list's, on its last page; "" on the others
    last: bool


def pages(lw: ListWatch, *, page_size: int = PAGE_SIZE, timeout: Any = LIST_TIMEOUT) -> Iterator[Page]:
    """Every object of the resource, one page at a time; the client's failures are raised as they are."""
    token = ""
    while True:
        options: dict[str, Any] = {"limit": page_size, "_preload_content": False, "_request_timeout": timeout}
        if token:
            options["_continue"] = token
        body = json_body(lw.list(**options))
        body = body if isinstance(body, dict) else {}
        meta = body.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        token = str(meta.get("continue") or "")
        yield Page(
            items=[i for i in body.get("items") or () if isinstance(i, dict)],
            api_version=str(body.get("apiVersion") or ""),
            kind=str(body.get("kind") or "").removesuffix("List"),
            resource_version="" if token else str(meta.get("resourceVersion") or ""),
            last=not token,
        )
        if not token:
            return


class NotServed(Exception):
    """The API server does not serve the resource (404 on its list: its CRD is not installed)."""


def read(lw: ListWatch, *, page_size: int = PAGE_SIZE, timeout: Any = LIST_TIMEOUT, metrics: ReflectorMetrics | None = None) -> Iterator[Page]:
    """`pages` for a reader that lists once: NotServed when the resource is not served, else
    KubeAccessError for any failure, one line naming the call and what to fix."""
    first = True
    try:
        for page in pages(lw, page_size=page_size, timeout=timeout):
            first = False
            if page.last and metrics is not None:
                metrics.listed(lw.resource)
            yield page
    except ApiException as exc:
        if exc.status == 404 and first:
            raise NotServed(lw.call.target()) from None
        if metrics is not None:
            metrics.failed(lw.resource, exc, 0.0)
        raise KubeAccessError(describe_api_error(exc, lw.call, lw.host)) from None
    except (HTTPError, OSError) as exc:
        if metrics is not None:
            metrics.failed(lw.resource, exc, 0.0)
        raise KubeAccessError(describe_api_error(exc, lw.call, lw.host)) from None


# ---- the backoff policy and its metrics ---------------------------------------------------------


def retry_after(exc: BaseException, default: float) -> float:
    """The `Retry-After` seconds of a throttled answer (an `ApiException`), capped; `default`
    when the answer has none or an unreadable one."""
    headers = getattr(exc, "headers", None) or {}
    raw = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return min(max(float(raw), 0.0), MAX_RETRY_AFTER) if raw is not None else default
    except ValueError:
        return default


class Backoff:
    """How long a failing list/watch waits: FIRST_BACKOFF, doubling after each further failure up
    to MAX_BACKOFF, back to the first once a watch ends cleanly, each wait lengthened by up to
    JITTER of itself at random: every reflector of every worker fails together when the API
    server restarts, and should not all come back in the same instant. A throttled answer (429)
    waits its Retry-After instead, as asked. `cap` bounds every wait before its jitter (tests make
    it short)."""

    def __init__(self, cap: float = MAX_BACKOFF, rand: Callable[[], float] = random.random) -> None:
        self.cap = cap
        self._rand = rand
        self._next = FIRST_BACKOFF

    def failed(self, exc: BaseException) -> float:
        """The wait after `exc`; the next failure waits twice as long."""
        throttled = getattr(exc, "status", None) == 429
        wait = min(retry_after(exc, self._next) if throttled else self._next, self.cap)
        self._next = min(self._next * 2, MAX_BACKOFF)
        return wait if throttled else wait * (1 + JITTER * self._rand())

    def succeeded(self) -> bool:
        """A request answered in full: start again from the first wait. True if there had been failures."""
        recovering, self._next = self._next > FIRST_BACKOFF, FIRST_BACKOFF
        return recovering


class ReflectorMetrics:
    """The reads' metrics, the same families in every command's registry (the webhook's is
    Prometheus' default one, whose values its workers share through PROMETHEUS_MULTIPROC_DIR)."""

    _shared: ReflectorMetrics | None = None
    _shared_lock = threading.Lock()

    def __init__(self, registry: prom.CollectorRegistry) -> None:
        self.lists = prom.Counter(
            "servinggate_listwatch_lists", "full lists of a resource (start, 410 Gone, periodic relist, an audit)", ["resource"], registry=registry
        )
        self.errors = prom.Counter(
            "servinggate_listwatch_errors", "failed list and watch requests, by resource and HTTP code (0: no answer)", ["resource", "code"], registry=registry
        )
        self.backoff = prom.Gauge(
            "servinggate_listwatch_backoff_seconds",
            "how long the resource's list/watch waits after its last failure before trying again; 0 once it is answered",
            ["resource"],
            multiprocess_mode="livemax",
            registry=registry,
        )

    @classmethod
    def shared(cls) -> ReflectorMetrics:
        """The metrics in Prometheus' default registry (the webhook's), created once per process."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls(prom.REGISTRY)
            return cls._shared

    def listed(self, resource: str) -> None:
        self.lists.labels(resource).inc()
        self.backoff.labels(resource).set(0)

    def failed(self, resource: str, exc: BaseException, wait: float) -> None:
        self.errors.labels(resource, str(exc.status or 0) if isinstance(exc, ApiException) else "0").inc()
        self.backoff.labels(resource).set(wait)

    def answered(self, resource: str) -> None:
        self.backoff.labels(resource).set(0)


class Reconnects:
    """The API server's answers as the reflectors of one client see them together: `answered()`
    after `failed()` (or after start) runs `on_reconnect()` once, whichever reflector calls it first
    (the webhook reads the API server's version again then: kube/serverversion.py)."""

    def __init__(self, on_reconnect: Callable[[], None] | None = None) -> None:
        self._on_reconnect = on_reconnect or (lambda: None)
        self._outage = True  # no answer since start, or a failure since the last answer
        self._lock = threading.Lock()

    def answered(self) -> None:
        with self._lock:
            first, self._outage = self._outage, False
        if not first:
            return
        try:
            self._on_reconnect()
        except Exception:  # the watch goes on whatever the listener does
            log.exception({"msg": "on_reconnect failed"})

    def failed(self) -> None:
        with self._lock:
            self._outage = True


# ---- keeping a resource current -----------------------------------------------------------------


class Sink(Protocol):
    """Where a Reflector puts what it reads (client-go's Store; one reflector writes to it)."""

    def replace(self, items: Iterator[dict[str, Any]]) -> None:
        """A full list: everything of the resource is now `items` (consumed one page at a time)."""

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        """A watch event: ADDED, MODIFIED, DELETED, or BOOKMARK (which also follows each list,
        carrying the list's resourceVersion)."""

    def absent(self, status: int) -> None:
        """The API server does not serve the resource (`status` 404, or 403 where allowed): none
        of it exists. Told once, until a list succeeds again."""

    def health(self, trouble: str) -> None:
        """The list/watch fails (`trouble`, one line), or is answered again (""); the sink keeps
        what it has meanwhile."""


class Reflector:
    """List, then watch, one resource into `sink` until `stop` (`run`, on a thread of its own)."""

    def __init__(
        self,
        lw: ListWatch,
        sink: Sink,
        *,
        stop: threading.Event,
        metrics: ReflectorMetrics | None = None,
        reconnects: Reconnects | None = None,
        relist_every: float = 0.0,
        watch_timeout: int = 300,
        absent_statuses: frozenset[int] = frozenset({404}),
        absent_retry: float = 600.0,
        backoff: Backoff | None = None,
        logger: logging.Logger = log,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if lw.watch is None:
            raise ValueError(f"{lw.resource}: a reflector needs a watch call")
        self.lw, self.sink, self._stop = lw, sink, stop
        self.metrics = metrics
        self.reconnects = reconnects or Reconnects()
        self.relist_every = relist_every  # 0: list only when the watch cannot go on
        self.watch_timeout = watch_timeout
        self.absent_statuses = absent_statuses
        self.absent_retry = absent_retry
        self.backoff = backoff or Backoff()
        self._log = logger
        self._clock = clock
        self._rv = ""  # "" : list before watching
        self._listed_at = 0.0
        self._absent = False
        self._down = True  # not answered yet, or failed since its last answer
        self._doing = "list"

    def run(self) -> None:
        """List, then watch until a relist is due or the watch cannot go on, again and again;
        never raises."""
        while not self._stop.is_set():
            try:
                if not self._rv or (self.relist_every and self._clock() - self._listed_at >= self.relist_every):
                    self._list()
                self._watch()
            except WatchExpired:
                self._expired()
            except ApiException as exc:
                if exc.status == 410:
                    self._expired()
                elif exc.status in self.absent_statuses:
                    self._not_served(exc.status)
                else:
                    self._failed(exc)
            except Exception as exc:  # network trouble, an unreadable answer: back off, go on
                if self._stop.is_set():
                    break
                self._failed(exc)

    def _list(self) -> None:
        self._doing = "list"
        listed: list[Page] = []
        count = 0

        def items() -> Iterator[dict[str, Any]]:
            nonlocal count
            for page in pages(self.lw):
                count += len(page.items)
                if page.last:
                    listed.append(page)
                yield from page.items

        self.sink.replace(items())
        if not listed:  # the sink stopped reading before the end: nothing to watch from
            raise RuntimeError(f"{self.lw.resource}: the list was not read to its end")
        self._rv, self._listed_at, self._absent = listed[0].resource_version, self._clock(), False
        self.sink.apply("BOOKMARK", {"metadata": {"resourceVersion": self._rv}})  # known only after the last page
        if self.metrics is not None:
            self.metrics.listed(self.lw.resource)
        self._log.info({"msg": "listed", "resource": self.lw.resource, "objects": count})
        self.sink.health("")
        self._answered()

    def _watch(self) -> None:
        """One watch request from the last resourceVersion, until the server ends it (its
        timeout, at the latest when the next relist is due) or `stop`."""
        self._doing = "watch"
        seconds = self.watch_timeout
        if self.relist_every:
            seconds = max(1, int(min(seconds, self.relist_every - (self._clock() - self._listed_at))))
        assert self.lw.watch is not None  # checked when built
        resp: Any = self.lw.watch(  # the urllib3 response: not preloaded
            resource_version=self._rv, allow_watch_bookmarks=True, timeout_seconds=seconds, _preload_content=False, _request_timeout=(10, seconds + 30)
        )
        self._answered()
        events = watch_events(resp)
        try:
            for etype, obj in events:
                if self._stop.is_set():
                    break
                if etype in CHANGES or etype == "BOOKMARK":
                    meta = obj.get("metadata")
                    self._rv = str((meta.get("resourceVersion") if isinstance(meta, dict) else None) or self._rv)
                    self.sink.apply(etype, obj)
        finally:
            events.close()
        if self.backoff.succeeded():
            self.sink.health("")

    def _answered(self) -> None:
        """The API server answered: the first answer after start or a failure is a reconnection."""
        if self._down:
            self._down = False
            if self.metrics is not None:
                self.metrics.answered(self.lw.resource)
            self.reconnects.answered()

    def _expired(self) -> None:
        self._log.info({"msg": "watch expired (410 Gone); listing again", "resource": self.lw.resource})
        self._rv = ""

    def _not_served(self, status: int) -> None:
        """Absent: told once, asked for again after `absent_retry`."""
        self._rv = ""
        if not self._absent:
            self._absent = True
            self.sink.absent(status)
        self._stop.wait(self.absent_retry)

    def _failed(self, exc: BaseException) -> None:
        trouble = describe_api_error(exc, dataclasses.replace(self.lw.call, verb=self._doing), self.lw.host)
        wait = self.backoff.failed(exc)
        if self.metrics is not None:
            self.metrics.failed(self.lw.resource, exc, wait)
        self._log.warning({"msg": "list/watch failed; backing off", "resource": self.lw.resource, "error": trouble, "seconds": wait})
        self._down = True
        self.reconnects.failed()
        self.sink.health(trouble)
        self._stop.wait(wait)
