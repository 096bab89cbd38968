"""The Kubernetes version `serve` judges by: resolved at `create_app`, carried by the rules'
Context into every review, followed when the cluster's version changes, shown in `/readyz`."""

from __future__ import annotations

import logging

import pytest
from siteclient import SiteClient  # noqa: E402  (tests/server is on sys.path via conftest)
from support import ADMISSION_FIXTURES as FIXTURES

from webhook.admission import allowed
from webhook.config import compose
from webhook.kube.serverversion import FollowedVersion
from webhook.kubeversion import NEWEST, KubeVersion
from webhook.policies import NoLookups, Registry
from webhook.policies.registry import Target
from webhook.server.app import create_app
from webhook.servesettings import ServeSettings

POD_REVIEW = (FIXTURES / "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating.json").read_bytes()


@pytest.fixture
def seen():
    """A registry whose one rule records the version its context carries, and what it recorded."""
    registry, versions = Registry(), []

    @registry.validates_request("records-version", Target(group="", resource="pods", versions=("v1",), operations=("CREATE",)))
    def record(req, ctx):
        versions.append(ctx.kubernetes_version)
        return allowed()

    return registry, versions


def review(app) -> None:
    resp = SiteClient(app).post("/validate", data=POD_REVIEW, content_type="application/json")
    assert resp.status_code == 200 and resp.get_json()["response"]["allowed"] is True


def test_a_named_version_reaches_the_rules(tmp_path, seen):
    registry, versions = seen
    settings = compose(ServeSettings, certs_dir=tmp_path, kubernetes_version=KubeVersion(1, 30))
    review(create_app(settings, registry=registry, lookups=NoLookups()))
    assert versions == [KubeVersion(1, 30)]


def test_auto_is_read_from_the_api_server_and_followed_after_a_reconnect(fake_api, tmp_path, seen, caplog):
    registry, versions = seen
    fake_api.version = {"major": "1", "minor": "29", "gitVersion": "v1.29.6"}
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    settings = compose(ServeSettings, certs_dir=tmp_path / "c", kubeconfig=str(kubeconfig), kube_lookups="off")
    with caplog.at_level(logging.INFO, "servinggate.server"):
        app = create_app(settings, registry=registry, lookups=NoLookups())
    started = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("msg", "").startswith("judging by")]
    assert started == [{"msg": "judging by Kubernetes 1.29", "kubernetesVersion": "1.29", "judgedAs": "1.29", "source": "the API server's /version (v1.29.6)"}]
    review(app)
    fake_api.version = {"major": "1", "minor": "38", "gitVersion": "v1.38.0"}  # the control plane was upgraded
    app.flask.extensions["servinggate"]["kubernetes"].refresh()  # what the watcher calls when it reconnects
    review(app)
    assert versions == [KubeVersion(1, 29), KubeVersion(1, 38)]
    detail = SiteClient(app).get("/readyz").get_json()["detail"]
    assert f"Kubernetes 1.38, judged as {NEWEST}, from the API server's /version (v1.38.0)" in detail


def test_an_unreadable_version_starts_with_the_newest_and_says_so(fake_api, tmp_path, seen, caplog):
    registry, versions = seen
    fake_api.fail("GET", "^/version/?$", 503, "ServiceUnavailable", "the control plane is restarting")
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    settings = compose(ServeSettings, certs_dir=tmp_path / "c", kubeconfig=str(kubeconfig), kube_lookups="off")
    with caplog.at_level(logging.WARNING):
        app = create_app(settings, registry=registry, lookups=NoLookups())
    review(app)
    assert versions == [NEWEST]
    assert "could not be read" in caplog.text and "restarting" in caplog.text
    detail = SiteClient(app).get("/readyz").get_json()["detail"]
    assert f"Kubernetes {NEWEST}, from the newest supported version, as the API server's /version could not be read" in detail


def test_readyz_shows_the_version_beside_the_certificate(tmp_path):
    from webhook.certs.files import ensure_dev_certs

    settings = compose(ServeSettings, certs_dir=tmp_path, kubernetes_version=KubeVersion(1, 31))
    ensure_dev_certs(tmp_path, "svc", "ns")
    app = create_app(settings, lookups=NoLookups(), kubernetes=FollowedVersion(KubeVersion(1, 31), connect=lambda: None))
    body = SiteClient(app).get("/readyz").get_json()
    assert body["status"] == "ok"
    assert "valid until" in body["detail"] and body["detail"].endswith("; Kubernetes 1.31, from --kubernetes-version")


def test_the_lookups_watch_reads_the_version_again_when_it_reconnects(fake_api, tmp_path):
    from support import wait_for

    fake_api.install_custom("workload.serving.volcano.sh", "modelservings")
    fake_api.install_custom("workload.serving.volcano.sh", "autoscalingpolicies")
    fake_api.version = {"gitVersion": "v1.30.1"}
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    fake_api.fail("GET", "/modelservings$", 503, "ServiceUnavailable", "upgrading", times=1)
    settings = compose(ServeSettings, certs_dir=tmp_path / "c", kubeconfig=str(kubeconfig))
    app = create_app(settings)
    ctx = app.flask.extensions["servinggate"]["context"]
    assert ctx.kubernetes_version == KubeVersion(1, 30)
    fake_api.version = {"gitVersion": "v1.31.0"}
    try:
        ctx.lookups.inner.start()  # the watcher starts in a worker; here, in the test's process
        wait_for(lambda: ctx.kubernetes_version == KubeVersion(1, 31), timeout=10)
    finally:
        ctx.lookups.inner.close()


def test_a_lenient_start_takes_the_version_when_the_watch_first_connects(fake_api, tmp_path):
    from support import wait_for

    fake_api.install_custom("workload.serving.volcano.sh", "modelservings")
    fake_api.install_custom("workload.serving.volcano.sh", "autoscalingpolicies")
    fake_api.version = {"gitVersion": "v1.29.9"}
    fake_api.fail("GET", "^/version/?$", 503, "ServiceUnavailable", "starting", times=1)
    settings = compose(ServeSettings, certs_dir=tmp_path / "c", kubeconfig=str(fake_api.write_kubeconfig(tmp_path / "kubeconfig")))
    app = create_app(settings)
    ctx = app.flask.extensions["servinggate"]["context"]
    assert ctx.kubernetes_version == NEWEST and app.flask.extensions["servinggate"]["kubernetes"].current.lenient
    try:
        ctx.lookups.inner.start()
        wait_for(lambda: ctx.kubernetes_version == KubeVersion(1, 29), timeout=10)
    finally:
        ctx.lookups.inner.close()
    assert "Kubernetes 1.29, from the API server's /version (v1.29.9)" in SiteClient(app).get("/readyz").get_json()["detail"]
