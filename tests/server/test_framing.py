"""The request scanner the worker's event loop runs."""

from __future__ import annotations

import pytest

from webhook.server import answering
from webhook.server.answering import status_answer
from webhook.server.framing import COMPLETE, DISPATCH, MORE, REFUSE, RequestScanner
from webhook.server.gunicorn_adapter import SERVER

HEAD = b"POST /validate HTTP/1.1\r\nHost: x\r\n"


def scan_growing(raw: bytes, max_body: int = 1000, step: int = 7):
    """Feed the bytes a few at a time, as a slow client would; return every verdict."""
    scanner, buf, verdicts = RequestScanner(4096, max_body), bytearray(), []
    for i in range(0, len(raw), step):
        buf += raw[i : i + step]
        verdicts.append(scanner.scan(buf))
        if verdicts[-1].kind != MORE:
            break
    return verdicts


def test_a_request_with_a_length_is_complete_exactly_at_its_end():
    raw = HEAD + b"Content-Length: 5\r\n\r\nhello"
    verdicts = scan_growing(raw + b"GET /next", step=1)
    assert [v.kind for v in verdicts[:-1]] == [MORE] * (len(raw) - 1)
    assert verdicts[-1].kind == COMPLETE and verdicts[-1].end == len(raw)


def test_chunked_bodies_end_after_the_last_chunk_and_trailers():
    body = b"Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n"
    last = scan_growing(HEAD + body)[-1]
    assert last.kind == COMPLETE and last.end == len(HEAD + body)
    plain = HEAD + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    assert scan_growing(plain)[-1].end == len(plain)


@pytest.mark.parametrize(
    "tail, code, needle",
    [
        (b"zz\r\nab\r\n0\r\n\r\n", 400, "invalid chunk size"),
        (b"ffffffffffffffffffff\r\nab\r\n0\r\n\r\n", 413, "exceeds the limit of 1000 bytes"),
        (b"3e9\r\n", 413, "exceeds the limit"),  # 1001 bytes announced: refused before they arrive
        (b"2\r\nabcd\r\n", 400, "not followed by CRLF"),
        (b"1" * 5000, 400, "chunk-size line too long"),
        (b"1\r\na\r\n" * 1001, 413, "exceeds the limit"),
        ((b"1;a=" + b"b" * 4000 + b"\r\na\r\n") * 20, 413, "exceeds the limit"),  # 20 bytes, 80 KB of framing
    ],
)
def test_chunked_framing_refused(tail, code, needle):
    last = scan_growing(HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + tail, max_body=1000, step=64)[-1]
    assert (last.kind, last.code) == (REFUSE, code) and needle in last.message


def test_a_length_over_the_limit_is_refused_from_the_head():
    last = scan_growing(HEAD + b"Content-Length: 1001\r\n\r\n")[-1]
    assert (last.kind, last.code) == (REFUSE, 413) and "body of 1001 bytes" in last.message
    huge = scan_growing(HEAD + b"Content-Length: " + b"9" * 40 + b"\r\n\r\n")[-1]
    assert (huge.kind, huge.code) == (REFUSE, 413)


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
        b"Content-Length: 2\r\nContent-Length: 2\r\n",
        b"Content-Length: -2\r\n",
        b"Transfer-Encoding: gzip\r\n",
        b"Transfer-Encoding: chunked, chunked\r\n",
    ],
)
def test_ambiguous_framing_is_dispatched_at_once_for_the_parser_to_refuse(headers):
    assert scan_growing(HEAD + headers + b"\r\n{}")[-1].kind == DISPATCH


def test_a_bare_lf_is_dispatched_without_waiting_and_a_huge_head_is_431():
    assert scan_growing(b"GET / HTTP/1.1\nHost: x\n\n")[-1].kind == DISPATCH
    last = scan_growing(HEAD + b"X: " + b"y" * 5000, step=512)[-1]
    assert (last.kind, last.code) == (REFUSE, 431)


def test_expect_continue_is_reported_while_the_body_is_awaited():
    scanner = RequestScanner(4096, 1000)
    verdict = scanner.scan(HEAD + b"Content-Length: 2\r\nExpect: 100-continue\r\n\r\n")
    assert verdict.kind == MORE and verdict.expect_continue
    scanner.reset()
    assert not scanner.scan(HEAD + b"Content-Length: 2\r\n\r\n").expect_continue


def test_the_event_loop_answer_has_the_head_every_answer_has_and_a_json_status(monkeypatch):
    monkeypatch.setattr(answering, "http_date", lambda: "Thu, 26 Nov 2026 20:00:00 GMT")
    body = (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"request not received within 10 s","reason":"RequestTimeout","code":408}'
    )
    assert (
        status_answer(408, "request not received within 10 s")
        == (
            b"HTTP/1.1 408 Request Timeout\r\nServer: %s\r\nDate: Thu, 26 Nov 2026 20:00:00 GMT\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (SERVER.encode(), len(body))
        )
        + body
    )
    assert status_answer(499, "x").startswith(b"HTTP/1.1 499 Unknown\r\n")  # a code without a reason phrase
    assert status_answer(413, "x").startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n")


def test_one_decision_closes_a_connection_for_each_reason():
    from types import SimpleNamespace

    def worker(**kw):
        base = dict(alive=True, cfg=SimpleNamespace(keepalive=120), keepalived_conns=[], max_keepalived=2)
        return SimpleNamespace(**{**base, **kw})

    whole, partial = SimpleNamespace(complete=True), SimpleNamespace(complete=False)
    assert not answering.closes_after(worker(), whole, asked=False)
    assert answering.closes_after(worker(), whole, asked=True)  # the client or the application asked
    assert answering.closes_after(worker(), partial, asked=False)  # handed over before it was all in
    assert answering.closes_after(worker(alive=False), whole, asked=False)  # stopping
    assert answering.closes_after(worker(cfg=SimpleNamespace(keepalive=0)), whole, asked=False)
    assert answering.closes_after(worker(keepalived_conns=[1, 2]), whole, asked=False)  # as many idle as it may keep
