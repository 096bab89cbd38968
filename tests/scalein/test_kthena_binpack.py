"""`plan` ranks a ModelServing's ServingGroups and Role replicas as Kthena's binpack scale-down
does (kthena 3cc05728 `pkg/model-serving-controller/controller/binpack_scaledown.go`,
scaleDownServingGroups and scaleDownRoles in `model_serving_controller.go`): costs read with
strconv.Atoi and summed over every pod Kthena's index holds, not-Running groups first with
Running as its datastore derives it, the first `partition` groups protected, Deleting roles
skipped, the higher index first on a tie."""

from __future__ import annotations

import json

import pytest
from support import REPO
from support.commands import run_webhook

from webhook.kthena import LABEL_GROUP, LABEL_NAME, LABEL_ROLE, LABEL_ROLE_ID, MODELSERVING_API_VERSION
from webhook.scalein import binpack, goints
from webhook.scalein.plan import planning
from webhook.scalein.plan.ranking import Workload, build_plan
from webhook.scalein.settings import COST_KEY, ScoringSettings

ASCEND = "huawei.com/Ascend910"
NODES = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {}}, "status": {"allocatable": {ASCEND: "8"}}} for i in range(4)]


def kpod(
    group: str,
    rid: str = "decode-0",
    *,
    worker: int = 0,
    node: str = "n0",
    npus: int = 1,
    phase: str = "Running",
    ready: bool = True,
    cost: str | None = None,
    terminating: bool = False,
    restarts: int = 0,
    ms: str = "llm",
    owned: bool = True,
) -> dict:
    """A pod as Kthena's ModelServing controller makes it (labels, controller reference)."""
    role = rid.rsplit("-", 1)[0]
    name = f"{group}-{rid}-{worker}"
    meta: dict = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "resourceVersion": "1",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {LABEL_NAME: ms, LABEL_GROUP: group, LABEL_ROLE: role, LABEL_ROLE_ID: rid},
    }
    if owned:
        meta["ownerReferences"] = [{"apiVersion": MODELSERVING_API_VERSION, "kind": "ModelServing", "name": ms, "controller": True}]
    if cost is not None:
        meta["annotations"] = {COST_KEY: cost}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    resources = {"requests": {"cpu": "1", **({ASCEND: str(npus)} if npus else {})}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": resources}]},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def modelserving(replicas: int = 2, partition=None, roles: list[dict] | None = None, rollout: str | None = None, name: str = "llm") -> dict:
    spec: dict = {"replicas": replicas, "template": {"roles": roles or [{"name": "decode", "replicas": 1, "workerReplicas": 0}]}}
    if partition is not None or rollout is not None:
        spec["rolloutStrategy"] = {"type": rollout or "ServingGroupRollingUpdate"}
        if partition is not None:
            spec["rolloutStrategy"]["rollingUpdateConfiguration"] = {"partition": partition}
    return {"apiVersion": MODELSERVING_API_VERSION, "kind": "ModelServing", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def plan_of(pods: list[dict], modelservings: list[dict] | None = None, **settings) -> Workload:
    """The ModelServing's ranked workload. `wl`: costs other writers set are kept, so the test
    decides every pod's cost (the reconciler's own values would replace unannotated ones)."""
    cluster = planning.make_cluster(ScoringSettings(**{"scale_in_priority": "wl", **settings}), NODES, pods, None, modelservings)
    (w,) = [w for w in build_plan(cluster) if w.kind == "ModelServing"]
    return w


def order(w: Workload) -> list[str]:
    return [u.name for u in w.units]


# ---- costs as strconv.Atoi reads them -------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, kthena, kube",
    [
        ("5", 5, 5),
        ("+5", 5, None),
        ("007", 7, None),
        ("-3", -3, -3),
        ("-007", -7, -7),  # the API server's reader takes it too
        ("-0", 0, 0),
        (" 5", None, None),
        ("5 ", None, None),
        ("", None, None),
        ("+", None, None),
        ("5_000", None, None),
        ("٣", None, None),  # a digit, but not an ASCII one
        ("2147483648", 2147483648, None),  # beyond int32: Kthena's int has 64 bits
        ("9223372036854775807", 9223372036854775807, None),
        ("9223372036854775808", None, None),  # overflow: unparsable, so 0
    ],
)
def test_costs_are_read_as_each_controller_reads_them(raw, kthena, kube):
    assert goints.kthena_cost(raw) == kthena
    assert goints.parse_cost(raw) == kube


def test_a_cost_kthena_reads_and_the_api_server_would_not_counts_in_the_sum():
    # llm-0 "+5" and llm-1 "007" are 5 and 7 to Kthena; llm-2 costs 6: llm-0 goes first, llm-1 last
    w = plan_of([kpod("llm-0", cost="+5"), kpod("llm-1", cost="007", node="n1"), kpod("llm-2", cost="6", node="n2")])
    assert order(w) == ["llm-0", "llm-2", "llm-1"]
    assert [u.cost for u in w.units] == [5, 6, 7]


def test_sums_wrap_as_go_ints_do():
    assert goints.go_sum([2**62, 2**62]) == -(2**63)
    assert goints.go_sum([-(2**63), -1]) == 2**63 - 1
    assert goints.go_sum([3, -5]) == -2


# ---- every pod Kthena's index holds counts ------------------------------------------------------------


def test_terminating_failed_and_succeeded_pods_count_in_the_sums():
    pods = [
        kpod("llm-0", "decode-0", cost="-10"),
        kpod("llm-0", "decode-0", worker=1, cost="100", terminating=True),  # still in the index
        kpod("llm-1", "decode-0", node="n1", cost="-10"),
        kpod("llm-1", "decode-0", worker=1, node="n1", cost="50", phase="Succeeded"),
        kpod("llm-2", "decode-0", node="n2", cost="-10"),
    ]
    w = plan_of(pods)
    assert {u.name: u.cost for u in w.units} == {"llm-0": 90, "llm-1": 40, "llm-2": -10}


def test_a_group_pod_without_accelerators_counts_too():
    pods = [kpod("llm-0", cost="-10"), kpod("llm-0", "router-0", npus=0, cost="20"), kpod("llm-1", node="n1", cost="-5")]
    w = plan_of(pods)
    assert {u.name: u.cost for u in w.units} == {"llm-0": 10, "llm-1": -5}
    assert order(w) == ["llm-1", "llm-0"]


def test_groups_with_no_live_pods_or_already_deleting_come_first():
    pods = [
        kpod("llm-0", cost="-100"),
        kpod("llm-1", node="n1", cost="50", terminating=True),  # every pod being deleted: Deleting
        kpod("llm-2", node="n2", cost="60", phase="Failed"),  # no live pod
        kpod("llm-3", node="n3", cost="70", phase="Succeeded"),  # no live pod either
        kpod("llm-4", node="n3", cost="-200"),
    ]
    w = plan_of(pods)
    assert order(w) == ["llm-1", "llm-2", "llm-3", "llm-4", "llm-0"]
    assert [u.status for u in w.units] == [binpack.DELETING, binpack.NOT_RUNNING, binpack.NOT_RUNNING, binpack.RUNNING, binpack.RUNNING]


# ---- Running as Kthena's datastore derives it ------------------------------------------------------


@pytest.mark.parametrize(
    "change, running",
    [
        ({"ready": False}, True),  # an unready pod sends no event that moves the group
        ({"phase": "Succeeded"}, True),
        ({"restarts": 2}, True),  # restarted, but running and ready again: handleReadyPod
        ({"restarts": 2, "ready": False}, False),  # ContainerRestarted and not ready: handleErrorPod
        ({"phase": "Failed"}, False),
        ({"phase": "Pending", "ready": False}, False),
        # deleted beside a live pod of its role replica: not by Kthena, which has not seen it (updatePod
        # skips a pod with a deletionTimestamp); shown on the real controller by tests/e2e
        ({"terminating": True}, True),
        ({"terminating": True, "phase": "Pending", "ready": False}, False),  # as Kthena saw it before
    ],
)
def test_running_is_the_servinggroup_status_kthena_keeps(change, running):
    pods = [kpod("llm-0", cost="100"), kpod("llm-0", "decode-0", worker=1, cost="0", **change)]
    pods += [kpod("llm-1", node="n1", cost="10"), kpod("llm-1", "decode-0", worker=1, node="n1", cost="0")]
    spec = modelserving(roles=[{"name": "decode", "replicas": 1, "workerReplicas": 1}])
    w = plan_of(pods, [spec])
    assert {u.name: u.running for u in w.units} == {"llm-0": running, "llm-1": True}
    assert order(w) == (["llm-1", "llm-0"] if running else ["llm-0", "llm-1"])  # a Running llm-0 goes by its higher cost


def test_a_role_replica_whose_pods_are_all_being_deleted_is_kthenas_deletion():
    """DeleteRole deletes every pod of a role replica at once: the group is not Running; one pod of
    each of two role replicas deleted by someone else moves nothing."""
    roles = [{"name": "decode", "replicas": 2, "workerReplicas": 1}]
    pods = [kpod("llm-0", rid, worker=k, terminating=rid == "decode-1") for rid in ("decode-0", "decode-1") for k in (0, 1)]
    pods += [kpod("llm-1", rid, worker=k, node="n1", terminating=k == 1) for rid in ("decode-0", "decode-1") for k in (0, 1)]
    w = plan_of(pods, [modelserving(roles=roles)])
    assert {u.name: (u.status, u.why) for u in w.units} == {
        "llm-0": (binpack.NOT_RUNNING, "pod llm-0-decode-1-0 being deleted"),
        "llm-1": (binpack.RUNNING, ""),
    }


def test_with_the_modelserving_a_group_missing_role_replicas_is_not_running():
    roles = [{"name": "decode", "replicas": 2, "workerReplicas": 0}, {"name": "prefill", "replicas": 1, "workerReplicas": 1}]
    whole = [kpod("llm-0", "decode-0"), kpod("llm-0", "decode-1"), kpod("llm-0", "prefill-0"), kpod("llm-0", "prefill-0", worker=1)]
    short = [kpod("llm-1", "decode-0", node="n1"), kpod("llm-1", "prefill-0", node="n1"), kpod("llm-1", "prefill-0", worker=1, node="n1")]
    w = plan_of(whole + short, [modelserving(roles=roles)])
    assert {u.name: u.status for u in w.units} == {"llm-0": binpack.RUNNING, "llm-1": binpack.NOT_RUNNING}
    without = plan_of(whole + short)  # without the ModelServing, the pods alone
    assert {u.name: u.status for u in without.units} == {"llm-0": binpack.RUNNING, "llm-1": binpack.RUNNING}


# ---- partition -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "partition, replicas, protected", [(1, 3, ["llm-0"]), ("50%", 3, ["llm-0", "llm-1"]), (0, 3, []), ("x", 3, []), (5, 3, ["llm-0", "llm-1", "llm-2"])]
)
def test_the_first_partition_groups_are_protected(partition, replicas, protected):
    pods = [kpod("llm-0", cost="-300"), kpod("llm-1", node="n1", cost="-200"), kpod("llm-2", node="n2", cost="-100")]
    w = plan_of(pods, [modelserving(replicas=replicas, partition=partition)])
    assert [u.name for u in w.units if u.protected] == protected
    rest = [n for n in ["llm-0", "llm-1", "llm-2"] if n not in protected]
    assert order(w) == rest + protected


