"""What the worker's loop keeps per connection (conns.py): large-request slots, and what a closed
connection leaves behind."""

from __future__ import annotations

import gc
import socket
import weakref
from collections import deque
from types import SimpleNamespace

from webhook.server.conns import Conn, Slots
from webhook.server.worker import WebhookWorker
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


def test_a_closed_connection_leaves_nothing_for_the_cyclic_collector():
    """A reader's parser calls the reader's methods: a reference cycle, which only the cyclic
    collector frees, and a connection held for seconds has reached its oldest generation, which an
    idle worker seldom collects (after a flood of idle connections the worker kept each closed
    one's parser). The worker's close breaks the cycle: the reader goes with the connection."""
    server_end, client_end = socket.socketpair()
    closed = Conn(server_end, ("10.0.0.1", 1), ("10.0.0.2", 443), LIMITS)
    fake = SimpleNamespace(selector=None, _listen=lambda on: None, slots=Slots(LIMITS), idle=0, conns={closed}, cfg=SimpleNamespace(worker_connections=10))
    reader = weakref.ref(closed.reader)
    gc.disable()
    try:
        WebhookWorker._close(fake, closed)
        assert not fake.conns
        del closed
        assert reader() is None
    finally:
        gc.enable()
        client_end.close()


def test_a_connection_holds_a_parser_only_once_a_request_has_begun():
    """Each parser costs a few KiB: thousands of connections that never send a request (a flood of
    silent clients) must not each hold one. It is made at the first byte and kept between requests."""
    silent = conn()
    assert silent.reader.parser is None
    silent.reader.feed(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert silent.reader.complete and silent.reader.parser is not None
    silent.reader.request()
    assert silent.reader.next() == b"" and silent.reader.parser is not None


def test_making_room_closes_the_longest_waiting_connection_without_a_request_under_way():
    """At worker_connections: one that never sent a request before a kept-alive one, the oldest
    first, and never one whose next (pipelined) request has already arrived."""
    never, older_never, kept, pipelined, new = conn(), conn(), conn(), conn(), conn()
    never.deadline, older_never.deadline, kept.deadline, pipelined.deadline, new.deadline = 20.0, 10.0, 5.0, 1.0, 30.0
    kept.idle = True
    closed: list[Conn] = []
    fake = SimpleNamespace(conns={never, older_never, kept, pipelined, new}, ready=deque([pipelined]), _close=closed.append)
    order = []
    for _ in range(3):
        assert WebhookWorker._make_room(fake, new)
        order.append(closed[-1])
        fake.conns.discard(closed[-1])
    assert order == [older_never, never, kept]
    assert not WebhookWorker._make_room(fake, new)  # only the pipelined one and the newcomer are left
