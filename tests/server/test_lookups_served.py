"""Lookups in the real server (gunicorn workers, TLS): each worker's watch-fed store answers the
pod mutators, and an API server that accepts connections and never answers still leaves every
pod review answered within 1 s, allowed with the rule's "unreadable" warning."""

from __future__ import annotations

import http.client
import json
import time

from fakes.apiserver import FakeAPI
from fakes.silent import Silent, kubeconfig_for
from serverproc import Server  # noqa: E402  (tests/server is on sys.path via conftest)
from support import admission_path, wait_for

from webhook.kthena import MODELSERVING_API_VERSION, MODELSERVING_KIND

POD_REVIEW = admission_path("pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating").read_bytes()
OWNER = json.loads(POD_REVIEW)["request"]["object"]["metadata"]["labels"]["modelserving.volcano.sh/name"]
NAMESPACE = json.loads(POD_REVIEW)["request"]["namespace"]


def call(server: Server, method: str, path: str, body: bytes | None = None) -> tuple[int, dict, float]:
    conn = http.client.HTTPSConnection("localhost", server.port, context=server.ssl_context(), timeout=10)
    started = time.monotonic()
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
    resp = conn.getresponse()
    data = resp.read()
    elapsed = time.monotonic() - started
    conn.close()
    return resp.status, json.loads(data), elapsed


def served(tmp_path, kubeconfig) -> Server:
    return Server(tmp_path, "--kube-lookups", "on", "--kubeconfig", str(kubeconfig), workers=2).start()


def test_a_hanging_api_server_leaves_pod_reviews_answered_within_a_second(tmp_path):
    silent = Silent()
    srv = served(tmp_path, kubeconfig_for(silent.url, tmp_path / "kubeconfig"))
    try:
        for _ in range(6):  # both workers, fresh connections: every review meets the hanging server
            code, body, elapsed = call(srv, "POST", "/mutate", POD_REVIEW)
            response = body["response"]
            assert code == 200 and response["allowed"] is True and elapsed < 1.0, (elapsed, response)
            assert any("unreadable" in w for w in response.get("warnings", [])), response
        code, body, _ = call(srv, "GET", "/readyz")
        assert code == 200 and "ModelServing: not listed yet" in body["detail"]  # shown, not a reason to be unready
    finally:
        srv.stop()
        silent.close()


def test_the_workers_read_the_owner_from_their_watch(tmp_path):
    with FakeAPI() as api:
        group = MODELSERVING_API_VERSION.rpartition("/")[0]
        api.install_custom(group, "autoscalingpolicies")
        api.add_custom(
            {
                "apiVersion": MODELSERVING_API_VERSION,
                "kind": MODELSERVING_KIND,
                "metadata": {"name": OWNER, "namespace": NAMESPACE},
                "spec": {"schedulerName": "other-scheduler"},
            }
        )
        srv = served(tmp_path, api.write_kubeconfig(tmp_path / "kubeconfig"))
        try:
            wait_for(lambda: len([c for c in api.calls("GET", "/modelservings$") if c.query.get("watch") == "true"]) >= 2, timeout=15)
            for _ in range(4):
                code, body, _ = call(srv, "POST", "/mutate", POD_REVIEW)
                assert code == 200 and "patch" not in body["response"]  # the owner chose another scheduler: left alone
            assert not [c for c in api.calls("GET", f"/modelservings/{OWNER}")]  # no GET: the store answered
            code, body, _ = call(srv, "GET", "/readyz")
            assert "ModelServing: 1 cached, watching" in body["detail"]
        finally:
            srv.stop()
