"""A worker's memory after odd input: glibc's mmap threshold is fixed before the workers fork
(webhook/serving/memory.py), so large request buffers are unmapped when freed instead of staying
in the threads' heaps; and a closed connection keeps none of its request's bytes."""

from __future__ import annotations

import gc
import platform
import socket
import ssl
import time

import pytest
from serverproc import Server  # noqa: E402  (tests/server is on sys.path via conftest)
from support.procfs import status_kib  # noqa: E402

from webhook.config import compose
from webhook.serving import memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_the_threshold_is_fixed_on_glibc(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert memory.keep_large_blocks_unmapped() is True


def test_an_operators_own_threshold_is_left_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert memory.keep_large_blocks_unmapped() is False


def _tls(srv: Server) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    return srv.ssl_context().wrap_socket(raw, server_hostname="localhost")


def _answer(sock: ssl.SSLSocket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_refused_and_abandoned_bodies_are_not_kept_after_their_connection_closes(tmp_path):
    """16 bodies near a 2 MiB limit, each refused (413 on the chunk that crosses the limit) or
    abandoned (the client hangs up 64 KiB short): the worker lets each go with its connection.
    Its timers keep a closed connection until the request timeout (60 s here) would have run
    out; they held its buffer too, 2 MiB a body, 32 MiB together (the fuzz benchmark's readings
    jumped by 7 MiB a body, then fell back)."""
    srv = Server(tmp_path, "--max-body-bytes", "2Mi", "--request-timeout", "60", workers=1).start()
    try:
        [pid] = srv.worker_pids()
        with _tls(srv) as warm:
            warm.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            assert b" 200 " in _answer(warm)
        before = status_kib(pid, "VmRSS")
        size = 2 * 1024 * 1024
        for n in range(16):
            with _tls(srv) as c:
                if n % 2:
                    c.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                    piece = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
                    try:
                        for _ in range(size // 65536 + 1):
                            c.sendall(piece)
                    except OSError:
                        pass  # refused while sending: the answer is read below
                    assert b" 413 " in _answer(c)
                else:
                    c.sendall(
                        f"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode()
                        + b" " * (size - 65536)
                    )
        time.sleep(1)  # the hung-up connections are seen closed
        grown_mib = (status_kib(pid, "VmRSS") - before) / 1024
        assert grown_mib < 8, f"the worker still holds {grown_mib:.0f} MiB of closed connections' bodies"
    finally:
        srv.stop()


def test_the_master_freezes_its_heap_before_each_fork(tmp_path):
    """Everything alive in the master when a worker forks is out of the cyclic collector's reach,
    so a worker's full collection neither pauses its reviews to walk the start-up heap (45-60 ms
    on the 2-core VM) nor dirties the pages it shares with the master."""
    from types import SimpleNamespace

    from webhook.server.launch import gunicorn_options
    from webhook.servesettings import ServeSettings

    built_at_start = [{"kept": [n]} for n in range(1000)]
    options = gunicorn_options(compose(ServeSettings, certs_dir=tmp_path), certificates=None)
    gc.unfreeze()
    try:
        options["pre_fork"](SimpleNamespace(WORKERS={}), SimpleNamespace())
        assert gc.get_freeze_count() >= len(built_at_start)
        assert all(gc.is_tracked(d) for d in built_at_start)
        assert not any(any(o is d for o in gc.get_objects()) for d in built_at_start[:3])
    finally:
        gc.unfreeze()


def test_the_heap_trimmer_gives_free_pages_back_on_its_own_thread():
    import threading

    called = threading.Event()
    seen: list[int] = []

    def trim(pad: int) -> int:
        seen.append(pad)
        called.set()
        threading.Event().wait()  # parks the daemon thread: it would otherwise wake every 10 ms for the whole session
        return 1

    thread = memory.start_heap_trimmer(every=0.01, trim=trim)
    assert thread is not None and thread.daemon and thread is not threading.current_thread()
    assert called.wait(5)
    assert seen == [0]  # nothing kept at the top of the heap


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_glibc_has_the_trim_the_trimmer_calls():
    trim = memory._malloc_trim()
    assert trim is not None and trim(0) in (0, 1)


def test_each_worker_starts_its_trimmer_after_the_fork(tmp_path, monkeypatch):
    import sys
    from types import SimpleNamespace

    from webhook.server import forks
    from webhook.server.launch import gunicorn_options
    from webhook.servesettings import ServeSettings

    started = []
    monkeypatch.setattr(memory, "start_heap_trimmer", lambda *a, **k: started.append(True))
    monkeypatch.setattr(forks, "catch_early_stop", lambda *a: None)  # its signal handlers: test_early_stop.py
    interval = sys.getswitchinterval()
    try:
        options = gunicorn_options(compose(ServeSettings, certs_dir=tmp_path), certificates=None)
        options["post_fork"](SimpleNamespace(), SimpleNamespace())
    finally:
        sys.setswitchinterval(interval)
    assert started == [True]
