"""Scenario 5, an outage: our webhook stopped (its configurations stay) while Kthena recreates a
ServingGroup's pods. The pod entry for Kthena's pods fails open (`failurePolicy: Ignore`, issue 46:
Kthena writes what our mutation repairs and does not retry a refused create), so Kthena's creates
go through unmutated while we are down, and no ServingGroup is left without pods; once we are back
every pod exists, carries what Volcano needs, and no ServingGroup is half made. (With that entry
at `Fail`, Kthena 3cc05728's scaleUpRoles logs a refused create and never requeues: the group
stays without pods.)

An opt-in gang's Deployment scaled up through the outage: with the entry at `Fail` its pods are
refused while we are down and made, mutated, by the ReplicaSet controller's retries once we are
back; with our MutatingAdmissionPolicy installed the API server makes them right during the
outage. Either way no gang pod is ever made without Volcano's scheduler and its PodGroup.

The HPA controller's scale of a ModelServing through the outage: refused at each of its
reconciles while we are down, made at the first once we are back."""

from __future__ import annotations

import time

import pytest
from support.e2e import (
    NODE_OWNER,
    PG_GROUP,
    PG_VERSION,
    Cluster,
    OurWebhook,
    gang_example,
    gang_podgroup,
    hpa_on,
    modelserving,
    opt_in_gang,
    poll,
    role,
    running_ready,
    stopped,
)

GROUP = "modelserving.volcano.sh/group-name"


def serving(owner: str) -> dict:
    sel = {NODE_OWNER: owner}
    roles = [role("prefill", replicas=1, workers=1, npu=1, node_selector=sel), role("decode", replicas=1, workers=1, npu=1, node_selector=sel)]
    return modelserving("llm", 2, roles)


def test_kthena_pods_are_made_through_our_outage_and_no_group_is_half_made(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok")
    cluster.node(f"{namespace}-n0", namespace, npu=8)
    cluster.create_ms(namespace, serving(namespace))
    poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 8 and all(map(running_ready, ps)), 180, "8 pods Running")
    ignored = cluster.apiserver_metric("apiserver_admission_webhook_fail_open_count", name="pods-modelserving.mutate.servinggate.io")
    with stopped(servinggate):
        # the group's pods go: Kthena recreates them, and each create finds the webhook stopped
        cluster.core.delete_collection_namespaced_pod(namespace, label_selector=f"{GROUP}=llm-1", grace_period_seconds=0)
        pods = poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 8 and all(map(running_ready, ps)) and ps, 180, "8 pods Running during the outage")
    # the API server called us, could not reach us, and let Kthena's creates through (fail open)
    failed_open = cluster.apiserver_metric("apiserver_admission_webhook_fail_open_count", name="pods-modelserving.mutate.servinggate.io")
    assert failed_open - ignored >= 2, (ignored, failed_open)
    groups: dict[str, set[str]] = {}
    for pod in pods:
        groups.setdefault(pod.metadata.labels[GROUP], set()).add(pod.metadata.labels["modelserving.volcano.sh/role-id"])
        assert (pod.metadata.annotations or {}).get("scheduling.k8s.io/group-name") == pod.metadata.labels[GROUP]
    assert groups == {"llm-0": {"prefill-0", "decode-0"}, "llm-1": {"prefill-0", "decode-0"}}
    assert all(p.spec.scheduler_name == "volcano" for p in pods)  # Kthena's own write, unrepaired and right


# ---- an opt-in gang's Deployment scaled up through our outage --------------------------------------

GANG_SIZE = 4


def gang_ready(cluster: Cluster, ns: str) -> list | None:
    """The gang's pods once all GANG_SIZE run, each as Volcano's gang needs it (volcano's scheduler,
    the PodGroup annotation); else None."""
    pods = cluster.pods(ns, "app=gang")
    if len(pods) != GANG_SIZE or not all(map(running_ready, pods)):
        return None
    return pods


def made_for_the_gang(pod) -> bool:
    return pod.spec.scheduler_name == "volcano" and (pod.metadata.annotations or {}).get("scheduling.k8s.io/group-name") == "gang"


def scale_gang_through_outage(cluster: Cluster, servinggate: OurWebhook, ns: str, hold: float) -> tuple[list, list]:
    """The gang's PodGroup and Deployment (0 pods), then the webhook stopped, the Deployment scaled
    to GANG_SIZE, and `hold` seconds of outage: (pods made during the outage, pods once back and
    running)."""
    cluster.node(f"{ns}-n0", ns, npu=8)
    cluster.custom.create_namespaced_custom_object(PG_GROUP, PG_VERSION, ns, "podgroups", gang_podgroup("gang", GANG_SIZE))
    cluster.apps.create_namespaced_deployment(ns, opt_in_gang(ns, 0))
    with stopped(servinggate):
        cluster.apps.patch_namespaced_deployment_scale(namespace=ns, name="gang", body={"spec": {"replicas": GANG_SIZE}})
        time.sleep(hold)
        during = cluster.pods(ns, "app=gang")
    pods = poll(lambda: gang_ready(cluster, ns), 240, f"{GANG_SIZE} gang pods Running after the outage")
    return during, pods


