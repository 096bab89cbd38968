"""The one API client loader: which source wins, and one error naming what was tried."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from webhook.config import compose
from webhook.kube import KubeAccessError, load_api_client


def write_kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return path


@pytest.fixture
def outside_a_cluster(monkeypatch, tmp_path):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return tmp_path


def test_an_explicit_kubeconfig_wins_over_the_environment(outside_a_cluster, monkeypatch):
    tmp = outside_a_cluster
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp / "env", "https://env.example:6443")))
    api = load_api_client(str(write_kubeconfig(tmp / "explicit", "https://explicit.example:6443")))
    assert isinstance(api, client.ApiClient)
    assert api.configuration.host == "https://explicit.example:6443"


def test_kubeconfig_is_read_when_the_client_is_built(outside_a_cluster, monkeypatch):
    tmp = outside_a_cluster
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp / "late", "https://late.example:6443")))
    assert load_api_client().configuration.host == "https://late.example:6443"


def test_home_kubeconfig_is_the_last_resort(outside_a_cluster):
    (outside_a_cluster / ".kube").mkdir()
    write_kubeconfig(outside_a_cluster / ".kube" / "config", "https://home.example:6443")
    assert load_api_client().configuration.host == "https://home.example:6443"


def test_nothing_usable_is_one_error_naming_what_was_tried(outside_a_cluster):
    with pytest.raises(KubeAccessError) as info:
        load_api_client()
    message = str(info.value)
    assert "no usable Kubernetes API configuration" in message
    assert "in-cluster" in message and str(outside_a_cluster / ".kube" / "config") in message
    assert "\n" not in message


@pytest.mark.parametrize("content", ["not: [valid\n", "apiVersion: v1\nkind: Config\n", None])
def test_an_unusable_explicit_kubeconfig_names_the_file(outside_a_cluster, content):
    path = outside_a_cluster / "bad"
    if content is not None:
        path.write_text(content)
    with pytest.raises(KubeAccessError) as info:
        load_api_client(str(path))
    assert f"unusable kubeconfig {path}" in str(info.value)
    assert "\n" not in str(info.value)


def test_an_explicit_kubeconfig_is_used_even_in_a_pod(outside_a_cluster, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    path = write_kubeconfig(outside_a_cluster / "explicit", "https://explicit.example:6443")
    assert load_api_client(str(path)).configuration.host == "https://explicit.example:6443"


def test_the_servers_lookups_use_the_same_loader(outside_a_cluster, monkeypatch):
    from webhook.config import ConfigError
    from webhook.kube.lookups import KubeLookups
    from webhook.servesettings import ServeSettings
    from webhook.serving.lookups import default_lookups

    assert not isinstance(default_lookups(compose(ServeSettings, kube_lookups="auto")), KubeLookups)
    with pytest.raises(ConfigError, match="--kube-lookups on: no usable Kubernetes API configuration"):
        default_lookups(compose(ServeSettings, kube_lookups="on"))
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(outside_a_cluster / "c", "https://127.0.0.1:6443")))
    assert isinstance(default_lookups(compose(ServeSettings, kube_lookups="auto")), KubeLookups)
