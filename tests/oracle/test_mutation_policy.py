"""The opt-in gang's mutation as a MutatingAdmissionPolicy (webhook/deploy/mutationpolicy.py)
against the webhook's own patch: for every opt-in pod drawn here, the pod a real kube-apiserver
that serves it makes with the policy installed equals the pod our webhook's patch makes, in everything
either touches (`spec.schedulerName`, labels, annotations); and over a pod the webhook already
mutated, the policy changes nothing (a pod half-mutated is made whole, never twice).

Live only, on the servers of SERVINGGATE_ORACLE_KUBECONFIGS that serve the policy (v1 from 1.36;
v1beta1 on a 1.34 or 1.35 that turned it on; skipped with the reason otherwise); the policy's
shape is held offline."""

from __future__ import annotations

import copy
import time
from typing import Any

import jsonpatch
import pytest
from harness import ENV, Server, servers_from_env
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.podvariants import NAMESPACE

from webhook.admission.review import make_request
from webhook.deploy.mutationpolicy import API_VERSIONS, GROUP, NAME, policy_and_binding
from webhook.kthena import ANNOTATION_GROUP, ANNOTATION_TASK
from webhook.policies import Context, engine
from webhook.policies.pods import GANG_LABEL, SKIP_LABEL, SUBGROUP_LABEL
from webhook.policies.settings import PolicySettings

TOUCHED = (ANNOTATION_GROUP, ANNOTATION_TASK)
VALUES = st.sampled_from(["g1", "npu-infer", "", "decode-0", "x" * 63])


@st.composite
def opt_in_pods(draw: st.DrawFn) -> dict[str, Any]:
    labels: dict[str, str] = {}
    if draw(st.integers(0, 9)):
        labels[GANG_LABEL] = draw(VALUES)
    if draw(st.booleans()):
        labels[SUBGROUP_LABEL] = draw(VALUES)
    if draw(st.integers(0, 5)) == 0:
        labels[SKIP_LABEL] = draw(st.sampled_from(["true", "false"]))
    if draw(st.booleans()):
        labels["app"] = "infer"
    meta: dict[str, Any] = {"generateName": "gang-", "namespace": NAMESPACE, "labels": labels}
    if draw(st.booleans()):
        meta["annotations"] = draw(st.dictionaries(st.sampled_from([*TOUCHED, "note/a"]), VALUES, max_size=2))
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    scheduler = draw(st.sampled_from([None, "", "default-scheduler", "volcano", "other"]))
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def drawn(count: int = 300) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}

    @settings(derandomize=True, database=None, max_examples=count * 3, phases=[Phase.generate], suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        pod = data.draw(opt_in_pods())
        if len(seen) < count:
            seen.setdefault(repr(pod), pod)

    collect()
    return list(seen.values())


def webhook_result(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod after our webhook's patch (the PodGroup CRD taken as installed, as on the stack)."""
    out = engine.mutate(make_request(copy.deepcopy(pod), operation="CREATE"), Context())
    return jsonpatch.apply_patch(copy.deepcopy(pod), out.patch) if out.patch else copy.deepcopy(pod)


def touched(pod: dict[str, Any]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """What either side may change; an empty scheduler as the server's v1 defaults leave it."""
    meta = pod.get("metadata") or {}
    return (pod.get("spec") or {}).get("schedulerName") or "default-scheduler", dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})


def test_the_policy_is_built_from_the_webhooks_settings():
    policy, binding = policy_and_binding(PolicySettings(scheduler_name="volcano-npu", skip_namespaces=frozenset({"batch"})))
    assert policy["kind"] == "MutatingAdmissionPolicy" and binding["spec"]["policyName"] == NAME == policy["metadata"]["name"]
    expressions = [m["applyConfiguration"]["expression"] for m in policy["spec"]["mutations"]]
    assert all('"volcano-npu"' in e for e in expressions) and GANG_LABEL in expressions[1] and SUBGROUP_LABEL in expressions[1]
    assert policy["spec"]["matchConditions"] == [{"name": "not-a-skipped-namespace", "expression": '!(request.namespace in ["batch"])'}]
    selector = binding["spec"]["matchResources"]["objectSelector"]["matchExpressions"]
    assert {"key": SKIP_LABEL, "operator": "NotIn", "values": ["true"]} in selector


def test_the_beta_policy_is_the_same_policy_at_another_version():
    for ga, beta in zip(policy_and_binding(), policy_and_binding(version="v1beta1")):
        assert beta["apiVersion"] == f"{GROUP}/v1beta1" and ga["apiVersion"] == f"{GROUP}/v1"
        assert {**beta, "apiVersion": ga["apiVersion"]} == ga
    with pytest.raises(ValueError, match="the versions are v1, v1beta1"):
        policy_and_binding(version="v1alpha1")


SERVERS, SKIPPED = servers_from_env(__import__("os").environ.get(ENV))
NEW_ENOUGH = [s for s in SERVERS if s.version.minor >= 34]  # v1 from 1.36; v1beta1 at 1.34-1.35 when turned on


def _served_version(server: Server) -> str | None:
    """The MutatingAdmissionPolicy version the server serves (v1 preferred), or None."""
    for version in API_VERSIONS:
        code, body = server.call("GET", f"/apis/{GROUP}/{version}")
        if code == 200 and any(r.get("name") == "mutatingadmissionpolicies" for r in body.get("resources") or []):
            return version
    return None


def _install(server: Server, version: str) -> None:
    for obj, resource in zip(policy_and_binding(version=version), ("mutatingadmissionpolicies", "mutatingadmissionpolicybindings")):
        server.call("DELETE", f"/apis/{GROUP}/{version}/{resource}/{NAME}")
        code, body = server.call("POST", f"/apis/{GROUP}/{version}/{resource}", obj)
        assert code == 201, body
    time.sleep(2)  # the policy reaches the admission plugin through an informer


def _uninstall(server: Server, version: str) -> None:
    for resource in ("mutatingadmissionpolicybindings", "mutatingadmissionpolicies"):
        server.call("DELETE", f"/apis/{GROUP}/{version}/{resource}/{NAME}")


def _created(server: Server, pod: dict[str, Any]) -> dict[str, Any]:
    code, body = server.call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", pod)
    assert code == 201, body
    return body


@pytest.mark.skipif(not NEW_ENOUGH, reason=f"{ENV} names no API server of 1.34 or newer that answers: {SKIPPED or 'none named'}")
@pytest.mark.parametrize("server", NEW_ENOUGH, ids=lambda s: s.label)
def test_the_policy_makes_the_pod_the_webhook_makes(server):
    version = _served_version(server)
    if version is None:
        pytest.skip(f"{server.label} serves no MutatingAdmissionPolicy (before 1.36: the gate and v1beta1 are off)")
    server.prepare()
    _install(server, version)
    try:
        pods = drawn()
        unequal, twice = [], []
        for pod in pods:
            theirs = touched(_created(server, pod))
            ours = webhook_result(pod)
            if theirs != touched(ours):
                unequal.append((pod, theirs, touched(ours)))
            if touched(_created(server, ours)) != touched(ours):
                twice.append(pod)
        print(f"{server.label} ({version}): {len(pods)} opt-in pods, {len(pods) - len(unequal)} equal, {len(twice)} changed again")
        assert not unequal, "\n".join(f"{p['metadata']} {p['spec'].get('schedulerName')}: server {t} / webhook {o}" for p, t, o in unequal[:10])
        assert not twice
    finally:
        _uninstall(server, version)
