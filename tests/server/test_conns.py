"""What the worker's loop keeps per connection (conns.py): deadlines and large-request slots."""

from __future__ import annotations

import time

from webhook.server.conns import Conn, Slots, Timers
from webhook.serving.limits import Limits

LIMITS = Limits(max_body=1024, max_buffered=2048)


def conn() -> Conn:
    return Conn(None, ("10.0.0.1", 1), ("10.0.0.2", 443), LIMITS)


def test_a_newer_deadline_replaces_the_older_and_the_heap_stays_bounded():
    """Each request sets a deadline of up to the keep-alive time: the replaced ones must not pile up
    (nor keep closed connections) for that long."""
    timers, kept = Timers(), conn()
    for _ in range(20_000):
        timers.set(kept, 120)
    assert len(timers.heap) < 2048
    timers.set(kept, 0)
    time.sleep(0.01)
    assert list(timers.due()) == [kept] and kept.timer == 0


def test_large_requests_take_slots_and_the_rest_wait():
    slots = Slots(LIMITS)  # read_budget // max_body = 2 slots
    first, second, third = conn(), conn(), conn()
    assert slots.take(first) and slots.take(second) and not slots.take(third)
    assert slots.take(first)  # holding one already
    slots.parked.append(third)
    assert list(slots.unparked()) == []
    slots.release(first)
    assert list(slots.unparked()) == [third] and slots.take(third)
