"""Scoring on the real snapshots, and the properties the cost formula promises."""

from __future__ import annotations

import itertools

import pytest

from webhook.kthena import LABEL_GROUP as MS_GROUP
from webhook.kthena import LABEL_ROLE as MS_ROLE
from webhook.kthena import LABEL_ROLE_ID as MS_ROLE_ID
from webhook.scalein import accounting, costs, decisions, goints
from webhook.scalein.cluster import Cluster, WorkloadTypes
from webhook.scalein.plan import planning
from webhook.scalein.settings import REMOVE_LAST_KEY, ScoringSettings

ASCEND = "huawei.com/Ascend910"


def cluster_of(snapshot: dict, **kw) -> Cluster:
    return planning.make_cluster(ScoringSettings(**kw), snapshot["nodes"]["items"], snapshot["pods"]["items"])


def node(name: str, npus: int, res: str = ASCEND) -> dict:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "96", res: str(npus)}}}


def pod(name: str, node_name: str, npus: int, *, owner=("apps/v1", "ReplicaSet", "rs"), phase="Running", res=ASCEND, **extra) -> dict:
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2], "controller": True}]
    spec = {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {res: str(npus)}, "limits": {res: str(npus)}}}]}
    spec.update(extra)
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def build(nodes, pods, **kw) -> Cluster:
    c = Cluster(ScoringSettings(**kw), WorkloadTypes())
    c.replace_nodes(nodes)
    c.replace_pods(pods)
    return c


# ---- the real fixtures ------------------------------------------------------------------------


def test_s1_removes_deploy1_pods_on_the_node_with_idle_npus_first(s1):
    c = cluster_of(s1)
    plan = {w.label.split()[1]: w for w in planning.build_plan(c)}
    order = [u.entries[0].pod for u in plan["deploy1"].units]
    assert [p.node for p in order] == ["node-b", "node-b", "node-a", "node-a"]
    unit_costs = [u.cost for u in plan["deploy1"].units]
    assert unit_costs[0] < unit_costs[2] and unit_costs[1] < unit_costs[3]
    usage = {r["node"]: r for r in planning.node_usage(c, [plan["deploy1"]], 2)}
    assert (usage["node-b"]["before"], usage["node-b"]["after"]) == (4, 2)  # 6 idle after
    assert usage["node-a"]["after"] == usage["node-a"]["before"] == 4


def test_s2_kthena_sum_ranks_sample_1_below_sample_0(s2):
    c = cluster_of(s2)
    ms = next(w for w in planning.build_plan(c) if w.kind == "ModelServing")
    assert [u.name for u in ms.units] == ["sample-1", "sample-0"]
    sums = {u.name: u.cost for u in ms.units}
    desired = c.desired_all()
    for u in ms.units:
        assert u.cost == sum(desired[e.pod.key] for e in u.entries)
    assert sums["sample-1"] < sums["sample-0"]
    # every Role replica of sample-1 also sums lower than any of sample-0
    assert max(r.cost for r in ms.units[0].roles) < min(r.cost for r in ms.units[1].roles)
    usage = {r["node"]: r for r in planning.node_usage(c, [ms], 1)}
    assert usage["n3"]["after"] == usage["n4"]["after"] == 0


def test_a_kthena_group_whose_pods_are_gone_goes_before_every_group_we_score(s2):
    """Kthena sums a ServingGroup's pod costs, and a group whose pods are all gone sums to 0 (when a
    delete in deleteServingGroup fails, Kthena 3cc05728 rolls the half-deleted group back to Running).
    The costs of Kthena's pods are lifted above 0, so every group and Role replica with a pod we
    score sums above 0 and Kthena still takes the empty one first, as its index order does without
    costs. With costs below 0 it took a live group instead, 3 runs of 3 on the real stack
    (tests/e2e/test_faults.py)."""
    for scope in ("node", "hypernode"):
        c = cluster_of(s2, compaction_scope=scope)
        ms = next(w for w in planning.build_plan(c) if w.kind == "ModelServing")
        assert len(ms.units) == 2
        assert min(u.cost for u in ms.units) > 0 and min(r.cost for u in ms.units for r in u.roles) > 0
        # Kthena's order among Running groups: lower sum, then higher index; "sample-9" has no pods
        keyed = sorted([(u.cost, -int(u.name.rsplit("-", 1)[1]), u.name) for u in ms.units] + [(0, -9, "sample-9")])
        assert keyed[0][2] == "sample-9"


def test_fixture_costs_depend_on_utilization_only(s1):
    c = cluster_of(s1)
    d = c.desired_all()
    by_node = {}
    for key, value in d.items():
        by_node.setdefault(c.pods[key].node, set()).add(value)
    assert all(len(v) == 1 for v in by_node.values())  # equal pods on one node: one value
    assert max(by_node["node-b"]) < min(by_node["node-a"]) <= 0


# ---- properties of the formula ----------------------------------------------------------------


