"""The write queue on its own (webhook/scalein/reconcile/writequeue.py): which write goes next, one entry
per pod with its newest value, drops, and writes in flight. A fake clock, no threads."""

from __future__ import annotations

import threading

from webhook.scalein.reconcile.writequeue import WriteQueue


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def queue(share: int = 10) -> tuple[WriteQueue, Clock]:
    clock = Clock()
    return WriteQueue(clock, backlog_share=share), clock


def offer(q: WriteQueue, key: str, value: int, *, rv: str = "1", event_at: float | None = None) -> None:
    q.offer(key, value, {}, rv, "write", event_at=event_at)


def drain(q: WriteQueue) -> list[tuple[str, int]]:
    out = []
    while (e := q.pop()) is not None:
        out.append((e.key, e.value))
        q.finish(e.key)
    return out


def test_the_backlog_drains_lowest_cost_first_whatever_the_names():
    q, _ = queue()
    for key, value in [("a", -1), ("b", -500005), ("c", -3), ("d", -1000999), ("e", -500005)]:
        offer(q, key, value)
    assert drain(q) == [("d", -1000999), ("b", -500005), ("e", -500005), ("c", -3), ("a", -1)]


def test_costs_above_zero_drain_highest_first_and_farthest_from_zero_leads():
    """A pod not yet written counts as 0. Kthena's pods carry costs above 0 (costs.summed), so
    there the highest go first and the groups left unwritten are the cheapest; below 0 the lowest
    go first. Mixed, the cost farthest from 0 leads."""
    q, _ = queue()
    for key, value in [("k-low", 3), ("k-high", 1000999), ("k-mid", 500995)]:
        offer(q, key, value)
    assert [k for k, _ in drain(q)] == ["k-high", "k-mid", "k-low"]
    for key, value in [("k", 500995), ("r", -1000999), ("r2", -3), ("k2", 7)]:
        offer(q, key, value)
    assert [k for k, _ in drain(q)] == ["r", "k", "k2", "r2"]


def test_event_writes_go_ahead_of_the_backlog_first_come_first_served():
    q, clock = queue()
    for i in range(5):
        offer(q, f"backlog-{i}", -1000 - i)
    offer(q, "late-event", -1, event_at=clock.t + 2)
    offer(q, "early-event", -2, event_at=clock.t + 1)
    order = [k for k, _ in drain(q)]
    assert order[:2] == ["early-event", "late-event"]
    assert order[2:] == [f"backlog-{i}" for i in (4, 3, 2, 1, 0)]


def test_a_value_changed_while_queued_is_written_once_with_the_new_value():
    q, _ = queue()
    offer(q, "p", -500005)
    offer(q, "other", -400000)
    offer(q, "p", -1, rv="2")  # an event moved p's cost: one entry, the latest value, the new place
    assert q.size() == 2
    assert drain(q) == [("other", -400000), ("p", -1)]


def test_a_pod_that_no_longer_needs_a_write_is_dropped():
    q, _ = queue()
    offer(q, "p", -5)
    offer(q, "q", -4)
    assert q.discard("p") and not q.discard("p")
    assert drain(q) == [("q", -4)]
    assert q.idle()


def test_a_pod_waiting_in_the_backlog_keeps_its_lane_and_its_age_when_an_event_changes_it():
    q, clock = queue()
    offer(q, "waiting", -5)
    clock.t += 30
    offer(q, "new", -7, event_at=clock.t)
    offer(q, "waiting", -9, rv="2", event_at=clock.t)  # still waits in the backlog, at its new cost
    assert q.oldest_age() == 30.0
    assert [k for k, _ in drain(q)] == ["new", "waiting"]


def test_every_tenth_write_goes_to_the_backlog_while_events_wait():
    q, clock = queue(share=10)
    for i in range(3):
        offer(q, f"backlog-{i}", -i)
    for i in range(25):
        offer(q, f"event-{i:02d}", -1, event_at=clock.t + i)
    order = [k for k, _ in drain(q)]
    assert [i for i, k in enumerate(order) if k.startswith("backlog")] == [9, 19, 27]  # the last one: events ran out
    assert [k for k in order if k.startswith("event")] == [f"event-{i:02d}" for i in range(25)]


def test_an_offer_for_a_write_in_flight_waits_until_the_worker_offers_it_again():
    q, _ = queue()
    offer(q, "p", -5)
    sent = q.pop()
    assert sent is not None and q.is_in_flight("p")
    offer(q, "p", -5, rv="2")  # scored again before the answer came: built from the old pod
    assert q.pop() is None and q.size() == 1 and not q.idle()
    q.finish("p")  # the worker applied the answer ...
    assert q.pop() is None  # ... and the parked entry still waits for a fresh decision
    offer(q, "p", -6, rv="3")
    entry = q.pop()
    assert entry is not None and (entry.value, entry.resource_version) == (-6, "3")


def test_a_failed_write_kept_for_a_retry_keeps_its_lane():
    q, clock = queue()
    offer(q, "backlog", -1000)
    offer(q, "event", -1, event_at=clock.t)
    entry = q.pop()
    assert entry is not None and entry.key == "event"
    q.finish("event", keep=entry)  # failed: parked until its retry is due
    assert q.size() == 2 and [k for k, _ in drain(q)] == ["backlog"]
    offer(q, "event", -1)  # the retry: offered again without an event, still in the event lane
    offer(q, "backlog-2", -2000)
    assert [k for k, _ in drain(q)] == ["event", "backlog-2"]


def test_size_age_and_idle_for_the_gauges():
    q, clock = queue()
    assert (q.size(), q.oldest_age(), q.idle()) == (0, 0.0, True)
    offer(q, "a", -1)
    clock.t += 5
    offer(q, "b", -2)
    clock.t += 2
    assert (q.size(), q.oldest_age()) == (2, 7.0)
    entry = q.pop()
    assert entry is not None and entry.key == "b"
    assert (q.size(), q.oldest_age(), q.idle()) == (1, 7.0, False)


def test_wait_wakes_a_writer_when_a_write_is_offered():
    q, _ = queue()
    assert q.wait(0.01) is False
    woke = []
    t = threading.Thread(target=lambda: woke.append(q.wait(10)))
    t.start()
    offer(q, "p", -1)
    t.join(10)
    assert woke == [True]


def test_close_wakes_every_waiting_writer_and_hands_nothing_out():
    q, _ = queue()
    woke: list[bool] = []
    writers = [threading.Thread(target=lambda: woke.append(q.wait(30))) for _ in range(3)]
    for t in writers:
        t.start()
    q.close()
    for t in writers:
        t.join(5)
    assert woke == [False, False, False]  # each returned on close, long before its 30 s wait
    offer(q, "p", -1)
    assert q.wait(0) is False


def test_stale_heap_items_are_compacted():
    q, _ = queue()
    for round_ in range(5):
        for i in range(600):
            offer(q, f"p{i}", -i - round_, rv=str(round_))
    assert len(q._backlog) <= 2 * q.size() + 1024
    assert drain(q)[:2] == [("p599", -603), ("p598", -602)]
