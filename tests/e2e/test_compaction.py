"""Scenario 4, pod compaction: a Deployment of NPU pods placed by Volcano, two on each of two nodes,
one node full and one with idle NPUs. With our reconciler writing pod-deletion-cost, the ReplicaSet
controller's scale-in removes the two on the node with idle NPUs."""

from __future__ import annotations

from support.e2e import COST, NODE_OWNER, NPU, Cluster, OurReconciler, poll, running_ready


def deployment(owner: str, replicas: int) -> dict:
    res = {NPU: "3", "cpu": "100m"}
    return {
        "metadata": {"name": "infer"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "infer"}},
            "template": {
                "metadata": {"labels": {"app": "infer"}},
                "spec": {
                    "schedulerName": "volcano",
                    "nodeSelector": {NODE_OWNER: owner},
                    "containers": [{"name": "c", "image": "registry.example/infer:1", "resources": {"requests": res, "limits": res}}],
                },
            },
        },
    }


def test_scale_in_empties_the_node_with_idle_npus(cluster: Cluster, need, reconciler: OurReconciler, namespace: str) -> None:
    need("volcano-controllers", "volcano-scheduler", "kwok")
    full, idle = cluster.node(f"{namespace}-full", namespace, npu=6), cluster.node(f"{namespace}-idle", namespace, npu=8)
    cluster.apps.create_namespaced_deployment(namespace, deployment(namespace, 4))
    pods = poll(lambda: (ps := cluster.pods(namespace, "app=infer")) and len(ps) == 4 and all(map(running_ready, ps)) and ps, 180, "4 pods Running")
    assert sorted(p.spec.node_name for p in pods) == sorted([full, full, idle, idle])  # 3 NPUs each: two fit on either node

    seen: list[dict[str, str]] = []

    def ordered() -> bool:
        # The reconciler scores a pod as its events come: one scored before the other pod of its
        # node was bound has the cost of a half-empty node until it is scored again (within a
        # second), so the first moment every pod has a cost need not be the settled one.
        now = cluster.pods(namespace, "app=infer")
        got = {f"{p.spec.node_name}/{p.metadata.name}": c for p in now if (c := (p.metadata.annotations or {}).get(COST))}
        if len(got) < len(now):
            return False
        seen.append(got)
        on_idle = [int(v) for k, v in got.items() if k.startswith(idle + "/")]
        on_full = [int(v) for k, v in got.items() if k.startswith(full + "/")]
        return max(on_idle) < min(on_full)

    try:
        poll(ordered, 60, "lower deletion costs on the node with idle NPUs")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the costs last seen: {seen[-1] if seen else None}") from None
    cluster.apps.patch_namespaced_deployment_scale(namespace=namespace, name="infer", body={"spec": {"replicas": 2}})
    left = poll(
        lambda: (ps := [p for p in cluster.pods(namespace, "app=infer") if p.metadata.deletion_timestamp is None]) and len(ps) == 2 and ps, 60, "2 pods left"
    )
    assert [p.spec.node_name for p in left] == [full, full], [(p.metadata.name, p.spec.node_name) for p in left]
