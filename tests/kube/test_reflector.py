"""The one reflector (webhook/kube/reflector.py) on its own, against the fake API server: paged
lists one page at a time, events after the list, absence told once, relist on 410 Gone, the
backoff policy and the metrics every command exports for it."""

from __future__ import annotations

import functools
import threading

import prometheus_client as prom
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from support import wait_for

from webhook.kube import ApiCall, KubeAccessError
from webhook.kube.reflector import MAX_BACKOFF, Backoff, ListWatch, NotServed, Reconnects, Reflector, ReflectorMetrics, pages, read


def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def nodes_lw(api) -> ListWatch:
    core = client.CoreV1Api(api.client())
    return ListWatch(ApiCall("list", "nodes"), core.list_node, functools.partial(core.list_node, watch=True))


def custom_lw(api, group: str, plural: str) -> ListWatch:
    listing = functools.partial(client.CustomObjectsApi(api.client()).list_cluster_custom_object, group, "v1", plural)
    return ListWatch(ApiCall("list", plural, group=group), listing, functools.partial(listing, watch=True))


class Recorder:
    """A Sink that remembers what it was told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple] = []

    def replace(self, items) -> None:
        self.told.append(("replace", sorted(i["metadata"]["name"] for i in items)))

    def apply(self, event, obj) -> None:
        self.told.append((event, (obj.get("metadata") or {}).get("name")))

    def absent(self, status) -> None:
        self.told.append(("absent", status))

    def health(self, trouble) -> None:
        self.told.append(("health", trouble))

    def of(self, what: str) -> list[tuple]:
        return [t for t in self.told if t[0] == what]


@pytest.fixture
def reflect(fake_api):
    """`reflect(lw, sink, **options)` runs a Reflector on a thread, stopped at the end (its watch
    against `fake_api` ended, so the thread need not wait out the stream's timeout)."""
    stop = threading.Event()
    threads = []

    def start(lw, sink, **options):
        reflector = Reflector(lw, sink, stop=stop, watch_timeout=1, **options)
        thread = threading.Thread(target=reflector.run, daemon=True)
        thread.start()
        threads.append(thread)
        return reflector

    yield start
    stop.set()
    fake_api.end_watches()
    for t in threads:
        t.join(10)


def test_a_list_comes_in_pages_and_only_the_last_one_carries_the_resource_version(fake_api):
    fake_api.load(nodes=[node(f"n{i}") for i in range(5)])
    got = list(pages(nodes_lw(fake_api), page_size=2))
    assert [len(p.items) for p in got] == [2, 2, 1]
    assert [p.last for p in got] == [False, False, True]
    assert [bool(p.resource_version) for p in got] == [False, False, True]
    assert [c.query.get("limit") for c in fake_api.calls("GET", "/api/v1/nodes$")] == ["2", "2", "2"]


def test_pages_are_fetched_as_they_are_read_not_ahead(fake_api):
    fake_api.load(nodes=[node(f"n{i}") for i in range(5)])
    reading = pages(nodes_lw(fake_api), page_size=2)
    next(reading)
    assert len(fake_api.calls("GET", "/api/v1/nodes$")) == 1  # one page held, the next not asked yet
    reading.close()


def test_read_says_not_served_for_a_missing_kind_and_one_line_for_other_failures(fake_api):
    with pytest.raises(NotServed):
        list(read(custom_lw(fake_api, "example.com", "widgets")))
    fake_api.fault("GET", "/api/v1/nodes", 403)
    with pytest.raises(KubeAccessError, match=r"^forbidden: cannot list nodes at cluster scope"):
        list(read(nodes_lw(fake_api)))


def widget(name: str) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}


