"""Scenario 1, gang scheduling: Kthena's gang example (with NPUs asked for) goes from apply through
Kthena's controller, our webhook and Volcano's scheduler to running pods, as one gang; with nodes for
fewer pods than the gang minimum no pod of it is bound, and our warning at apply named the shortfall."""

from __future__ import annotations

import time

import pytest
from support.e2e import NODE_OWNER, NPU, Cluster, OurWebhook, gang_example, poll, running_ready

KTHENA_LABELS = ("modelserving.volcano.sh/name", "modelserving.volcano.sh/group-name", "modelserving.volcano.sh/role", "modelserving.volcano.sh/role-id")
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_ANNOTATION = "volcano.sh/task-spec"


def podgroup(cluster: Cluster, ns: str, name: str) -> dict:
    def found() -> dict | None:
        return next((pg for pg in cluster.podgroups(ns) if pg["metadata"]["name"] == name), None)

    return poll(found, 60, f"Kthena's PodGroup {ns}/{name}")  # type: ignore[no-any-return]


def test_the_gang_example_runs_as_one_gang(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok")
    for i in range(2):
        cluster.node(f"{namespace}-n{i}", namespace, npu=8)
    reviewed = servinggate.metric("servinggate_admission_requests", resource="pods", operation="CREATE", allowed="true")
    status, _, warnings = cluster.apply_warnings(namespace, gang_example(namespace, npu=2))
    assert status == 201, warnings
    assert not [w for w in warnings if "could never" in w], warnings  # 16 NPUs asked, 16 there

    pg = podgroup(cluster, namespace, "sample-0")
    assert pg["spec"]["minMember"] == 6  # (1 + 1 worker) x (prefill 2 + decode 1)
    sub = {p["name"]: p for p in pg["spec"].get("subGroupPolicy") or []}
    assert {r: sub[r]["minSubGroups"] for r in sub} == {"prefill": 2, "decode": 1}
    assert all(p["subGroupSize"] == 2 and p["matchLabelKeys"] == ["modelserving.volcano.sh/role-id"] for p in sub.values())

    pods = poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 8 and all(map(running_ready, ps)) and ps, 180, "8 pods Running and Ready")
    for pod in pods:
        labels, notes = pod.metadata.labels, pod.metadata.annotations or {}
        assert all(labels.get(k) for k in KTHENA_LABELS), (pod.metadata.name, labels)
        assert notes.get(GROUP_ANNOTATION) == "sample-0" and notes.get(TASK_ANNOTATION) == labels["modelserving.volcano.sh/role-id"], notes
        assert pod.spec.scheduler_name == "volcano" and pod.spec.node_name.startswith(namespace)
    # our mutating webhook saw every pod Kthena created, and each is as pods.gang-labels wants it
    assert servinggate.metric("servinggate_admission_requests", resource="pods", operation="CREATE", allowed="true") - reviewed >= 8
    by_node: dict[str, int] = {}
    for pod in pods:
        by_node[pod.spec.node_name] = by_node.get(pod.spec.node_name, 0) + 2
    assert sorted(by_node.values()) == [8, 8]  # every NPU of both nodes taken, by the one gang


# Our warning weighs the gang against every NPU node of the cluster, so no other test's nodes may
# exist meanwhile: beside other tests' nodes it would wait for "only this test's NPU node" in vain.
@pytest.mark.cluster_to_itself
def test_too_few_nodes_bind_none_of_the_gang_and_the_apply_warned(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok")
    cluster.node(f"{namespace}-n0", namespace, npu=8)  # 4 pods of 2 NPUs; the gang minimum is 6
    # our webhook reads nodes from a watch: wait until it has seen the earlier tests' nodes go
    poll(
        lambda: not [n for n in cluster.core.list_node().items if NPU in (n.status.allocatable or {}) and n.metadata.labels.get(NODE_OWNER) != namespace],
        60,
        "only this test's NPU node",
    )
    poll(lambda: [w for w in cluster.apply_warnings(namespace, gang_example(namespace, npu=2), dry_run=True)[2] if NPU in w], 30, "the warning on a dry run")
    status, _, warnings = cluster.apply_warnings(namespace, gang_example(namespace, npu=2))
    assert status == 201
    shortfall = [w for w in warnings if NPU in w]
    assert shortfall, warnings
    assert "12" in shortfall[0] and "8" in shortfall[0], shortfall  # the gang's 12 NPUs against the 8 there are

    podgroup(cluster, namespace, "sample-0")
    poll(lambda: len(cluster.pods(namespace)) == 8, 60, "Kthena's 8 pods")
    time.sleep(15)  # several scheduling cycles of Volcano (1 s each by default)
    bound = [p.metadata.name for p in cluster.pods(namespace) if p.spec.node_name]
    assert bound == [], bound
    pg = next(pg for pg in cluster.podgroups(namespace) if pg["metadata"]["name"] == "sample-0")
    assert (pg.get("status") or {}).get("phase") in ("Pending", "Inqueue", None), pg.get("status")
