"""Compaction by HyperNode: membership as Volcano resolves it, bad topology falling back to the
node, the cost order (HyperNode first, then node), value stability, and `plan`'s view."""

from __future__ import annotations

import json
import logging

import pytest
from support import REPO
from support.commands import run_webhook
from support.topology import HYPERNODES, NODES, PODS, exact, hypernode, node, pod

from webhook.scalein import costs, goints, topology
from webhook.scalein.cluster import Cluster
from webhook.scalein.plan import planning
from webhook.scalein.plan.ranking import contested_pods, hypernode_usage, node_usage
from webhook.scalein.settings import COST_KEY, RECORD_KEY, ScoringSettings


def build(hypernodes=HYPERNODES, nodes=NODES, pods=PODS, **kw) -> Cluster:
    return planning.make_cluster(ScoringSettings(**kw), nodes, pods, hypernodes)


def order(c: Cluster) -> list[str]:
    desired = c.desired_all()
    return [k.split("/")[1] for k in sorted(desired, key=lambda k: (desired[k], k))]


# ---- membership ---------------------------------------------------------------------------------


def test_members_by_exact_name_regex_and_labels():
    nodes = {"gpu-1": {"rack": "r1"}, "gpu-2": {"rack": "r1"}, "gpu-10": {"rack": "r2"}, "cpu-1": {}}
    hns = {
        h.name: h
        for h in map(
            topology.hypernode_view,
            [
                hypernode("r1", 1, {"labelMatch": {"matchLabels": {"rack": "r1"}}}),
                hypernode("r2", 1, {"regexMatch": {"pattern": "1[0-9]$"}}),  # unanchored, as Go's MatchString
                hypernode("none", 1, {"labelMatch": {}}),  # an empty label selector selects nothing
            ],
        )
    }
    top = topology.resolve(hns, nodes)
    assert top.leaf_of == {"gpu-1": "r1", "gpu-2": "r1", "gpu-10": "r2"}
    assert top.members == {"r1": ("gpu-1", "gpu-2"), "r2": ("gpu-10",)}
    assert top.notes == ["HyperNode none: its members select no node"]


def test_the_smallest_hypernode_holds_the_node():
    nodes = {"a": {}, "b": {}}
    hns = {h.name: h for h in map(topology.hypernode_view, [hypernode("big", 3, {"regexMatch": {"pattern": "."}}), hypernode("small", 1, exact("a"))])}
    assert topology.resolve(hns, nodes).leaf_of == {"a": "small", "b": "big"}


