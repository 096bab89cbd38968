"""`--kubernetes-version auto` resolved from the fake API server's `/version`: what it answers,
what happens when it cannot be read (the newest supported, with a warning, never an error), and
reading it again when the lookups' watch reconnects."""

from __future__ import annotations

import logging

import pytest

from tests.fakes.apiserver import FakeAPI
from tests.support import wait_for
from webhook.kube import KubeAccessError
from webhook.kube.serverversion import FollowedVersion, read_version, resolve
from webhook.kube.watching import StoreWatcher
from webhook.kubeversion import NEWEST, KubeVersion
from webhook.policies.projections import LOOKED_UP
from webhook.policies.store import ProjectionStore

GKE = {"major": "1", "minor": "30+", "gitVersion": "v1.30.4-gke.100", "platform": "linux/amd64"}


def versions(api: FakeAPI) -> int:
    return len(api.calls("GET", "^/version/?$"))


def test_the_minor_comes_from_git_version(fake_api):
    fake_api.version = GKE
    chosen = read_version(fake_api.client())
    assert chosen.version == KubeVersion(1, 30) and not chosen.lenient
    assert chosen.describe() == "Kubernetes 1.30, from the API server's /version (v1.30.4-gke.100)"


def test_major_and_minor_when_git_version_is_odd(fake_api):
    fake_api.version = {"major": "1", "minor": "31+", "gitVersion": "custom-build"}
    assert read_version(fake_api.client()).version == KubeVersion(1, 31)


def test_a_newer_cluster_is_judged_as_the_newest_ported(fake_api):
    fake_api.version = {"major": "1", "minor": "38", "gitVersion": "v1.38.2"}
    chosen = read_version(fake_api.client())
    assert chosen.version == KubeVersion(1, 38) and chosen.judged == NEWEST
    assert f"Kubernetes 1.38, judged as {NEWEST}" in chosen.describe()


@pytest.mark.parametrize("answer", [None, {"platform": "linux/amd64"}, {"gitVersion": 7}])
def test_a_version_that_cannot_be_read_is_one_line(fake_api, answer):
    fake_api.version = answer  # None: 404
    with pytest.raises(KubeAccessError) as err:
        read_version(fake_api.client())
    assert "\n" not in str(err.value) and str(err.value)


def test_auto_resolves_from_the_api_server(fake_api, tmp_path):
    fake_api.version = GKE
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    assert FollowedVersion.of("auto", str(kubeconfig)).current.version == KubeVersion(1, 30)


def test_a_named_version_reads_nothing(fake_api):
    chosen = resolve(KubeVersion(1, 29), fake_api.client)
    assert chosen.version == KubeVersion(1, 29) and chosen.source == "--kubernetes-version"
    assert versions(fake_api) == 0


def test_a_failing_version_starts_with_the_newest_and_warns(fake_api, caplog):
    fake_api.fail("GET", "^/version/?$", 500, "InternalError", "etcd is sad")
    with caplog.at_level(logging.WARNING, "servinggate.kubernetes-version"):
        chosen = resolve("auto", fake_api.client)
    assert chosen.version == NEWEST and chosen.lenient
    assert "etcd is sad" in chosen.source
    assert "could not be read" in caplog.text


def test_no_cluster_at_all_starts_with_the_newest(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with caplog.at_level(logging.WARNING, "servinggate.kubernetes-version"):
        followed = FollowedVersion.of("auto")
    assert followed.current.version == NEWEST and followed.current.lenient
    assert "no kubeconfig" in caplog.text


def test_an_unreachable_api_server_starts_with_the_newest(silent_port_kubeconfig):
    followed = FollowedVersion.of("auto", silent_port_kubeconfig)
    assert followed.current.version == NEWEST and "could not be read" in followed.current.source


@pytest.fixture
def silent_port_kubeconfig(tmp_path):
    """A kubeconfig naming a port nothing listens on (connection refused at once)."""
    import socket

    import yaml

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "gone",
                "clusters": [{"name": "gone", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "gone", "user": {}}],
                "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}],
            }
        )
    )
    return str(path)


