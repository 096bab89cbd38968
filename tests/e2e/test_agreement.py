"""Scenario 6, differences of issue 36 ("Agree with Kthena and Volcano") shown on the stack:

- an opt-in gang (`servinggate.io/gang`) named like a ServingGroup survives Kthena deleting that
  ServingGroup (Kthena deletes pods by the `modelserving.volcano.sh/group-name` label alone,
  `deleteServingGroup` in model_serving_controller.go);
- `plan` names the ServingGroup Kthena removes when a `partition` protects the first groups
  (binpack_scaledown.go skips the first `partition` groups);
- `plan` names the ServingGroup Kthena removes while a pod of another group is terminating;
- a ModelServing whose schedulerName is not `volcano` (`default-scheduler`, or an explicit empty
  one the CRD does not default) gets no PodGroup from Kthena, so its pods get no PodGroup
  annotation and no scheduler change from us: the default scheduler binds them and they run.

The first two failed before the fixes of issue 36."""

from __future__ import annotations

import time

import pytest
from support.e2e import COST, NODE_OWNER, NPU, Cluster, OurReconciler, OurWebhook, hold, modelserving, plan, poll, release, role, running_ready

GROUP = "modelserving.volcano.sh/group-name"


def bare(name: str, node: str, labels: dict[str, str], npus: int) -> dict:
    res = {NPU: str(npus), "cpu": "100m"}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/x:1", "resources": {"requests": res, "limits": res}}]},
    }


def test_an_opt_in_gang_named_like_a_serving_group_survives_its_deletion(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok")
    node = cluster.node(f"{namespace}-n0", namespace, npu=8)
    cluster.create_ms(namespace, modelserving("llm", 1, [role("prefill", npu=1, node_selector={NODE_OWNER: namespace})]))
    poll(lambda: (ps := cluster.pods(namespace, f"{GROUP}=llm-0")) and all(map(running_ready, ps)), 120, "llm-0 running")
    for i in range(2):
        cluster.core.create_namespaced_pod(namespace, bare(f"mine-{i}", node, {"servinggate.io/gang": "llm-0", "app": "mine"}, 1))
    poll(lambda: (ps := cluster.pods(namespace, "app=mine")) and len(ps) == 2 and all(map(running_ready, ps)), 60, "opt-in pods running")
    cluster.scale_ms(namespace, "llm", 0)
    poll(lambda: not [p for p in cluster.pods(namespace, "modelserving.volcano.sh/name=llm")], 120, "Kthena's pods of llm-0 gone")
    time.sleep(5)
    mine = [p.metadata.name for p in cluster.pods(namespace, "app=mine") if p.metadata.deletion_timestamp is None]
    assert mine == ["mine-0", "mine-1"], mine


def test_plan_names_the_group_kthena_removes_under_a_partition(
    cluster: Cluster, need, servinggate: OurWebhook, reconciler: OurReconciler, namespace: str
) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok")
    for i in range(4):
        cluster.node(f"{namespace}-n{i}", namespace, npu=6)  # one 4-NPU pod per node, 2 NPUs left on each
    sel = {NODE_OWNER: namespace}
    rollout = {"rolloutStrategy": {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"partition": 1}}}
    roles = [role("prefill", npu=4, node_selector=sel), role("decode", npu=4, node_selector=sel)]
    cluster.create_ms(namespace, modelserving("llm", 2, roles, **rollout))
    pods = poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 4 and all(map(running_ready, ps)) and ps, 180, "4 pods running")
    # llm-1's nodes full, llm-0's with idle NPUs: without the partition llm-0 would go first
    for pod in pods:
        if pod.metadata.labels[GROUP] == "llm-1":
            cluster.core.create_namespaced_pod(namespace, bare(f"fill-{pod.spec.node_name}", pod.spec.node_name, {"app": "filler"}, 2))
    poll(lambda: (ps := cluster.pods(namespace, "app=filler")) and len(ps) == 2 and all(map(running_ready, ps)), 60, "fillers running")
    (workload,) = plan(cluster, f"{namespace}/llm")["workloads"]
    named = workload["order"][0]["name"]
    time.sleep(10)  # our reconciler's costs
    cluster.patch_ms(namespace, "llm", {"spec": {"replicas": 1}})
    left = poll(
        lambda: (
            (g := {p.metadata.labels[GROUP] for p in cluster.pods(namespace, "modelserving.volcano.sh/name=llm") if p.metadata.deletion_timestamp is None})
            and len(g) == 1
            and g
        ),
        120,
        "one group left",
    )
    assert named not in left, (named, left)


