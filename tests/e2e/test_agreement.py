"""Scenario 6, differences of issue 36 ("Agree with Kthena and Volcano") shown on the stack:

- an opt-in gang (`servinggate.io/gang`) named like a ServingGroup survives Kthena deleting that
  ServingGroup (Kthena deletes pods by the `modelserving.volcano.sh/group-name` label alone,
  `deleteServingGroup` in model_serving_controller.go);
- `plan` names the ServingGroup Kthena removes when a `partition` protects the first groups
  (binpack_scaledown.go skips the first `partition` groups).

Both fail until the fixes of issue 36 (the branches agree-pods and agree-topo) are merged."""

from __future__ import annotations

import time

from support.e2e import NODE_OWNER, NPU, Cluster, OurReconciler, OurWebhook, modelserving, plan, poll, role, running_ready

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
