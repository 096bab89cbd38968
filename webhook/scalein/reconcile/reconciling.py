"""`python -m webhook reconcile`: keep pod deletion costs current from a watched cache.

This module is the command (as server/launch.py is `serve`'s and ../plan/planning.py `plan`'s): it builds the
API client, checks once that the cluster answers and allows what the reconciler needs, discovers
the third-party workload types, elects a leader if asked, wires the pieces to the API server
(`Reconciler`) and runs them. The pieces live in their own modules:

- watching.py: one reflector (../../kube/reflector.py) per kind (Nodes, Pods, HyperNodes) feeding a queue of events (events.py);
- worker.py: the worker that owns the cache, re-scores only what an event touches and
  decides what to write;
- writequeue.py: the pending writes, one per pod with its latest cost, events before the
  backlog and the backlog lowest cost first;
- writing.py: the writer threads that drain it at `--scoring-qps`;
- patching.py: the rate-limited, `test`-guarded JSON Patch shared by the writers and `--clear`;
- contest.py (pure) and notices.py: backing off from another writer of the cost, and the Event
  that says so;
- ../../kube/leases.py: the Lease loop (--leader-elect), shared with `audit`;
- health.py: the metrics and the /healthz + /metrics endpoint.

All Kubernetes I/O goes through the official client."""

from __future__ import annotations

import argparse
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ... import config, logs
from ...kube import ApiCall, KubeAccessError, describe_api_error, load_api_client
from ...kube.leases import LeaderElector
from ...kube.reflector import MAX_BACKOFF
from ...kube.responses import json_body
from ..cluster import Cluster, WorkloadTypes
from ..settings import ReconcileSettings
from .events import RESOURCES, Answered, Event, Resync, Stopping
from .health import Metrics, serve_health
from .notices import EventPoster
from .pacing import RateLimiter
from .patching import Patcher, clear_costs
from .watching import Watcher
from .worker import Worker
from .writequeue import WriteQueue
from .writing import Writers

__all__ = ["Metrics", "Reconciler", "api_client_for", "main", "preflight", "resolve_types", "run", "serve_health"]

log = logging.getLogger("servinggate.scalein")


class Reconciler:
    """The reconciler's pieces wired to one API client: the watchers feed the worker's queue, the
    worker fills the write queue, the writers drain it and answer on the worker's queue. The one
    place that builds them; the worker itself is handed its queues and cache (worker.py)."""

    def __init__(
        self,
        settings: ReconcileSettings,
        api_client: client.ApiClient,
        metrics: Metrics | None = None,
        *,
        may_write: Callable[[], bool] = lambda: True,
        stop: threading.Event | None = None,
        sleep_cap: float = MAX_BACKOFF,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.may_write = may_write
        self.stop = stop or threading.Event()
        core = client.CoreV1Api(api_client)
        self.events: queue.Queue[Event] = queue.Queue()
        self.watcher = Watcher(api_client, settings, self.events, self.metrics.listwatch, self.stop, sleep_cap)
        self.patcher = Patcher(core, RateLimiter(settings.runtime.scoring_qps), self.metrics, self.stop)
        self.writes = WriteQueue()
        self.metrics.track(self.writes.size, self.writes.oldest_age)
        self.writers = Writers(
            self.writes, self.patcher, settings, self.metrics, may_write, lambda attempt: self.events.put(Answered(attempt)), self.stop, sleep_cap
        )
        self.notices = EventPoster(
            core, settings.scoring.score_annotation_key, settings.scoring.contest_backoff_seconds, self.metrics, self.stop, settings.runtime.holder_identity()
        )
        self.sleep_cap = sleep_cap
        self.worker: Worker | None = None
        self.threads: list[threading.Thread] = []
        self.writer_threads: list[threading.Thread] = []
        self.heartbeat = time.monotonic()  # while there is no worker (writing is off)

    def start(self, types: WorkloadTypes) -> Worker:
        """The worker, with an empty cache for `types`; one list+watch thread per kind, and the writers."""
        self.worker = Worker(
            self.settings,
            Cluster(self.settings.scoring, types),
            self.events,
            self.writes,
            self.metrics,
            may_write=self.may_write,
            stop=self.stop,
            notify=self.notices.post,
        )
        for kind in RESOURCES:
            if kind == "hypernodes" and self.settings.scoring.compaction_scope == "node":
                continue
            t = threading.Thread(target=self.watcher.reflector(kind).run, name=f"watch-{kind}", daemon=True)
            t.start()
            self.threads.append(t)
        self.writer_threads = self.writers.start()
        self.threads += self.writer_threads
        self.threads.append(self.notices.start())
        return self.worker

    def halt(self) -> None:
        """Set `stop` and wake the worker, the writers and the event poster, so that each returns
        now instead of at the end of its wait (a writer in a patch still finishes it)."""
        self.stop.set()
        self.events.put(Stopping())
        self.writes.close()
        self.notices.wake()

    def finish_writes(self, timeout: float = 10.0) -> bool:
        """Once stopped: wait up to `timeout` s for the writers to finish the patch each may be
        sending, so that a stop does not cut a write off mid-request and no writer runs (and
        logs) after `run` returned. A patch slower than that is left to its thread; the next
        start reads the pod again. The watch threads are not waited for: a watch request may
        block until its timeout, and they write nothing. True when every writer finished."""
        deadline = time.monotonic() + timeout
        for t in self.writer_threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.writer_threads)

    def healthy(self) -> bool:
        """Alive: the worker looped within a minute and every watch and writer thread still runs.
        A backlog is work, not a fault: the worker keeps looping while the writers drain it."""
        beat = self.worker.heartbeat if self.worker is not None else self.heartbeat
        return time.monotonic() - beat < 60 and all(t.is_alive() for t in self.threads)

    def clear(self) -> tuple[int, int]:
        """Remove the costs we wrote where our record still matches. Returns (patched, failed)."""
        pods = self.watcher.list_all("pods")
        return clear_costs(self.patcher, pods, self.settings, self.stop, self.sleep_cap)