def test_without_the_modelserving_no_group_is_protected():
    pods = [kpod("llm-0", cost="-300"), kpod("llm-1", node="n1", cost="-200")]
    assert order(plan_of(pods)) == ["llm-0", "llm-1"]


# ---- roles --------------------------------------------------------------------------------------------


def test_roles_are_ordered_the_same_way_deleting_ones_skipped_and_the_higher_index_first():
    pods = [
        kpod("llm-0", "decode-0", cost="-5"),
        kpod("llm-0", "decode-1", cost="-5"),  # ties decode-0: the higher index first
        kpod("llm-0", "decode-2", cost="-1", ready=False, restarts=1),  # not Running: first
        kpod("llm-0", "decode-3", cost="-50", terminating=True),  # Deleting: skipped
    ]
    w = plan_of(pods)
    assert [r.name for r in w.units[0].roles] == ["decode-2", "decode-1", "decode-0"]


def test_a_role_partition_protects_under_role_rolling_update_only():
    roles = [{"name": "decode", "replicas": 3, "workerReplicas": 0, "partition": 1}]
    pods = [kpod("llm-0", "decode-0", cost="-30"), kpod("llm-0", "decode-1", cost="-20"), kpod("llm-0", "decode-2", cost="-10")]
    rolling = plan_of(pods, [modelserving(replicas=1, roles=roles, rollout="RoleRollingUpdate")])
    assert [r.name for r in rolling.units[0].roles] == ["decode-1", "decode-2", "decode-0"]
    assert [r.protected for r in rolling.units[0].roles] == [False, False, True]
    by_group = plan_of(pods, [modelserving(replicas=1, roles=roles)])
    assert [r.name for r in by_group.units[0].roles] == ["decode-0", "decode-1", "decode-2"]


# ---- the snapshot and the command ---------------------------------------------------------------------


def test_plan_reads_modelservings_from_either_snapshot_form(tmp_path):
    pods = [kpod("llm-0", cost="-300"), kpod("llm-1", node="n1", cost="-200"), kpod("llm-2", node="n2", cost="-100")]
    ms = modelserving(replicas=3, partition=1)
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": NODES + pods + [ms]}))
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"nodes": {"items": NODES}, "pods": {"items": pods}, "modelservings": {"apiVersion": "v1", "kind": "List", "items": [ms]}}))
    for path in (listed, keyed):
        snap = planning.load_snapshot(str(path))
        assert [m["metadata"]["name"] for m in snap.modelservings] == ["llm"]
        r = run_webhook(["plan", "--snapshot", str(path), "--scale-in-priority", "wl", "--output", "json"], cwd=REPO, timeout=120)
        assert r.returncode == 0, r.stderr
        (w,) = json.loads(r.stdout)["workloads"]
        assert [(u["name"], u["protected"]) for u in w["order"]] == [("llm-1", False), ("llm-2", False), ("llm-0", True)]