def test_refresh_follows_an_upgrade_and_keeps_the_version_when_it_fails(fake_api, caplog):
    fake_api.version = {"gitVersion": "v1.29.3"}
    followed = FollowedVersion("auto", fake_api.client)
    heard: list[KubeVersion] = []
    followed.listeners.append(lambda chosen: heard.append(chosen.version))
    fake_api.version = {"gitVersion": "v1.30.0"}
    followed.refresh()
    assert followed.current.version == KubeVersion(1, 30) and heard == [KubeVersion(1, 30)]
    followed.refresh()  # no change: nobody is told again
    assert heard == [KubeVersion(1, 30)]
    fake_api.fail("GET", "^/version/?$", 503, "ServiceUnavailable", "restarting")
    with caplog.at_level(logging.WARNING, "servinggate.kubernetes-version"):
        followed.refresh()
    assert followed.current.version == KubeVersion(1, 30) and heard == [KubeVersion(1, 30)]
    assert "keeping the current one" in caplog.text


def test_refresh_of_a_named_version_reads_nothing(fake_api):
    followed = FollowedVersion(KubeVersion(1, 31), fake_api.client)
    followed.refresh()
    assert versions(fake_api) == 0 and followed.current.version == KubeVersion(1, 31)


def test_the_watch_calls_on_reconnect_once_when_it_first_connects(fake_api):
    fake_api.install_custom("workload.serving.volcano.sh", "modelservings")
    reconnects: list[int] = []
    store = ProjectionStore(kinds=[e for e in LOOKED_UP if e.plural == "modelservings"])
    watcher = StoreWatcher(fake_api.client(), store, watch_timeout=1, on_reconnect=lambda: reconnects.append(1))
    watcher.start()
    try:
        wait_for(lambda: len(fake_api.calls("GET", "/modelservings$")) >= 4, timeout=10)  # a list and watches, none failing
        assert reconnects == [1]
    finally:
        watcher.stop()


def test_the_watch_calls_on_reconnect_again_after_each_failure(fake_api):
    fake_api.install_custom("workload.serving.volcano.sh", "modelservings")
    reconnects: list[int] = []
    store = ProjectionStore(kinds=[e for e in LOOKED_UP if e.plural == "modelservings"])
    watcher = StoreWatcher(fake_api.client(), store, watch_timeout=1, backoff_cap=0.2, on_reconnect=lambda: reconnects.append(1))
    fake_api.fail("GET", "/modelservings$", 503, "ServiceUnavailable", "upgrading", times=1)  # the first list
    watcher.start()
    try:
        wait_for(lambda: reconnects == [1], timeout=8)
        fake_api.fail("GET", "/modelservings$", 503, "ServiceUnavailable", "upgrading", times=2)  # the next watches
        wait_for(lambda: len(reconnects) == 2, timeout=10)
        calls = len(fake_api.calls("GET", "/modelservings$"))
        wait_for(lambda: len(fake_api.calls("GET", "/modelservings$")) >= calls + 2, timeout=10)  # watched on, no failure
        assert reconnects == [1, 1]
    finally:
        watcher.stop()


def test_the_watch_tells_one_reconnection_however_many_kinds_it_watches(fake_api):
    """Every kind's first answer is a connection, but the API server is read once for all of
    them: one /version read per connection of the server, not one per looked-up kind."""
    for plural in ("modelservings", "autoscalingpolicies"):
        fake_api.install_custom("workload.serving.volcano.sh", plural)
    reconnects: list[int] = []
    store = ProjectionStore(kinds=[e for e in LOOKED_UP if e.plural in ("modelservings", "autoscalingpolicies")])
    watcher = StoreWatcher(fake_api.client(), store, watch_timeout=1, on_reconnect=lambda: reconnects.append(1))
    watcher.start()
    try:
        for plural in ("modelservings", "autoscalingpolicies"):
            wait_for(lambda plural=plural: len(fake_api.calls("GET", f"/{plural}$")) >= 3, timeout=10)  # listed and watching
        assert reconnects == [1]
    finally:
        watcher.stop()
