"""The reconciler tests' shared fixture: a Reconciler (the pieces wired to the API client) whose
worker runs on its own thread against the fake API server (tests/fakes/apiserver.py), stopped
when the test ends."""

from __future__ import annotations

import threading

import pytest
from fakes.apiserver import FakeAPI

from webhook.scalein.reconcile import reconciling
from webhook.scalein.settings import ReconcileSettings


class Running:
    """A reconciler on its own thread, stopped at the end of the test."""

    def __init__(self, s: ReconcileSettings, api_client, **kw):
        self.stop = threading.Event()
        self.metrics = reconciling.Metrics()
        self.api_client = api_client
        self.rec = reconciling.Reconciler(s, api_client, self.metrics, stop=self.stop, sleep_cap=0.2, **kw)
        self.worker = self.rec.start(reconciling.resolve_types(api_client, s))
        self.thread = threading.Thread(target=self.worker.run, daemon=True)
        self.thread.start()

    def sample(self, name: str, labels: dict | None = None) -> float:
        return self.metrics.registry.get_sample_value(name, labels or {}) or 0.0

    def close(self):
        self.rec.halt()
        fake = FakeAPI.of(self.api_client)
        if fake is not None:
            fake.end_watches()  # the watch threads see `stop` once their stream ends
        self.thread.join(10)
        for t in self.rec.threads:
            t.join(10)


@pytest.fixture
def running():
    """`running(settings, api_client, **kw)` -> Running; every one is stopped at the end."""
    started = []

    def start(s, api_client, **kw):
        r = Running(s, api_client, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()