def test_cost_is_strictly_monotone_in_utilization_bounded_and_int32():
    seen = []
    for total in (1, 2, 4, 8, 16, 31):
        for used in range(0, total + 1):
            for own in range(1, max(used, 1) + 1):
                v = costs.cost(used, total, own)
                assert costs.MIN_COST <= v <= 0 and goints.INT32_MIN <= v <= goints.INT32_MAX
                seen.append((used / total, total - used + own, v))
    for (u1, idle1, v1), (u2, idle2, v2) in itertools.combinations(seen, 2):
        if u1 < u2:
            assert v1 < v2
        elif u1 > u2:
            assert v1 > v2
        elif idle1 > idle2:  # equal utilization: the larger idle block goes first
            assert v1 < v2


def test_tie_break_on_one_node_prefers_the_pod_freeing_more_devices():
    c = build([node("n", 8)], [pod("big", "n", 4), pod("small", "n", 1)])
    d = c.desired_on("n")
    assert d["default/big"] < d["default/small"]


def test_equal_utilization_larger_node_frees_larger_block_first():
    c = build([node("n4", 4), node("n8", 8)], [pod("a", "n4", 2), pod("b", "n8", 4)])
    d = c.desired_all()
    assert d["default/b"] < d["default/a"]  # both 50 %, removing b leaves 8 idle vs 4


def test_an_event_on_another_node_never_changes_a_cost():
    c = build([node("n1", 8), node("n2", 8)], [pod("a", "n1", 2), pod("b", "n2", 2)])
    before = c.desired_on("n1")
    touched = c.upsert_pod(pod("c", "n2", 4))
    assert touched == {"n2"}
    assert c.desired_on("n1") == before


def test_terminated_and_terminating_pods_hold_no_devices_and_get_no_cost():
    done = pod("done", "n", 4, phase="Succeeded")
    failed = pod("failed", "n", 2, phase="Failed")
    going = pod("going", "n", 2)
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    c = build([node("n", 8)], [done, failed, going, pod("live", "n", 2)])
    assert c.usage("n") == (2, 8)
    assert set(c.desired_on("n")) == {"default/live"}


def test_only_scored_owners_accelerator_pods_on_accelerator_nodes():
    sts = pod("sts", "n", 1, owner=("apps/v1", "StatefulSet", "s"))
    bare = pod("bare", "n", 1, owner=None)
    cpu = pod("cpu", "n", 1, res="cpu")
    ms = pod("ms", "n", 1, owner=("workload.serving.volcano.sh/v1alpha1", "ModelServing", "m"))
    gpu_on_npu = pod("gpu", "n", 1, res="nvidia.com/gpu")
    c = build([node("n", 8), node("plain", 0)], [sts, bare, cpu, ms, gpu_on_npu, pod("rs", "n", 1), pod("elsewhere", "plain", 1)])
    assert set(c.desired_on("n")) == {"default/ms", "default/rs"}
    assert c.desired_on("plain") == {}
    assert c.usage("n") == (4, 8)  # unscored owners still take devices


def test_effective_requests_count_accelerators_as_the_scheduler_does():
    """The counting is webhook/podrequests.py's (tests/test_podrequests.py, the scheduler's own
    cases); the reconciler's part: only accelerators, summed before they are rounded up to whole
    devices, none kept at 0."""
    m = accounting.AcceleratorMatcher(["huawei.com/Ascend910*"])
    r = lambda n: {"resources": {"requests": {ASCEND: str(n)}}}  # noqa: E731
    spec = {"containers": [r(2)], "initContainers": [dict(r(1), restartPolicy="Always"), r(2)]}
    # the sidecar adds to the sum (3); the later init container runs beside it (1 + 2 = 3)
    assert accounting.effective_requests(spec, m) == {ASCEND: 3}
    halves = {"containers": [r("500m"), {"resources": {"requests": {ASCEND: "500m", "cpu": "4", ASCEND + "-memory": "8"}}}]}
    assert accounting.effective_requests(halves, m) == {ASCEND: 1}  # 1 device, not 2: summed, then rounded up
    assert accounting.effective_requests({"containers": [r("1500m")]}, m) == {ASCEND: 2}
    # the overhead counts, whatever the containers request (addResourceList of PodRequests)
    assert accounting.effective_requests({"containers": [{}], "overhead": {ASCEND: "1", "cpu": "250m"}}, m) == {ASCEND: 1}
    limits_only = {"containers": [{"resources": {"limits": {ASCEND: "2"}}}]}
    assert accounting.effective_requests(limits_only, m) == {ASCEND: 2}  # as the API server defaults the pod
    assert accounting.effective_requests({"containers": [r(0)]}, m) == {}
    # pod-level resources take only cpu, memory and hugepages: never an accelerator
    assert accounting.effective_requests({"containers": [r(1)], "resources": {"requests": {ASCEND: "8", "cpu": "1"}}}, m) == {ASCEND: 1}


