"""Leader election through a coordination.k8s.io/v1 Lease, with client-go's semantics: a lease is
expired when its record has not changed for leaseDurationSeconds *as observed by us* (our clock,
not the holder's renewTime, so clock skew cannot steal a lease); every write carries the
resourceVersion read, so two candidates can never both succeed (409 for the loser).

Here, in the edge to the API server, because two commands elect a leader with it: `reconcile`
(one writer of deletion costs) and `audit --every` (one writer of PolicyReports). Each names
its own Lease and logger."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable

from kubernetes import client
from kubernetes.client.exceptions import ApiException

_LOGGER = "servinggate.scalein.lease"  # the reconciler's; `audit` passes its own


def micro_now() -> dt.datetime:
    """Now, for a MicroTime field. The client serialises with isoformat(), which drops the
    fraction when it is zero; the API server parses RFC 3339 with 6 fraction digits."""
    now = dt.datetime.now(dt.UTC)
    return now if now.microsecond else now.replace(microsecond=1)


class LeaderElector:
    def __init__(
        self,
        api: client.CoordinationV1Api,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        clock: Callable[[], float] = time.monotonic,
        logger: str = _LOGGER,
    ):
        self.api, self.name, self.namespace, self.identity = api, name, namespace, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.clock = clock
        self.log = logging.getLogger(logger)
        self._observed: tuple | None = None  # (holder, renewTime, acquireTime, transitions, duration)
        self._observed_at = 0.0
        self._last_renew = float("-inf")  # when we last held a valid lease (clock())

    def is_leader(self) -> bool:
        """True only while our last successful renewal is within the renew deadline."""
        return self.clock() - self._last_renew < self.renew_deadline

    def try_acquire_or_renew(self) -> bool:
        """One round: create, renew or take over the lease. Never raises on API errors."""
        now_mono = self.clock()
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                self.log.warning({"msg": "cannot read lease", "status": exc.status, "lease": f"{self.namespace}/{self.name}"})
                return False
            return self._create(now_mono)
        spec = lease.spec or client.V1LeaseSpec()
        record = (spec.holder_identity, spec.renew_time, spec.acquire_time, spec.lease_transitions, spec.lease_duration_seconds)
        if record != self._observed:
            self._observed, self._observed_at = record, now_mono
        holder = spec.holder_identity or ""
        duration = spec.lease_duration_seconds or self.lease_duration
        if holder and holder != self.identity and now_mono < self._observed_at + duration:
            return False  # someone else holds a live lease
        now = micro_now()
        if holder != self.identity:
            spec.acquire_time = now
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
            if holder:
                self.log.info({"msg": "taking over expired lease", "previous": holder, "lease": f"{self.namespace}/{self.name}"})
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = int(self.lease_duration)
        spec.renew_time = now
        if spec.acquire_time is None:
            spec.acquire_time = now
        lease.spec = spec  # metadata keeps the resourceVersion we read: optimistic concurrency
        try:
            self.api.replace_namespaced_lease(self.name, self.namespace, lease)
        except ApiException as exc:
            if exc.status != 409:
                self.log.warning({"msg": "cannot update lease", "status": exc.status})
            return False
        self._last_renew = now_mono
        self._observed = None
        return True

    def _create(self, now_mono: float) -> bool:
        now = micro_now()
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
            spec=client.V1LeaseSpec(
                holder_identity=self.identity, lease_duration_seconds=int(self.lease_duration), acquire_time=now, renew_time=now, lease_transitions=0
            ),
        )
        try:
            self.api.create_namespaced_lease(self.namespace, body)
        except ApiException as exc:
            if exc.status != 409:  # 409: another candidate created it first
                self.log.warning({"msg": "cannot create lease", "status": exc.status})
            return False
        self._last_renew = now_mono
        return True

    def release(self) -> None:
        """Give the lease up on shutdown (as client-go's ReleaseOnCancel): empty holder, so the
        next candidate need not wait for expiry."""
        if not self.is_leader():
            return
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = None
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = micro_now()
            self.api.replace_namespaced_lease(self.name, self.namespace, lease)
        except ApiException as exc:
            self.log.warning({"msg": "cannot release lease", "status": exc.status})
        self._last_renew = float("-inf")

    def run(self, stop: threading.Event, on_change: Callable[[bool], None] | None = None) -> None:
        """Campaign and renew every retry period until `stop`; report leadership changes."""
        was = False
        while not stop.is_set():
            self.try_acquire_or_renew()
            now = self.is_leader()
            if now != was:
                self.log.info({"msg": "leading" if now else "not leading", "identity": self.identity})
                if on_change:
                    on_change(now)
                was = now
            stop.wait(self.retry_period)
        self.release()
        if was and on_change:
            on_change(False)


def elector_for(
    api_client: client.ApiClient,
    *,
    name: str,
    namespace: str,
    identity: str,
    logger: str,
    lease_duration: float = 15,
    renew_deadline: float = 10,
    retry_period: float = 2,
) -> LeaderElector:
    """An elector on `api_client`, with client-go's default timings unless given: for commands
    that keep no API objects of their own (`audit`)."""
    return LeaderElector(
        client.CoordinationV1Api(api_client),
        name=name,
        namespace=namespace,
        identity=identity,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        logger=logger,
    )
