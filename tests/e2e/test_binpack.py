"""Scenario 2, binpack scale-down: two ServingGroups of prefill and decode on NPU nodes of different
fill. `plan --kubeconfig` names the ServingGroup, then the role, a scale-in removes; with our
reconciler writing the costs, Kthena's controller removes exactly those, in each of five fills."""

from __future__ import annotations

import random

import pytest
from support.e2e import COST, NODE_OWNER, NPU, Cluster, OurReconciler, OurWebhook, modelserving, plan, poll, role, running_ready

GROUP = "modelserving.volcano.sh/group-name"
ROLE_ID = "modelserving.volcano.sh/role-id"
NODES, NPUS, PER_POD = 4, 8, 2


def serving(owner: str) -> dict:
    sel = {NODE_OWNER: owner}
    roles = [role("prefill", replicas=2, npu=PER_POD, node_selector=sel), role("decode", replicas=2, npu=PER_POD, node_selector=sel)]
    return modelserving("llm", 2, roles)


def filler(name: str, node: str, npus: int) -> dict:
    """A bare pod placed by name (no scheduler): it only takes NPUs on one node."""
    res = {NPU: str(npus), "cpu": "100m"}
    return {
        "metadata": {"name": name, "labels": {"app": "filler"}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/filler:1", "resources": {"requests": res, "limits": res}}]},
    }


def fill(cluster: Cluster, ns: str, draw: random.Random, k: int) -> dict[str, int]:
    """Fill each node's free NPUs partly, at random: a different fill each round."""
    used: dict[str, int] = {}
    for pod in cluster.pods(ns):
        if pod.spec.node_name:
            used[pod.spec.node_name] = used.get(pod.spec.node_name, 0) + PER_POD
    added: dict[str, int] = {}
    for i in range(NODES):
        node = f"{ns}-n{i}"
        free = NPUS - used.get(node, 0)
        take = draw.randint(0, free)
        if take:
            cluster.core.create_namespaced_pod(ns, filler(f"fill-{k}-{i}", node, take))
            added[node] = take
    poll(lambda: all(running_ready(p) for p in cluster.pods(ns, "app=filler")), 60, "fillers running")
    return added


def costs_written(cluster: Cluster, ns: str, wanted: dict[str, int]) -> bool:
    got = {p.metadata.name: (p.metadata.annotations or {}).get(COST) for p in cluster.pods(ns, "modelserving.volcano.sh/name=llm")}
    return all(got.get(name) == str(cost) for name, cost in wanted.items())


def planned(cluster: Cluster, ns: str) -> dict:
    listed = plan(cluster, f"{ns}/llm")["workloads"]
    ours = [w for w in listed if w["kind"] == "ModelServing" and w["namespace"] == ns and w["name"] == "llm"]
    assert len(ours) == 1, [(w["kind"], w["namespace"], w["name"]) for w in listed]
    return ours[0]  # type: ignore[no-any-return]


def group_pods(cluster: Cluster, ns: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in cluster.pods(ns, "modelserving.volcano.sh/name=llm"):
        if p.metadata.deletion_timestamp is None:
            out.setdefault(p.metadata.labels[GROUP], set()).add(p.metadata.labels[ROLE_ID])
    return out


@pytest.mark.parametrize("k", range(5))
def test_kthena_removes_the_group_and_the_role_plan_names(
    cluster: Cluster, need, servinggate: OurWebhook, reconciler: OurReconciler, namespace: str, k: int
) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok")
    for i in range(NODES):
        cluster.node(f"{namespace}-n{i}", namespace, npu=NPUS)
    cluster.create_ms(namespace, serving(namespace))
    poll(lambda: (ps := cluster.pods(namespace)) and len(ps) == 8 and all(map(running_ready, ps)), 180, "8 pods Running")
    fill(cluster, namespace, random.Random(1000 + k), k)

    # the ServingGroup: plan's first, once our reconciler has written the costs plan shows
    workload = planned(cluster, namespace)
    first = workload["order"][0]
    poll(lambda: costs_written(cluster, namespace, {p["pod"].split("/")[1]: p["cost"] for g in workload["order"] for p in g["pods"]}), 60, "costs written")
    cluster.patch_ms(namespace, "llm", {"spec": {"replicas": 1}})
    left = poll(lambda: (g := group_pods(cluster, namespace)) and len(g) == 1 and g, 120, "one ServingGroup left")
    assert set(left) == {g["name"] for g in workload["order"][1:]}, (first["name"], left)

    # the role: prefill 2 -> 1 in the group that is left
    # plan counts the removed group's terminating pods as Kthena's index does (issue 36), so it lists
    # that group, Deleting, until its pods are gone
    workload = poll(lambda: (w := planned(cluster, namespace)) and len(w["order"]) == 1 and w, 60, "plan without the removed group")
    (group,) = workload["order"]
    doomed = next(r["name"] for r in group["roles"] if r["name"].startswith("prefill-"))
    poll(lambda: costs_written(cluster, namespace, {p["pod"].split("/")[1]: p["cost"] for p in group["pods"]}), 60, "costs written")
    ms = cluster.get_ms(namespace, "llm")
    index = next(i for i, r in enumerate(ms["spec"]["template"]["roles"]) if r["name"] == "prefill")
    cluster.patch_ms(namespace, "llm", [{"op": "replace", "path": f"/spec/template/roles/{index}/replicas", "value": 1}], kind="json")
    roles = poll(lambda: (g := group_pods(cluster, namespace)) and sum(r.startswith("prefill-") for r in g[group["name"]]) == 1 and g, 120, "one prefill left")
    assert doomed not in roles[group["name"]], (doomed, roles)