def test_accelerator_patterns_and_companions():
    m = accounting.AcceleratorMatcher(ScoringSettings().accelerator_resources)
    for name in (
        "huawei.com/Ascend910",
        "huawei.com/Ascend910B3",
        "huawei.com/Ascend310P",
        "huawei.com/ascend-310",
        "huawei.com/ascend-1980",
        "nvidia.com/gpu",
    ):
        assert m(name), name
    for name in ("huawei.com/Ascend910B3-memory", "huawei.com/Ascend910B3-core", "cpu", "nvidia.com/gpumem"):
        assert not m(name), name
    assert accounting.AcceleratorMatcher(["huawei.com/Ascend910B3-memory"])("huawei.com/Ascend910B3-memory")


def test_quantity_and_cost_parsing():
    assert [accounting.quantity_units(q) for q in ("8", "1k", "500m", "2Ki", "bad", "-1")] == [8, 1000, 1, 2048, 0, 0]
    assert [goints.parse_cost(v) for v in ("0", "-5", "+5", "007", "", "x", "2147483648", "-2147483648")] == [0, -5, None, None, None, None, None, -2147483648]


# ---- who owns a value ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "current, record, priority, action",
    [
        (None, None, "binpack", "write"),
        ("-1", "-1", "binpack", "write"),  # ours, stale
        ("-500005", None, "binpack", "none"),  # already right
        ("100", None, "binpack", "overwrite"),
        ("100", "-1", "binpack", "overwrite"),
        ("100", None, "wl", "foreign"),
        ("100", "-1", "wl", "foreign"),
        ("-1", "-1", "wl", "write"),
    ],
)
def test_decide(current, record, priority, action):
    assert decisions.decide(current, record, -500005, priority).action == action


# ---- remove-last: the pod its owner wants kept ---------------------------------------------------


def ready(p: dict, is_ready: bool = True) -> dict:
    p["status"]["conditions"] = [{"type": "Ready", "status": "True" if is_ready else "False"}]
    return p


def protect(p: dict, value: str = "true") -> dict:
    p["metadata"].setdefault("annotations", {})[REMOVE_LAST_KEY] = value
    return p


def test_remove_last_pod_gets_the_top_cost_and_still_counts_toward_its_node():
    nodes = [node("empty", 8), node("full", 8)]
    pods = [
        ready(protect(pod("keep", "empty", 1))),
        ready(pod("next-to-it", "empty", 1)),
        ready(pod("b", "full", 4)),
        ready(pod("c", "full", 4)),
        ready(protect(pod("typo", "full", 0), "yes")),
    ]
    desired = build(nodes, pods).desired_all()
    assert desired["default/keep"] == costs.REMOVE_LAST_COST == goints.INT32_MAX
    assert desired["default/next-to-it"] == costs.cost(2, 8, 1)  # the protected pod's device still counts
    assert desired["default/b"] == desired["default/c"] == costs.cost(8, 8, 4)
    assert "default/typo" not in desired  # no accelerator: not scored, annotation or not


def test_remove_last_goes_last_among_ready_pods_but_an_unready_one_still_goes_first():
    nodes = [node("empty", 8), node("full", 8)]
    pods = [ready(protect(pod("keep", "empty", 1))), ready(pod("b", "full", 4)), ready(pod("c", "full", 3)), ready(pod("d", "empty", 1))]
    order = [u.entries[0].pod.name for u in planning.build_plan(build(nodes, pods))[0].units]
    assert order[-1] == "keep" and order[0] == "d"  # without the annotation "keep" would tie with "d" for first
    ready(pods[0], False)
    order = [u.entries[0].pod.name for u in planning.build_plan(build(nodes, pods))[0].units]
    assert order[0] == "keep"  # the controller's own criteria come before any cost


def test_remove_last_in_a_modelserving_keeps_its_whole_servinggroup():
    """A group is removed as one, by the sum of its pods' costs: one protected pod lifts its sum
    above every group without one, even a group on the emptiest nodes."""
    ms = ("workload.serving.volcano.sh/v1alpha1", "ModelServing", "llm")

    def member(name: str, node_name: str, group: str) -> dict:
        p = ready(pod(name, node_name, 2, owner=ms))
        p["metadata"]["labels"] = {MS_GROUP: group, MS_ROLE_ID: "decode-0", MS_ROLE: "decode"}
        return p

    nodes = [node("empty", 8), node("full", 8)]
    pods = [
        member("llm-0-a", "empty", "llm-0"),
        member("llm-0-b", "empty", "llm-0"),
        member("llm-1-a", "full", "llm-1"),
        member("llm-1-b", "full", "llm-1"),
        member("llm-1-c", "full", "llm-1"),
        member("llm-1-d", "full", "llm-1"),
    ]
    groups = lambda c: [u.name for u in planning.build_plan(c)[0].units]  # noqa: E731
    assert groups(build(nodes, pods)) == ["llm-0", "llm-1"]  # the emptier group goes first
    protect(pods[1])
    c = build(nodes, pods)
    assert groups(c) == ["llm-1", "llm-0"]
    llm0 = planning.build_plan(c)[0].units[1]
    assert llm0.cost == costs.REMOVE_LAST_COST + costs.summed(costs.cost(4, 8, 2), hypernode=False) > 0
    assert [e.remove_last for e in llm0.entries] == [False, True]