@pytest.mark.parametrize("scheduler", ["default-scheduler", ""])
def test_pods_of_another_scheduler_are_not_stranded(cluster: Cluster, need, servinggate: OurWebhook, namespace: str, scheduler: str) -> None:
    need("kthena", "kube-scheduler", "kwok")
    cluster.node(f"{namespace}-n0", namespace, npu=8)
    sel = {NODE_OWNER: namespace}
    roles = [role("prefill", workers=1, npu=1, node_selector=sel), role("decode", npu=1, node_selector=sel)]
    status, body, _ = cluster.apply_warnings(namespace, modelserving("llm", 1, roles, scheduler=scheduler))
    assert status == 201, body
    assert cluster.get_ms(namespace, "llm")["spec"]["schedulerName"] == scheduler  # the CRD defaults only an absent field
    pods = poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 3 and all(map(running_ready, ps)) and ps, 120, "3 pods Running")
    for pod in pods:
        assert pod.spec.scheduler_name == "default-scheduler", pod.metadata.name  # not switched to volcano
        assert "scheduling.k8s.io/group-name" not in (pod.metadata.annotations or {}), pod.metadata.name
        assert pod.metadata.labels[GROUP] == "llm-0"  # Kthena's labels, as it made them
    assert cluster.podgroups(namespace) == []  # Kthena makes none for another scheduler: nothing for Volcano to wait on
    # the default scheduler bound them (Volcano takes only schedulerName volcano)
    events = cluster.core.list_namespaced_event(namespace, field_selector="reason=Scheduled").items
    assert {e.involved_object.name for e in events if e.reporting_component == "default-scheduler" or e.source.component == "default-scheduler"} == {
        p.metadata.name for p in pods
    }


def live_groups(cluster: Cluster, ns: str) -> set[str]:
    """The ServingGroups with a pod not being deleted."""
    return {p.metadata.labels[GROUP] for p in cluster.pods(ns, "modelserving.volcano.sh/name=llm") if p.metadata.deletion_timestamp is None}


def test_plan_names_the_group_kthena_removes_while_pods_are_terminating(
    cluster: Cluster, need, servinggate: OurWebhook, reconciler: OurReconciler, namespace: str
) -> None:
    """A worker of the group `plan` would remove last is deleted and kept terminating (a finalizer, as
    a grace period would): `plan` then names the group Kthena's controller removes on a scale-in."""
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok", "held-pods")
    for i in range(3):
        cluster.node(f"{namespace}-n{i}", namespace, npu=8)
    sel = {NODE_OWNER: namespace}
    cluster.create_ms(namespace, modelserving("llm", 3, [role("prefill", workers=1, npu=2, node_selector=sel)]))
    pods = poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 6 and all(map(running_ready, ps)) and ps, 180, "6 pods Running")
    (workload,) = plan(cluster, f"{namespace}/llm")["workloads"]
    last = workload["order"][-1]["name"]
    victim = max(p.metadata.name for p in pods if p.metadata.labels[GROUP] == last)  # the worker, <group>-prefill-0-1
    hold(cluster, namespace, [victim])
    try:
        cluster.core.delete_namespaced_pod(victim, namespace)
        poll(lambda: cluster.core.read_namespaced_pod(victim, namespace).metadata.deletion_timestamp, 30, f"{victim} terminating")
        (workload,) = plan(cluster, f"{namespace}/llm")["workloads"]
        named = workload["order"][0]["name"]
        wanted = {p["pod"].split("/")[1]: p["cost"] for g in workload["order"] for p in g["pods"] if p["pod"].split("/")[1] != victim}

        def written() -> bool:
            got = {p.metadata.name: (p.metadata.annotations or {}).get(COST) for p in cluster.pods(namespace)}
            return all(got.get(name) == str(cost) for name, cost in wanted.items())

        poll(written, 60, "costs written")
        cluster.patch_ms(namespace, "llm", {"spec": {"replicas": 2}})
        left = poll(lambda: (g := live_groups(cluster, namespace)) and len(g) == 2 and g, 120, "two groups left")
        time.sleep(3)  # nothing else goes
        assert live_groups(cluster, namespace) == left
        assert named not in left, (named, last, left)
    finally:
        release(cluster, namespace)