@pytest.mark.parametrize(
    "hypernodes, note, alone",
    [
        ([hypernode("x", 1, exact("n1"), exact("ghost"))], "HyperNode x names node ghost, which does not exist", set()),
        ([hypernode("x", 1, {"regexMatch": {"pattern": "nomatch"}})], "HyperNode x: its members select no node", set()),
        ([hypernode("x", 1, {"regexMatch": {"pattern": "(unclosed"}})], "HyperNode x: its members select no node", set()),
        (
            [hypernode("x", 1, exact("n1")), hypernode("y", 1, exact("n1"), exact("n2"))],
            "node n1 is in HyperNodes x, y of tier 1: it ranks by node alone",
            {"n1"},
        ),
        (
            [
                {
                    **hypernode("x", 1, exact("n1")),
                    "spec": {"tier": 1, "members": [{"type": "Node", "selector": exact("n1")}, {"type": "HyperNode", "selector": exact("y")}]},
                },
                hypernode("y", 2, exact("x"), kind="HyperNode"),
            ],
            "HyperNode x is in a cycle of HyperNode members: its nodes rank by node alone",
            {"n1"},
        ),
    ],
)
def test_bad_topology_ranks_the_pod_by_node_alone_and_is_noted_once(hypernodes, note, alone, caplog):
    caplog.set_level(logging.WARNING, "servinggate.scalein")
    c = build(hypernodes)
    assert note in c.topology.notes
    assert not alone & set(c.topology.leaf_of)
    node_only = build([], compaction_scope="node").desired_all()
    desired = c.desired_all()
    for key, value in desired.items():
        if c.pods[key].node in alone:  # rank 0: by its node's level and idle alone
            assert value == costs.in_hypernode(node_only[key], 0)
    c.replace_hypernodes(hypernodes)  # the same again: not logged twice
    assert sum(note in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize(
    "member, note",
    [
        (
            {"labelMatch": {"matchExpressions": [{"key": "rack", "operator": "Sometimes", "values": ["r1"]}]}},
            "'Sometimes' is not a valid label selector operator",
        ),
        ({"labelMatch": {"matchExpressions": [{"key": "rack", "operator": "In"}]}}, "values set can't be empty"),
        ({"regexMatch": {"pattern": "n(?=1)"}}, "does not compile as Go's RE2"),
    ],
)
def test_a_member_volcano_cannot_resolve_holds_no_node_and_is_noted_once(member, note, caplog):
    caplog.set_level(logging.WARNING, "servinggate.scalein")
    hns = [hypernode("x", 1, member), hypernode("y", 1, exact("n2"))]
    c = build(hns)
    assert "n1" not in c.topology.leaf_of and c.topology.leaf_of["n2"] == "y"
    assert any(n.startswith("HyperNode x: Node member 1: ") and note in n for n in c.topology.notes)
    assert "HyperNode x: its members select no node" in c.topology.notes
    c.replace_hypernodes(hns)
    c.upsert_node(node("n1", labels={"rack": "r1"}))
    assert sum(note in r.getMessage() for r in caplog.records) == 1


def test_hypernode_members_given_other_than_by_exact_name_are_not_children():
    """Volcano resolves a HyperNode member by exactMatch only: a regex naming a HyperNode makes no
    edge, so no cycle, and the tier-1 HyperNode keeps its node."""
    x = hypernode("x", 1, exact("n1"))
    x["spec"]["members"].append({"type": "HyperNode", "selector": {"regexMatch": {"pattern": "^y$"}}})
    c = build([x, hypernode("y", 2, exact("x"), kind="HyperNode")])
    assert c.topology.leaf_of.get("n1") == "x"
    assert not any("cycle" in n for n in c.topology.notes)
    assert "HyperNode x: members[1]: a HyperNode member is resolved by exactMatch only, and this one has none: it is skipped" in c.topology.notes


def test_malformed_hypernode_objects_are_skipped_never_fatal():
    c = build(
        [{"metadata": {}}, {"metadata": {"name": "z"}, "spec": "nope"}, {"metadata": {"name": "t"}, "spec": {"tier": "x", "members": [1, {"type": "Node"}]}}]
    )
    assert c.topology.leaf_of == {}
    assert c.desired_all() == {k: costs.in_hypernode(v, 0) for k, v in build([], compaction_scope="node").desired_all().items()}


# ---- the cost order -----------------------------------------------------------------------------


def test_among_equally_full_nodes_the_emptier_hypernode_goes_first():
    node_scope = build(compaction_scope="node")
    by_node = order(node_scope)
    assert by_node[:2] == ["b4-0", "b4-1"]  # n4 is the emptiest node
    desired = node_scope.desired_all()
    assert desired["default/a2-0"] == desired["default/b3-0"]  # n2 and n3 tie by node
    by_hn = order(build())  # auto: HyperNodes exist
    assert by_hn[:2] == ["b4-0", "b4-1"]  # the node's level still comes first
    assert by_hn[2:6] == [f"b3-{i}" for i in range(4)]  # then hn-b, the emptier HyperNode: it comes free
    assert by_hn[6:10] == [f"a2-{i}" for i in range(4)] and set(by_hn[10:]) == {f"a1-{i}" for i in range(8)}


def test_auto_without_hypernodes_is_node_scope_and_hypernode_scope_without_any_ranks_by_node():
    by_node = build([], compaction_scope="node").desired_all()
    assert build([]).desired_all() == by_node
    assert build([], compaction_scope="hypernode").desired_all() == {k: costs.in_hypernode(v, 0) for k, v in by_node.items()}
    assert not build([]).by_hypernode and build().by_hypernode


def test_costs_stay_int32_and_at_most_minus_one():
    empty_hn = [node(f"e{i}", 1000) for i in range(2)]
    pods = [pod("lonely", "e0", 1)]
    c = build([hypernode("h", 1, {"regexMatch": {"pattern": "^e"}})], empty_hn, pods)
    (value,) = c.desired_all().values()
    assert goints.INT32_MIN <= costs.MIN_HN_COST <= value <= -1
    for used in range(0, 41):
        for own in (1, 8):
            for name in ("a", "hn-b", "x" * 60):
                v = costs.in_hypernode(costs.cost(min(used, 8), 8, own), costs.hypernode_rank(used, 40, name))
                assert costs.MIN_HN_COST <= v <= -1


def test_a_pod_event_rewrites_its_hypernode_only_when_the_hypernode_changes_step():
    many = [node(f"m{i}") for i in range(10)]
    pods = [pod(f"p{i}-{j}", f"m{i}") for i in range(10) for j in range(4)] + [pod("p0-4", "m0"), pod("p0-5", "m0")]
    c = build([hypernode("h", 1, {"regexMatch": {"pattern": "^m"}})], many, pods)  # 42/80 used: step floor(20 * 38 / 80) = 9
    before = c.desired_all()
    touched = c.put_pod(planning.make_cluster(ScoringSettings(), many, [pod("new-1", "m0")]).pods["default/new-1"])
    assert touched == {"m0"}  # 43/80: same step, only m0's pods change
    c.desired_on("m0")
    for name in ("new-2", "new-3", "new-4"):
        extra = planning.make_cluster(ScoringSettings(), many, [pod(name, "m1")]).pods[f"default/{name}"]
        touched = c.put_pod(extra)
        if touched != {"m1"}:
            break
        c.desired_on("m1")
    assert touched == {f"m{i}" for i in range(10)}  # 45/80 crossed a step (free 35: step 8): every node of h
    after = {}
    for n in touched:
        after.update(c.desired_on(n))
    moved = {k for k in before if k in after and after[k] != before[k]}
    assert {c.pods[k].node for k in moved} >= {"m2", "m9"}


def test_an_annotation_change_does_not_rescore_the_hypernode():
    c = build()
    c.desired_all()
    p = pod("b3-0", "n3", annotations={COST_KEY: "-5", RECORD_KEY: "-5"})
    assert c.upsert_pod(p) == {"n3"}


def test_hypernode_changes_rescore_everything_only_when_membership_moves():
    c = build()
    assert c.upsert_hypernode(HYPERNODES[0]) == set()  # unchanged
    moved = c.upsert_hypernode(hypernode("hn-a", 1, exact("n1")))
    assert moved == {"n1", "n2", "n3", "n4"} and "n2" not in c.topology.leaf_of
    assert c.delete_hypernode("hn-b") == {"n1", "n2", "n3", "n4"}


# ---- plan -------------------------------------------------------------------------------------


def test_plan_shows_each_hypernode_before_and_after():
    c = build()
    workloads = planning.build_plan(c)
    rows = node_usage(c, workloads, 8)
    per_hn = {h["hypernode"]: h for h in hypernode_usage(c, rows)}
    assert per_hn["hn-b"] == {
        "hypernode": "hn-b",
        "tier": 1,
        "nodes": 2,
        "allocatable": 16,
        "before": 6,
        "after": 0,
        "idle_nodes_before": 0,
        "idle_nodes_after": 2,
    }
    assert (per_hn["hn-a"]["before"], per_hn["hn-a"]["after"]) == (12, 10)
    assert hypernode_usage(build(compaction_scope="node"), rows) == []


def test_plan_cli_reads_hypernodes_and_contested_events_from_a_snapshot(tmp_path):
    contested = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "reason": "DeletionCostContested",
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "b3-0"},
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }
    pods = [pod("b3-0", "n3", annotations={COST_KEY: "-3", RECORD_KEY: "-1"}) if p["metadata"]["name"] == "b3-0" else p for p in PODS]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": NODES + pods + HYPERNODES + [contested]}))

    def run(*a):
        return run_webhook(["plan", "--snapshot", str(snap), "--remove", "8", *a], cwd=REPO, timeout=120)

    text = run()
    assert text.returncode == 0, text.stderr
    assert "compaction scope: hypernode (--compaction-scope auto)" in text.stdout
    assert "accelerators per HyperNode" in text.stdout and "hn-b  tier 1  2 nodes     6/16" in text.stdout
    assert "b3-0  on n3  cost -3" in text.stdout and "contested: another writer keeps changing it (-3)" in text.stdout
    out = json.loads(run("--output", "json").stdout)
    assert out["scope"] == "hypernode" and {h["hypernode"] for h in out["hypernodes"]} == {"hn-a", "hn-b"}
    entry = next(e for u in out["workloads"][0]["order"] for e in u["pods"] if e["pod"] == "default/b3-0")
    assert entry["action"] == "contested" and entry["cost"] == -3
    node_scope = json.loads(run("--output", "json", "--compaction-scope", "node").stdout)
    assert node_scope["scope"] == "node" and node_scope["hypernodes"] == []