def test_an_opt_in_gang_scaled_up_through_our_outage_is_made_whole_once_we_are_back(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    """Without the MutatingAdmissionPolicy, the opt-in entry fails closed: the ReplicaSet
    controller's creates are refused while we are down (no pod is made without what Volcano
    needs), and it retries, so once we are back every pod exists, mutated, and runs as one gang."""
    need("volcano-controllers", "volcano-scheduler", "kwok")
    during, pods = scale_gang_through_outage(cluster, servinggate, namespace, hold=15)
    assert during == [], [p.metadata.name for p in during]
    assert all(map(made_for_the_gang, pods)), [(p.metadata.name, p.spec.scheduler_name, p.metadata.annotations) for p in pods]


def test_with_the_mutating_policy_an_opt_in_gang_is_made_during_our_outage(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    """With our MutatingAdmissionPolicy (1.36+, or a 1.34/1.35 that turned it on) the API server
    mutates the gang's pods itself: they are made, right, while we are down, and run as one gang."""
    need("volcano-controllers", "volcano-scheduler", "kwok")
    version = cluster.mutating_policy_version()
    if version is None:
        pytest.skip(cluster.no_mutating_policy())
    with cluster.mutating_policy(namespace, version), servinggate.failing("pods-gang", "Ignore"):  # as components/mutating-policy-* have it
        during, pods = scale_gang_through_outage(cluster, servinggate, namespace, hold=20)
        assert len(during) == GANG_SIZE and all(map(made_for_the_gang, during)), [(p.metadata.name, p.spec.scheduler_name) for p in during]
        assert {p.metadata.uid for p in pods} == {p.metadata.uid for p in during}  # the same pods: none refused, none remade


# ---- the HPA controller's scale of a ModelServing through our outage ----------------------------


def reconciles(cluster: Cluster, ns: str, name: str, reason: str) -> int:
    """How many of the HPA controller's reconciles of the HPA gave an event with `reason`: the
    event's `count` grows with each reconcile that repeats it."""
    return sum(e.count or 1 for e in cluster.events_about(ns, "HorizontalPodAutoscaler", name) if e.reason == reason)


def test_the_hpa_controllers_scale_is_refused_through_our_outage_and_made_once_we_are_back(
    cluster: Cluster, need, servinggate: OurWebhook, namespace: str
) -> None:
    """The HPA controller's UPDATE of `modelservings/scale` goes through our validating entry,
    which fails closed: while we are down each of its reconciles (every 15 s) is refused, the
    ModelServing keeps its size, and the first reconcile once we are back scales it.

    No metrics are needed: the HPA controller scales to `minReplicas` a target below it without
    reading any (`reconcileAutoscaler`). The HPA is made first, for a ModelServing not there yet,
    so that its reconciles (FailedGetScale) show when the next one comes; the ModelServing is made
    right after one, and we are down before the next."""
    need("kthena")
    status, body, _ = cluster.raw("POST", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers", hpa_on("sample-hpa", "sample", 2, 2))
    assert status == 201, body
    first = poll(lambda: reconciles(cluster, namespace, "sample-hpa", "FailedGetScale"), 60, "the HPA's first reconcile")
    poll(lambda: reconciles(cluster, namespace, "sample-hpa", "FailedGetScale") > first, 30, "the HPA's next reconcile", every=0.2)
    ms = gang_example(namespace, npu=1)
    ms["spec"]["schedulerName"] = "servinggate-e2e-none"  # no pod needs to run
    cluster.create_ms(namespace, ms)
    with stopped(servinggate):
        refused = poll(
            lambda: (c := cluster.hpa_conditions(namespace, "sample-hpa").get("AbleToScale", {})).get("reason") == "FailedUpdateScale" and c,
            40,
            "a refused scale",
        )
        assert "failed calling webhook" in refused["message"] and "servinggate.io" in refused["message"], refused
        assert cluster.get_ms(namespace, "sample")["spec"]["replicas"] == 1
        once = reconciles(cluster, namespace, "sample-hpa", "FailedRescale")
        poll(lambda: reconciles(cluster, namespace, "sample-hpa", "FailedRescale") > once, 40, "the refused scale tried again")
        assert cluster.get_ms(namespace, "sample")["spec"]["replicas"] == 1
    poll(lambda: cluster.get_ms(namespace, "sample")["spec"]["replicas"] == 2, 60, "the ModelServing scaled once we are back")
    scaled = poll(
        lambda: (c := cluster.hpa_conditions(namespace, "sample-hpa").get("AbleToScale", {})).get("reason") == "SucceededRescale" and c,
        30,
        "the HPA able to scale",
    )
    print(f"\nrefused while we were down: {refused['message']}\nonce back: {scaled['message']}")
