"""The fake API server's own controls, through the official client: injected failures per route,
and a kubeconfig a subprocess can use."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

NS = "servinggate-system"


def secret(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}, "data": {}}


def test_fail_answers_a_status_on_the_matching_route_only(fake_api, api_client):
    fake_api.put_secret(secret("tls"))
    fake_api.fail(
        "GET", r"/namespaces/[^/]+/secrets/", 403, "Forbidden", 'secrets "tls" is forbidden: User "system:serviceaccount:x:y" cannot get resource "secrets"'
    )
    core = client.CoreV1Api(api_client)
    for _ in range(2):  # every time, not once
        with pytest.raises(ApiException) as caught:
            core.read_namespaced_secret("tls", NS)
        assert caught.value.status == 403
        body = json.loads(caught.value.body)
        assert body["kind"] == "Status" and body["reason"] == "Forbidden" and "cannot get resource" in body["message"]
    # other methods and routes are untouched
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_secret(NS, secret("tls"))
    assert caught.value.status == 409
    assert core.list_node().items == []
    assert [c.status for c in fake_api.calls("GET", "/secrets/")] == [403, 403]


def test_fail_can_be_limited_to_the_first_times(fake_api, api_client):
    fake_api.put_secret(secret("tls"))
    fake_api.fail("GET", r"/secrets/tls$", 500, "InternalError", "etcd is sad", times=1)
    core = client.CoreV1Api(api_client)
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_secret("tls", NS)
    assert caught.value.status == 500
    assert core.read_namespaced_secret("tls", NS).metadata.name == "tls"


def test_one_fake_serves_secrets_pods_and_leases_together(fake_api, s1):
    api, api_client = fake_api(s1["nodes"]["items"], s1["pods"]["items"])
    api.put_secret(secret("tls"))
    core = client.CoreV1Api(api_client)
    assert len(core.list_pod_for_all_namespaces().items) == len(s1["pods"]["items"])
    assert core.read_namespaced_secret("tls", NS).metadata.namespace == NS
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
    client.CoordinationV1Api(api_client).create_namespaced_lease("ns", lease)
    assert api.leases["l"]["spec"]["holderIdentity"] == "a"


def test_the_kubeconfig_points_at_the_fake(fake_api, tmp_path):
    fake_api.put_secret(secret("tls"))
    conf = client.Configuration()
    config.load_kube_config(config_file=str(fake_api.write_kubeconfig(tmp_path / "kubeconfig")), client_configuration=conf)
    with client.ApiClient(conf) as c:
        assert client.CoreV1Api(c).read_namespaced_secret("tls", NS).metadata.name == "tls"