def test_contested_events_count_within_the_window_when_live():
    ev = {"reason": "DeletionCostContested", "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "p"}, "lastTimestamp": "2026-01-01T00:00:00Z"}
    other = {**ev, "reason": "Scheduled"}
    at = 1767225600.0  # 2026-01-01T00:00:00Z
    assert contested_pods([ev, other], 3600) == {"ns/p"}
    assert contested_pods([ev], 3600, at + 3599) == {"ns/p"}
    assert contested_pods([ev], 3600, at + 3600) == set()
    assert contested_pods(["junk", {"reason": "DeletionCostContested"}], 3600) == set()


def test_a_pod_deleted_and_rescheduled_at_a_step_boundary_does_not_rewrite_the_hypernode_twice():
    many = [node(f"m{i}") for i in range(10)]
    pods = [pod(f"p{i}-{j}", f"m{i}") for i in range(10) for j in range(4)]  # 40/80 used: free 40, step 10 exactly
    c = build([hypernode("h", 1, {"regexMatch": {"pattern": "^m"}})], many, pods)
    c.desired_all()
    extra = planning.make_cluster(ScoringSettings(), many, [pod("new", "m0")]).pods["default/new"]
    for _ in range(3):
        assert c.put_pod(extra) == {"m0"}  # free 39: 9.75 steps, within a quarter step of 10: kept
        c.desired_on("m0")
        assert c.delete_pod("default/new") == {"m0"}
        c.desired_on("m0")
    # a fresh view (plan, a restart) takes the plain step
    assert costs.hypernode_rank(41, 80, "h") // costs.HN_SLOTS == 9
    assert costs.hypernode_rank(41, 80, "h", previous=10 * costs.HN_SLOTS) // costs.HN_SLOTS == 10
    assert costs.hypernode_rank(43, 80, "h", previous=10 * costs.HN_SLOTS) // costs.HN_SLOTS == 9  # 9.25: beyond


def test_the_cached_hypernode_use_follows_every_kind_of_event():
    import random

    rnd = random.Random(5)
    many = [node(f"m{i}") for i in range(6)]
    hns = [hypernode("h1", 1, exact("m0"), exact("m1"), exact("m2")), hypernode("h2", 1, {"regexMatch": {"pattern": "m[345]"}})]
    live = {f"p{i}": pod(f"p{i}", f"m{i % 6}", 1 + i % 2) for i in range(20)}
    c = build(hns, many, list(live.values()))
    c.desired_all()
    for step in range(300):
        name = f"p{rnd.randrange(30)}"
        if name in live and rnd.random() < 0.4:
            c.delete_pod(f"default/{name}")
            del live[name]
        else:
            live[name] = pod(name, f"m{rnd.randrange(6)}", rnd.randrange(1, 4))  # new, or moved / resized
            c.upsert_pod(live[name])
        if step % 50 == 0:
            many[step % 6] = node(f"m{step % 6}", 8 + step % 3)
            c.upsert_node(many[step % 6])
        for n in c.nodes:
            c.desired_on(n)
        fresh = build(hns, many, list(live.values()))
        assert {h: c.hypernode_usage(h) for h in ("h1", "h2")} == {h: fresh.hypernode_usage(h) for h in ("h1", "h2")}


def test_a_node_relabelled_without_moving_keeps_its_hypernode_following_events():
    many = [node(f"m{i}") for i in range(10)]
    pods = [pod(f"p{i}-{j}", f"m{i}") for i in range(10) for j in range(4)] + [pod(f"p0-{j}", "m0") for j in range(4, 8)]
    c = build([hypernode("h", 1, {"regexMatch": {"pattern": "^m"}})], many, pods)  # 44/80: free 36, step 9
    c.desired_all()
    assert c.upsert_node(node("m5", labels={"new": "label"})) == set()  # same members: nothing to re-score
    touched = set()
    for name in ("x1", "x2", "x3", "x4"):
        touched = c.put_pod(planning.make_cluster(ScoringSettings(), many, [pod(name, "m1")]).pods[f"default/{name}"])
        if touched != {"m1"}:
            break
        c.desired_on("m1")
    assert touched == {f"m{i}" for i in range(10)}  # the step change still reaches every node of h
