"""The one head writer (answers.py) and the one keep-or-close decision (WebhookWorker._closes)."""

from __future__ import annotations

from types import SimpleNamespace

from webhook.server import answers
from webhook.server.answers import CONTINUE, SERVER, head, status_answer, whole
from webhook.server.http1 import HttpRequest
from webhook.server.worker import WebhookWorker
from webhook.serving.answer import Answer


def test_a_refusal_has_the_head_every_answer_has_and_a_json_status(monkeypatch):
    monkeypatch.setattr(answers, "http_date", lambda: "Thu, 26 Nov 2026 20:00:00 GMT")
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


def test_the_interim_answer_and_an_http_1_0_answer_come_from_the_same_writer():
    assert CONTINUE == b"HTTP/1.1 100 Continue\r\n\r\n"  # a status line only (RFC 9110 15.2)
    kept = head(200, [("Content-Length", "0")], closes=False, version=(1, 0))
    assert kept.startswith(b"HTTP/1.0 200 OK\r\nServer: ") and b"\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n" in kept


def test_an_answer_is_written_whole_and_a_head_answer_keeps_the_get_answers_length(monkeypatch):
    monkeypatch.setattr(answers, "http_date", lambda: "Thu, 26 Nov 2026 20:00:00 GMT")
    answer = Answer(200, b"hello", "text/plain", (("X-Seen", "1"),))
    head_only = (
        b"HTTP/1.1 200 OK\r\nServer: %s\r\nDate: Thu, 26 Nov 2026 20:00:00 GMT\r\nConnection: keep-alive\r\n"
        b"Content-Type: text/plain\r\nContent-Length: 5\r\nX-Seen: 1\r\n\r\n" % SERVER.encode()
    )
    assert whole(answer, closes=False) == head_only + b"hello"
    assert whole(answer, closes=False, with_body=False) == head_only


def test_one_decision_closes_a_connection_for_each_reason():
    def worker(**kw):
        fake = SimpleNamespace(alive=True, idle=0, cfg=SimpleNamespace(keepalive=120, worker_connections=10, threads=8))
        for key, value in kw.items():
            setattr(fake, key, value)
        return fake

    def closes(w, keep_alive=True, asked=False):
        req = HttpRequest(b"POST", b"/validate", (1, 1), [], b"{}", keep_alive)
        return WebhookWorker._closes(w, req, Answer(200, b"{}", closes=asked))

    assert not closes(worker())
    assert closes(worker(), keep_alive=False)  # the client asked (Connection: close, or HTTP/1.0 without keep-alive)
    assert closes(worker(), asked=True)  # the application asked
    assert closes(worker(alive=False))  # stopping
    assert closes(worker(cfg=SimpleNamespace(keepalive=0, worker_connections=10, threads=8)))  # keep-alive off
    assert closes(worker(idle=2))  # as many idle connections as it may keep (worker_connections - threads)
