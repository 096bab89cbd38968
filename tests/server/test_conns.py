"""What the worker's loop keeps per connection (conns.py): large-request slots."""

from __future__ import annotations

from webhook.server.conns import Conn, Slots
from webhook.serving.limits import Limits

LIMITS = Limits(max_body=1024, max_buffered=2048)


def conn() -> Conn:
    return Conn(None, ("10.0.0.1", 1), ("10.0.0.2", 443), LIMITS)


def test_large_requests_take_slots_and_the_rest_wait():
    slots = Slots(LIMITS)  # read_budget // max_body = 2 slots
    first, second, third = conn(), conn(), conn()
    assert slots.take(first) and slots.take(second) and not slots.take(third)
    assert slots.take(first)  # holding one already
    slots.parked.append(third)
    assert list(slots.unparked()) == []
    slots.release(first)
    assert list(slots.unparked()) == [third] and slots.take(third)
