"""The worker alone: handed its queue, cache and write queue, no API client and no fake API
server. The test plays the watchers (it puts events) and the writers (it pops writes and answers)."""

from __future__ import annotations

import copy
import queue
import threading
import time

import pytest
from support import wait_for

from webhook.config import compose
from webhook.scalein.cluster import Cluster, WorkloadTypes
from webhook.scalein.reconcile import settling
from webhook.scalein.reconcile.events import Answered, Changed, Event, Listed, Resync, Stopping
from webhook.scalein.reconcile.health import Metrics
from webhook.scalein.reconcile.patching import PatchResult
from webhook.scalein.reconcile.worker import Worker
from webhook.scalein.reconcile.writequeue import WriteQueue
from webhook.scalein.reconcile.writing import WriteAttempt
from webhook.scalein.settings import COST_KEY, RECORD_KEY, ReconcileSettings

NODE_B = -500005  # S1: node-b 4/8 used, one NPU per pod -> 5 idle after removal
NODE_A = -1  # S1: node-a full


class Harness:
    def __init__(self, **kw) -> None:
        base = dict(enable_scale_in_score=True, health_port=0, resync_seconds=0)
        self.settings = compose(ReconcileSettings, **{**base, **kw})
        self.events: queue.Queue[Event] = queue.Queue()
        self.writes = WriteQueue()
        self.metrics = Metrics()
        self.stop = threading.Event()
        self.worker = Worker(self.settings, Cluster(self.settings.scoring, WorkloadTypes()), self.events, self.writes, self.metrics, stop=self.stop)
        self.thread = threading.Thread(target=self.worker.run, daemon=True)
        self.events.put(Listed("hypernodes", []))  # a cluster without HyperNodes

    def queued(self) -> dict[str, int]:
        with self.writes.cond:
            return {k: e.value for k, e in self.writes.entries.items()}

    def answer_all(self, pods: dict[str, dict]) -> int:
        """Play the writers: take every write handed out and answer that the server applied it."""
        answered = 0
        while (entry := self.writes.pop()) is not None:
            written = copy.deepcopy(pods[entry.key])
            meta = written["metadata"]
            meta["annotations"] = {**(meta.get("annotations") or {}), COST_KEY: str(entry.value), RECORD_KEY: str(entry.value)}
            meta["resourceVersion"] = meta.get("resourceVersion", "1") + "0"
            self.events.put(Answered(WriteAttempt(entry, PatchResult("written", pod=written))))
            answered += 1
        return answered


@pytest.fixture
def harness():
    made: list[Harness] = []

    def make(**kw) -> Harness:
        made.append(Harness(**kw))
        made[-1].thread.start()
        return made[-1]

    yield make
    for h in made:
        h.stop.set()
        h.events.put(Stopping())  # as Reconciler.halt() does: the loop sees `stop` now
        h.thread.join(10)


def by_node(s1) -> dict[str, int]:
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": NODE_B if p["spec"]["nodeName"] == "node-b" else NODE_A for p in s1["pods"]["items"]}


def test_listed_nodes_and_pods_queue_one_write_per_scored_pod(s1, harness, waiter):
    h = harness()
    h.events.put(Listed("pods", s1["pods"]["items"]))
    assert not h.queued()  # nothing is decided before both lists are in
    h.events.put(Listed("nodes", s1["nodes"]["items"]))
    want = by_node(s1)
    waiter(lambda: h.queued() == want, what="S1 costs queued")
    assert h.worker.synced == {"nodes": True, "pods": True, "hypernodes": True}


def test_a_written_answer_settles_the_pod_and_a_pod_event_rescores_only_its_node(s1, harness, waiter):
    h = harness()
    pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in s1["pods"]["items"]}
    h.events.put(Listed("nodes", s1["nodes"]["items"]))
    h.events.put(Listed("pods", list(pods.values())))
    want = by_node(s1)
    waiter(lambda: h.queued() == want, what="S1 costs queued")
    assert h.answer_all(pods) == len(want)
    waiter(lambda: h.writes.idle() and h.worker.written == len(want), what="every write answered")

    on_b = sorted(k for k, p in pods.items() if p["spec"]["nodeName"] == "node-b")
    victim, rest = on_b[0], on_b[1:]
    h.events.put(Changed("DELETED", "pods", pods[victim]))
    # node-b: 3/8 used -> level 375, idle after removal 6; node-a is not touched
    waiter(lambda: h.queued() == {k: -625006 for k in rest}, what="node-b re-scored")


