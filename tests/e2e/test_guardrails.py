"""Scenario 3, guard rails on live objects: what a user's edit meets on a cluster with Kthena and our
webhook. minRoleReplicas edits are refused (by Kthena's CRD rule before any webhook, and by ours
when asked alone); a role scaled below its gang floor and a `kubectl scale` that breaks the rollout
budget are refused (Kthena's webhook never sees `modelservings/scale`); an AutoscalingPolicy whose
bounds break the gang is refused, a valid one admitted and taken up by Kthena's autoscaler."""

from __future__ import annotations

import copy
import json
import ssl
import urllib.request
import uuid

import pytest
from kubernetes.client.rest import ApiException
from support.e2e import MS_GROUP, MS_VERSION, NODE_OWNER, Cluster, OurWebhook, modelserving, poll, role, running_ready


def serving(owner: str, **spec) -> dict:
    sel = {NODE_OWNER: owner}
    roles = [role("prefill", replicas=2, npu=1, node_selector=sel), role("decode", replicas=2, npu=1, node_selector=sel)]
    return modelserving("llm", 1, roles, min_roles={"prefill": 2, "decode": 1}, **spec)


def refused(call) -> str:
    with pytest.raises(ApiException) as caught:
        call()
    assert caught.value.status in (400, 422), caught.value.body
    return str(json.loads(caught.value.body).get("message"))


def review(hook: OurWebhook, path: str, request: dict) -> dict:
    """Ask our webhook alone, as the API server would (an AdmissionReview over HTTPS)."""
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": str(uuid.uuid4()), **request}}
    ctx = ssl.create_default_context(cafile=str(hook.certs / "ca.crt"))
    req = urllib.request.Request(f"https://127.0.0.1:{hook.port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        return json.loads(r.read())["response"]  # type: ignore[no-any-return]


def ours_on_update(servinggate: OurWebhook, namespace: str, old: dict, new: dict) -> dict:
    """Our webhook's own answer to an UPDATE of ModelServing `llm` from `old` to `new`, asked
    directly: on the stack Kthena's CRD rule or webhook may answer first."""
    kind = {"group": MS_GROUP, "version": MS_VERSION, "kind": "ModelServing"}
    resource = {"group": MS_GROUP, "version": MS_VERSION, "resource": "modelservings"}
    request = {"kind": kind, "resource": resource, "operation": "UPDATE", "namespace": namespace, "name": "llm"}
    return review(servinggate, "/validate", {**request, "object": new, "oldObject": old, "userInfo": {"username": "e2e"}})


def test_min_role_replicas_cannot_change(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena")
    ms = cluster.create_ms(namespace, serving(namespace, scheduler="kthena-none"))
    message = refused(lambda: cluster.patch_ms(namespace, "llm", {"spec": {"template": {"gangPolicy": {"minRoleReplicas": {"prefill": 1, "decode": 1}}}}}))
    assert "minRoleReplicas is immutable" in message  # Kthena's CEL rule, before any webhook
    changed = copy.deepcopy(ms)
    changed["spec"]["template"]["gangPolicy"]["minRoleReplicas"]["prefill"] = 1
    answer = ours_on_update(servinggate, namespace, ms, changed)
    assert answer["allowed"] is False and "minRoleReplicas" in answer["status"]["message"], answer


def test_a_role_below_its_gang_floor_is_refused(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena")
    cluster.create_ms(namespace, serving(namespace, scheduler="kthena-none"))
    ms = cluster.get_ms(namespace, "llm")
    patch = [{"op": "replace", "path": "/spec/template/roles/0/replicas", "value": 1}]
    message = refused(lambda: cluster.patch_ms(namespace, "llm", patch, kind="json"))
    assert "minRoleReplicas" in message, message  # Kthena's webhook or ours, whichever answers first
    lowered = copy.deepcopy(ms)
    lowered["spec"]["template"]["roles"][0]["replicas"] = 1
    answer = ours_on_update(servinggate, namespace, ms, lowered)
    assert answer["allowed"] is False and "below its gang minimum gangPolicy.minRoleReplicas[prefill] (2)" in answer["status"]["message"], answer
    cluster.patch_ms(namespace, "llm", [{"op": "replace", "path": "/spec/template/roles/1/replicas", "value": 1}], kind="json")  # decode's floor is 1


def test_kubectl_scale_that_breaks_the_rollout_budget_is_refused(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena")
    budget = {"rolloutStrategy": {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": "50%"}}}
    ms = serving(namespace, scheduler="kthena-none", **budget)
    ms["spec"]["replicas"] = 2
    cluster.create_ms(namespace, ms)
    message = refused(lambda: cluster.scale_ms(namespace, "llm", 1))  # 50% of 1, rounded down: 0
    assert "maxUnavailable" in message, message
    assert cluster.scale_ms(namespace, "llm", 4)["spec"]["replicas"] == 4


def policy(name: str, target: str, prefill_min: int, prefill_max: int = 4) -> dict:
    """A disaggregated policy over prefill; min == max makes the role fixed (no metrics needed)."""
    role: dict = {"minReplicas": prefill_min, "maxReplicas": prefill_max}
    if prefill_min != prefill_max:
        role["metrics"] = [{"name": "rps", "targetValue": "1"}]
        role["metricSources"] = {"rps": {"prometheus": {"serverURL": "http://prometheus.invalid:9090", "query": "sum(rate(x[1m]))"}}}
    roles = {"prefill": role}
    return {
        "apiVersion": f"{MS_GROUP}/{MS_VERSION}",
        "kind": "AutoscalingPolicy",
        "metadata": {"name": name},
        "spec": {"disaggregatedTarget": {"targetRef": {"kind": "ModelServing", "name": target}, "roles": roles}},
    }


def test_an_autoscaling_policy_that_breaks_the_gang_is_refused_and_a_valid_one_is_taken_up(
    cluster: Cluster, need, servinggate: OurWebhook, namespace: str
) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok")
    if cluster.crd(f"autoscalingpolicies.{MS_GROUP}") is None:
        pytest.skip("kthena: the AutoscalingPolicy CRD is not installed")
    cluster.node(f"{namespace}-n0", namespace, npu=8)
    cluster.create_ms(namespace, serving(namespace))
    # Kthena's autoscaler writes a status only once it has running pods to ask for metrics
    poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 4 and all(map(running_ready, ps)), 180, "4 pods Running")
    create = cluster.custom.create_namespaced_custom_object
    message = refused(lambda: create(MS_GROUP, MS_VERSION, namespace, "autoscalingpolicies", policy("low", "llm", 1)))
    assert "prefill" in message and "2" in message, message  # the gang floor of prefill is 2
    # a fixed prefill of 3: Kthena's autoscaler sets the role's replicas without any metric
    create(MS_GROUP, MS_VERSION, namespace, "autoscalingpolicies", policy("ok", "llm", 3, 3))

    def prefill_replicas() -> int:
        roles = cluster.get_ms(namespace, "llm")["spec"]["template"]["roles"]
        return int(next(r for r in roles if r["name"] == "prefill")["replicas"])

    poll(lambda: prefill_replicas() == 3, 120, "Kthena's autoscaler scaling prefill to 3")