def resolve_types(api_client: client.ApiClient, settings: ReconcileSettings) -> WorkloadTypes:
    """Third-party resource -> kind through discovery; a type the cluster does not serve is a
    warning, the others go on."""
    custom = client.CustomObjectsApi(api_client)
    kinds = []
    for group, version, resource in settings.scoring.third_party():
        entry = f"{group}/{version}/{resource}"
        try:
            body = json_body(custom.get_api_resources(group, version, _preload_content=False))
        except ApiException as exc:
            log.warning({"msg": "third-party type not served by the cluster; ignored", "type": entry, "status": exc.status})
            continue
        except Exception as exc:  # discovery must not stop the start
            log.warning({"msg": "cannot discover third-party type; ignored", "type": entry, "error": str(exc)})
            continue
        kind = next((r.get("kind") for r in body.get("resources") or () if r.get("name") == resource), None)
        if not kind:
            log.warning({"msg": "third-party type not served by the cluster; ignored", "type": entry})
            continue
        kinds.append((group, kind))
        log.info({"msg": "scoring third-party type", "type": entry, "kind": kind})
    return WorkloadTypes(kinds)


def api_client_for(settings: ReconcileSettings) -> client.ApiClient:
    """The shared loader with `--kubeconfig`; its failure is a start error naming the flag."""
    try:
        return load_api_client(settings.kube.kubeconfig)
    except KubeAccessError as exc:
        raise config.ConfigError(f"--kubeconfig: {exc}") from None


def preflight(api_client: client.ApiClient) -> None:
    """One small read of each kind the reconciler lists, before any thread starts.

    Once running, the reconciler backs off and retries forever, which is right for a blip but
    hides a reconciler that never had access: a missing RBAC grant or a wrong server address
    would show only as warnings in its log. Checked here, they stop the start with one line
    (`KubeAccessError`, exit 2) naming the refused verb and resource or the unreachable host."""
    core = client.CoreV1Api(api_client)
    host = str(getattr(api_client.configuration, "host", "") or "")
    checks: list[tuple[ApiCall, Callable[..., Any]]] = [(ApiCall("list", "nodes"), core.list_node), (ApiCall("list", "pods"), core.list_pod_for_all_namespaces)]
    for request, call in checks:
        try:
            call(limit=1, _preload_content=False, _request_timeout=10).release_conn()
        except (ApiException, HTTPError) as exc:
            raise KubeAccessError(describe_api_error(exc, request, host)) from exc


def run(settings: ReconcileSettings, api_client: client.ApiClient, stop: threading.Event, metrics: Metrics | None = None, *, clear: bool = False) -> int:
    """Everything `main` does after parsing, with the client and the stop signal injected."""
    metrics = metrics or Metrics()
    if clear:
        done, failed = Reconciler(settings, api_client, metrics, stop=stop).clear()
        log.info({"msg": "cleared costs we wrote", "pods": done, "failed": failed})
        return 0 if not failed else 1
    elector = None
    if settings.runtime.leader_elect:
        elector = LeaderElector(
            client.CoordinationV1Api(api_client),
            name=settings.runtime.lease_name,
            namespace=settings.runtime.lease_namespace,
            identity=settings.runtime.holder_identity(),
            lease_duration=settings.runtime.lease_duration_seconds,
            renew_deadline=settings.runtime.renew_deadline_seconds,
            retry_period=settings.runtime.retry_period_seconds,
        )
    may_write = elector.is_leader if elector else (lambda: True)
    rec = Reconciler(settings, api_client, metrics, may_write=may_write, stop=stop)
    server = serve_health(settings.runtime.health_host, settings.runtime.health_port, rec.healthy, metrics) if settings.runtime.health_port else None
    try:
        if not settings.scoring.enable_scale_in_score and not settings.runtime.dry_run:
            log.info({"msg": "enable-scale-in-score is off: writing nothing, existing costs stay"})
            while not stop.wait(1.0):
                rec.heartbeat = time.monotonic()
            return 0
        if elector:

            def changed(leading: bool) -> None:
                metrics.leader.set(1 if leading else 0)
                if leading:  # pods skipped while we were not leading get their turn now
                    rec.events.put(Resync())

            threading.Thread(target=elector.run, args=(stop, changed), name="lease", daemon=True).start()
        else:
            metrics.leader.set(1)
        rec.start(resolve_types(api_client, settings)).run()
        return 0
    finally:
        rec.halt()  # run() also returns on an error: the writers stop picking either way
        if not rec.finish_writes():
            log.warning({"msg": "stopping with a write still in flight"})
        if server:
            server.shutdown()
            server.server_close()


def _own_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clear", action="store_true", help="remove the costs we wrote (where our record still matches), then exit")


def main(argv: Sequence[str]) -> int:
    settings, args = config.parse_command(
        ReconcileSettings, argv, "python -m webhook reconcile", "write pod-deletion-cost so that scale-in compacts accelerators", extra=_own_arguments
    )
    logs.configure(settings.log.log_level)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    api_client = api_client_for(settings)
    if args.clear or settings.scoring.enable_scale_in_score or settings.runtime.dry_run:  # otherwise it reads nothing
        preflight(api_client)
    return run(settings, api_client, stop, clear=args.clear)