def test_a_resync_offers_again_what_was_skipped(s1, harness, waiter):
    leading = threading.Event()
    h = harness()
    h.worker.may_write = leading.is_set
    h.events.put(Listed("nodes", s1["nodes"]["items"]))
    h.events.put(Listed("pods", s1["pods"]["items"]))
    waiter(
        lambda: (h.metrics.registry.get_sample_value("servinggate_scalein_skips_total", {"reason": "not-leader"}) or 0) >= len(s1["pods"]["items"]),
        what="skipped while not leading",
    )
    assert not h.queued()
    leading.set()
    h.events.put(Resync())
    waiter(lambda: h.queued() == by_node(s1), what="queued once leading")


def test_a_malformed_event_is_counted_and_skipped(s1, harness, waiter):
    h = harness()
    h.events.put(Listed("nodes", s1["nodes"]["items"]))
    h.events.put(Listed("pods", s1["pods"]["items"]))
    h.events.put(Changed("MODIFIED", "pods", {"metadata": "not an object"}))
    waiter(lambda: h.queued() == by_node(s1), what="S1 costs queued despite the bad event")
    assert h.metrics.registry.get_sample_value("servinggate_scalein_errors_total", {"op": "event", "code": "0"}) == 1


# ---- a ServingGroup Kthena is deleting -----------------------------------------------------------


def settled_s2(h: Harness, s2) -> dict[str, dict]:
    """S2 listed and every first cost written and answered: the pods by key, as the cache holds them."""
    pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in s2["pods"]["items"]}
    h.events.put(Listed("nodes", s2["nodes"]["items"]))
    h.events.put(Listed("pods", list(pods.values())))
    want = wait_for(lambda: (q := h.queued()) and len(q) == len(pods) and q, what="S2 costs queued")
    n = h.answer_all(pods)
    wait_for(lambda: h.writes.idle() and h.worker.written == n, what="every write answered")
    for key, value in want.items():  # the watch brings our writes back
        meta = (pod := copy.deepcopy(pods[key]))["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), COST_KEY: str(value), RECORD_KEY: str(value)}
        meta["resourceVersion"] += "0"
        pods[key] = pod
        h.events.put(Changed("MODIFIED", "pods", pod))
    return pods


def deleting(pod: dict) -> dict:
    """The pod as the watch shows it once a delete reached it (a grace period, not gone yet)."""
    out = copy.deepcopy(pod)
    out["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    out["metadata"]["resourceVersion"] = out["metadata"]["resourceVersion"] + "9"
    return out


def settling_skips(h: Harness) -> float:
    return h.metrics.registry.get_sample_value("servinggate_scalein_skips_total", {"reason": "settling"}) or 0


def test_a_group_mate_of_a_pod_being_deleted_is_written_once_the_group_settles(s2, harness, monkeypatch):
    """Kthena deletes a ServingGroup's pods with one DeleteCollection: a cost written to a
    group-mate before the collection reaches it makes Kthena 3cc05728 take the group for Running
    again (scalein/reconcile/settling.py). The other pods of the node are written at once."""
    monkeypatch.setattr(settling, "SETTLE_SECONDS", 0.3)
    h = harness()
    pods = settled_s2(h, s2)
    h.events.put(Changed("MODIFIED", "pods", deleting(pods["default/sample-0-prefill-0-0"])))
    wait_for(lambda: settling_skips(h) >= 1, what="the group-mate held")
    fillers = {k for k, p in pods.items() if p["spec"]["nodeName"] == "n1" and "filler" in k}
    wait_for(lambda: fillers <= set(h.queued()), what="n1's other pods queued at once")
    assert "default/sample-0-decode-0-0" not in h.queued()
    wait_for(lambda: "default/sample-0-decode-0-0" in h.queued(), what="the group-mate queued once the group settled")
    before = int(pods["default/sample-0-decode-0-0"]["metadata"]["annotations"][COST_KEY])
    assert h.queued()["default/sample-0-decode-0-0"] != before  # n1 now has 2 of its 8 NPUs idle


def test_group_mates_the_same_deletion_reaches_are_never_written(s2, harness, monkeypatch):
    monkeypatch.setattr(settling, "SETTLE_SECONDS", 0.3)
    h = harness()
    pods = settled_s2(h, s2)
    h.events.put(Changed("MODIFIED", "pods", deleting(pods["default/sample-1-prefill-0-0"])))
    wait_for(lambda: settling_skips(h) >= 1, what="the group-mate held")
    h.events.put(Changed("MODIFIED", "pods", deleting(pods["default/sample-1-decode-0-0"])))
    wait_for(lambda: not h.worker.settling.deferred, what="the held write due")
    time.sleep(0.2)  # the worker scores n3 again in the turn that took it
    assert not {k for k in h.queued() if k.startswith("default/sample-1-")}
