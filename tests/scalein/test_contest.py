"""Never fight another writer: the worker stepped by hand on a fake clock, the test playing the
watchers, the writers and a foreign controller that rewrites one pod's cost every second."""

from __future__ import annotations

import copy
import queue

import pytest

from webhook.config import compose
from webhook.scalein.cluster import Cluster, WorkloadTypes
from webhook.scalein.reconcile.contest import BACKING_OFF, CONTESTED, OVERWRITE, Contests
from webhook.scalein.reconcile.events import Answered, Changed, Event, Listed
from webhook.scalein.reconcile.health import Metrics
from webhook.scalein.reconcile.patching import PatchResult
from webhook.scalein.reconcile.worker import Worker
from webhook.scalein.reconcile.writequeue import WriteQueue
from webhook.scalein.reconcile.writing import WriteAttempt
from webhook.scalein.settings import COST_KEY, RECORD_KEY, ReconcileSettings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class World:
    """The API server's pods, a worker on a fake clock, and what it wrote and told."""

    def __init__(self, s1: dict, **kw) -> None:
        base = dict(enable_scale_in_score=True, health_port=0, resync_seconds=0)
        self.settings = compose(ReconcileSettings, **{**base, **kw})
        self.clock = Clock()
        self.events: queue.Queue[Event] = queue.Queue()
        self.writes = WriteQueue(clock=self.clock)
        self.metrics = Metrics()
        self.told: list[tuple[str, int, str | None]] = []
        self.worker = Worker(
            self.settings,
            Cluster(self.settings.scoring, WorkloadTypes()),
            self.events,
            self.writes,
            self.metrics,
            notify=lambda pod, want, current: self.told.append((pod.key, want, current)),
            clock=self.clock,
        )
        self.pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in copy.deepcopy(s1["pods"]["items"])}
        self.rv = 100
        self.sent: dict[str, int] = {}
        self.events.put(Listed("nodes", s1["nodes"]["items"]))
        self.events.put(Listed("hypernodes", []))
        self.events.put(Listed("pods", copy.deepcopy(list(self.pods.values()))))
        self.settle()

    def _bump(self, key: str) -> dict:
        self.rv += 1
        self.pods[key]["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.pods[key])

    def settle(self) -> None:
        """Step the worker and play the writers until nothing is left to send."""
        for _ in range(20):
            self.worker.turn(0)
            entry = self.writes.pop()
            if entry is None:
                self.worker.turn(0)
                if self.writes.idle() and self.events.empty():
                    return
                continue
            while entry is not None:
                self.sent[entry.key] = self.sent.get(entry.key, 0) + 1
                meta = self.pods[entry.key]["metadata"]
                ann = meta.get("annotations") or {}
                expected = entry.annotations or {}
                if ann.get(COST_KEY) != expected.get(COST_KEY) or ann.get(RECORD_KEY) != expected.get(RECORD_KEY):
                    # the patch's `test` fails; the writer reads the pod again
                    fresh = PatchResult("found", pod=copy.deepcopy(self.pods[entry.key]))
                    self.events.put(Answered(WriteAttempt(entry, PatchResult("changed", code=422), fresh)))
                else:
                    meta["annotations"] = {**ann, COST_KEY: str(entry.value), RECORD_KEY: str(entry.value)}
                    written = self._bump(entry.key)
                    self.events.put(Answered(WriteAttempt(entry, PatchResult("written", pod=written))))
                    self.events.put(Changed("MODIFIED", "pods", copy.deepcopy(written)))  # the watch brings it too
                entry = self.writes.pop()
        raise AssertionError("did not settle")

    def foreign_write(self, key: str, value: str) -> None:
        """Another controller sets the cost (and leaves our record annotation as it is)."""
        meta = self.pods[key]["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), COST_KEY: value}
        self.events.put(Changed("MODIFIED", "pods", self._bump(key)))

    def gauge(self) -> float:
        return self.metrics.registry.get_sample_value("servinggate_scalein_contested_pods") or 0.0


@pytest.fixture
def world(s1):
    return lambda **kw: World(s1, **kw)


def victim(w: World) -> str:
    return sorted(k for k, p in w.pods.items() if p["spec"]["nodeName"] == "node-b")[0]


def test_a_writer_flipping_a_cost_every_second_for_five_minutes_gets_at_most_two_writes(world):
    w = world()
    key = victim(w)
    assert w.sent[key] == 1  # the first write of our cost
    first = dict(w.sent)
    for second in range(1, 301):
        w.clock.now += 1
        w.foreign_write(key, str(-7 - second % 2))
        w.settle()
    assert w.sent[key] == 2  # the first write, and one overwrite
    assert {k: n for k, n in w.sent.items() if k != key} == {k: n for k, n in first.items() if k != key}
    assert w.told == [(key, -500005, "-7")]  # one Event, naming the value we wanted
    assert w.gauge() == 1
    assert w.pods[key]["metadata"]["annotations"][COST_KEY] == "-7"  # theirs, left alone
    assert w.metrics.registry.get_sample_value("servinggate_scalein_skips_total", {"reason": "contested"}) >= 299


def test_after_the_window_the_pod_is_overwritten_once_more(world):
    w = world(contest_backoff_seconds=600)
    key = victim(w)
    w.foreign_write(key, "-9")
    w.settle()
    w.foreign_write(key, "-8")
    w.settle()
    assert w.sent[key] == 2 and len(w.told) == 1 and w.gauge() == 1
    w.clock.now += 601
    w.foreign_write(key, "-7")
    w.settle()
    assert w.sent[key] == 3  # the window passed: one more overwrite
    assert w.pods[key]["metadata"]["annotations"][COST_KEY] == "-500005"
    assert w.gauge() == 0


def test_a_writer_that_changes_once_is_overwritten_and_never_contested(world):
    w = world()
    key = victim(w)
    w.foreign_write(key, "-3")
    w.settle()
    w.clock.now += 5
    w.settle()
    assert w.sent[key] == 2 and w.told == [] and w.gauge() == 0
    assert w.pods[key]["metadata"]["annotations"][COST_KEY] == "-500005"


def test_priority_wl_never_overwrites_so_nothing_is_contested(world):
    w = world(scale_in_priority="wl")
    key = victim(w)
    for second in range(1, 30):
        w.clock.now += 1
        w.foreign_write(key, str(-second))
        w.settle()
    assert w.sent[key] == 1 and w.told == [] and w.gauge() == 0


def test_someone_copying_our_record_too_is_still_another_writer(world):
    w = world()
    key = victim(w)
    for value in ("-4", "-6"):
        meta = w.pods[key]["metadata"]
        meta["annotations"] = {**meta["annotations"], COST_KEY: value, RECORD_KEY: value}
        w.events.put(Changed("MODIFIED", "pods", w._bump(key)))
        w.settle()
    assert w.sent[key] == 2 and len(w.told) == 1


def test_contests_alone():
    now = [0.0]
    c = Contests(100, lambda: now[0])
    c.wrote("a/p", -5, overwrite=False)
    assert not c.foreign("a/p", "-5") and c.foreign("a/p", "-6") and not c.foreign("a/q", "-6")
    assert c.on_foreign("a/p") == OVERWRITE
    c.wrote("a/p", -5, overwrite=True)
    now[0] = 99
    assert c.on_foreign("a/p") == CONTESTED and c.contested["a/p"] > now[0] and c.active() == 1
    now[0] = 198
    assert c.on_foreign("a/p") == BACKING_OFF
    now[0] = 199.5
    assert c.on_foreign("a/p") == OVERWRITE and c.active() == 0
    c.forget("a/p")
    assert not c.foreign("a/p", "-6")


class RefusingCore:
    def __init__(self, status: int) -> None:
        self.status, self.bodies = status, []

    def create_namespaced_event(self, namespace, body, **kw):
        from kubernetes.client.exceptions import ApiException

        self.bodies.append((namespace, body))
        if self.status:
            raise ApiException(status=self.status, reason="Forbidden")


def test_the_event_names_the_value_we_wanted_and_a_refusal_is_logged_once(s1, caplog):
    import threading

    from webhook.scalein.accounting import AcceleratorMatcher
    from webhook.scalein.cluster import pod_view
    from webhook.scalein.reconcile.notices import REASON, EventPoster

    pod = pod_view(s1["pods"]["items"][0], AcceleratorMatcher(["huawei.com/Ascend910*"]))
    metrics = Metrics()
    ok = RefusingCore(0)
    poster = EventPoster(ok, COST_KEY, 3600, metrics, threading.Event(), "me")
    poster.post(pod, -500005, "-7")
    assert poster.send(poster.queue.get_nowait())
    ns, body = ok.bodies[0]
    assert ns == pod.namespace and body["reason"] == REASON and body["type"] == "Warning"
    assert body["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
        "resourceVersion": pod.resource_version,
    }
    assert "wanted -500005" in body["message"] and "'-7'" in body["message"] and body["reportingInstance"] == "me"

    refusing = RefusingCore(403)
    poster = EventPoster(refusing, COST_KEY, 3600, metrics, threading.Event())
    for _ in range(3):
        poster.post(pod, -1, "-2")
        assert not poster.send(poster.queue.get_nowait())
    assert len(refusing.bodies) == 3
    assert sum("cannot post Events" in r.getMessage() for r in caplog.records) == 1
    assert metrics.registry.get_sample_value("servinggate_scalein_errors_total", {"op": "event", "code": "403"}) == 3


def test_a_relist_forgets_the_pods_that_are_gone():
    c = Contests(100, lambda: 0.0)
    for key in ("a/p", "a/q"):
        c.wrote(key, -5, overwrite=True)
        assert c.on_foreign(key) == CONTESTED
    c.keep_only({"a/q": object()})
    assert not c.foreign("a/p", "-1") and c.foreign("a/q", "-1") and c.active() == 1


def test_the_event_name_stays_within_253_characters_for_the_longest_pod_name(s1):
    import datetime as dt

    from webhook.scalein.accounting import AcceleratorMatcher
    from webhook.scalein.cluster import pod_view
    from webhook.scalein.reconcile.notices import contested_event

    raw = copy.deepcopy(s1["pods"]["items"][0])
    raw["metadata"]["name"] = "p" * 253
    body = contested_event(pod_view(raw, AcceleratorMatcher(["x"])), COST_KEY, -1, "-2", 60, dt.datetime(2026, 1, 1))
    assert len(body["metadata"]["name"]) == 253 and body["involvedObject"]["name"] == "p" * 253
    assert body["metadata"]["namespace"] == body["involvedObject"]["namespace"]  # the API server requires it


def test_a_replica_that_stopped_leading_never_declares_a_contest(world):
    w = world()
    key = victim(w)
    w.foreign_write(key, "-9")
    w.settle()  # overwritten once, while leading
    w.worker.may_write = lambda: False
    for value in ("-8", "-7"):
        w.foreign_write(key, value)
        w.settle()
    assert w.told == [] and w.gauge() == 0 and w.sent[key] == 2
