"""The folder `serve` keeps its multi-process metrics in when none is given: made fresh, and
removed when the server stops (a folder given with --metrics-dir is emptied, and left)."""

from __future__ import annotations

import os

from serverproc import Server  # noqa: E402  (tests/server is on sys.path via conftest)

from webhook.config import compose
from webhook.servesettings import ServeSettings
from webhook.serving import metricsport


def ours(parent: str) -> set[str]:
    return {p for p in os.listdir(parent) if p.startswith("servinggate-metrics-")}


def test_a_given_folder_is_used_and_emptied(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "unset-by-test")  # restored after the test
    given = tmp_path / "given"
    given.mkdir()
    (given / "old.db").write_bytes(b"x")
    assert metricsport.prepare_metrics_dir(compose(ServeSettings, certs_dir=tmp_path, metrics_dir=str(given))) == str(given)
    assert os.listdir(given) == [] and os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(given)


def test_the_server_removes_the_folder_it_made_when_it_stops(tmp_path):
    # A temp folder of its own (TMPDIR): a server another test or test worker starts meanwhile
    # makes its folder elsewhere, so the one made here is this server's.
    parent = str(tmp_path / "tmp")
    os.mkdir(parent)
    before = ours(parent)
    srv = Server(tmp_path, env={"TMPDIR": parent})
    at = srv.args.index("--metrics-dir")
    del srv.args[at : at + 2]  # no folder given: the server makes one
    srv.start()
    try:
        made = ours(parent) - before
        assert len(made) == 1 and os.listdir(os.path.join(parent, made.pop()))  # the workers' files are there
    finally:
        srv.stop()
    assert ours(parent) <= before