def test_the_sink_hears_the_list_before_any_event_and_the_list_s_bookmark(fake_api, reflect):
    for name in ("a", "b"):
        fake_api.add_custom(widget(name), "widgets")
    sink = Recorder()
    reflect(custom_lw(fake_api, "example.com", "widgets"), sink)
    wait_for(lambda: sink.of("BOOKMARK"), timeout=5)
    fake_api.add_custom(widget("c"), "widgets")
    wait_for(lambda: ("ADDED", "c") in sink.told, timeout=5)
    assert sink.told[0] == ("replace", ["a", "b"])
    assert sink.told.index(("BOOKMARK", None)) < sink.told.index(("ADDED", "c"))


def test_a_kind_not_served_is_told_once_and_asked_for_again(fake_api, reflect):
    sink = Recorder()
    reflect(custom_lw(fake_api, "example.com", "widgets"), sink, absent_retry=0.05)
    wait_for(lambda: len(fake_api.calls("GET", "/widgets$")) >= 3, timeout=5)
    assert sink.of("absent") == [("absent", 404)]
    fake_api.install_custom("example.com", "widgets")  # the CRD is installed later: noticed
    wait_for(lambda: sink.of("replace"), timeout=5)


def test_a_list_answered_410_gone_lists_again_at_once_and_is_no_failure(fake_api, reflect):
    fake_api.load(nodes=[node(f"n{i}") for i in range(3)])
    fake_api.fault("GET", "/api/v1/nodes", 410, watch=False)
    sink = Recorder()
    metrics = ReflectorMetrics(prom.CollectorRegistry())
    reflect(nodes_lw(fake_api), sink, metrics=metrics)
    wait_for(lambda: sink.of("replace"), timeout=5)
    assert sink.of("replace") == [("replace", ["n0", "n1", "n2"])]
    assert metrics.errors.labels("nodes", "410")._value.get() == 0  # expired is no failure


def test_failures_back_off_are_counted_and_told_then_cleared(fake_api, reflect):
    fake_api.fault("GET", "/api/v1/nodes", 503, watch=False, times=2)
    sink = Recorder()
    registry = prom.CollectorRegistry()
    reflect(nodes_lw(fake_api), sink, metrics=ReflectorMetrics(registry), backoff=Backoff(cap=0.05))
    wait_for(lambda: sink.of("replace"), timeout=5)
    assert registry.get_sample_value("servinggate_listwatch_errors_total", {"resource": "nodes", "code": "503"}) == 2
    assert registry.get_sample_value("servinggate_listwatch_lists_total", {"resource": "nodes"}) == 1
    assert registry.get_sample_value("servinggate_listwatch_backoff_seconds", {"resource": "nodes"}) == 0
    troubles = [t for _, t in sink.of("health")]
    assert troubles[0].startswith("API server error 503") and troubles[2] == ""


def test_the_backoff_doubles_to_its_ceiling_resets_and_honours_retry_after():
    backoff = Backoff(rand=lambda: 0.0)
    waits = [backoff.failed(OSError()) for _ in range(8)]
    assert waits == [1, 2, 4, 8, 16, 32, MAX_BACKOFF, MAX_BACKOFF]
    assert backoff.succeeded() is True and backoff.succeeded() is False
    assert backoff.failed(OSError()) == 1
    throttled = ApiException(status=429)
    throttled.headers = {"Retry-After": "7"}
    assert Backoff(rand=lambda: 0.9).failed(throttled) == 7  # asked for: no jitter
    assert Backoff(cap=0.5).failed(throttled) == 0.5


def test_the_backoff_adds_up_to_half_again_at_random():
    longest = Backoff(rand=lambda: 1.0)
    assert [longest.failed(OSError()) for _ in range(8)][-3:] == [48, MAX_BACKOFF * 1.5, MAX_BACKOFF * 1.5]
    firsts = {Backoff().failed(OSError()) for _ in range(50)}
    assert len(firsts) > 1 and all(1 <= w < 1.5 for w in firsts)  # reflectors failing together part


def test_reconnects_are_told_once_per_outage():
    heard: list[int] = []
    reconnects = Reconnects(lambda: heard.append(1))
    reconnects.answered()
    reconnects.answered()
    reconnects.failed()
    reconnects.failed()
    reconnects.answered()
    assert heard == [1, 1]
