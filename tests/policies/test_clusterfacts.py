"""The cluster-fact projections: small, shared where equal, the same answers as whole objects, and
no crash on any input; the store's "not installed" state."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.willrun import hpa, hypernode, node, podgroup_crd, policy

from webhook.admission.review import make_request
from webhook.policies import Context, engine
from webhook.policies.clusterfacts import ClusterFacts, store_of_objects
from webhook.policies.projections import AUTOSCALINGPOLICY, HPA, NODE, QUEUE, project, project_node, project_podgroup_crd
from webhook.policies.scalers import scale_targets
from webhook.policies.store import ProjectionStore


def test_equal_nodes_share_one_shape_and_the_hostname_is_not_part_of_it():
    a = project_node(node("a", {"cpu": "8"}, {"zone": "z1"}))
    b = project_node(node("b", {"cpu": "8"}, {"zone": "z1"}))
    c = project_node(node("c", {"cpu": "8"}, {"zone": "z2"}))
    assert a["shape"] is b["shape"] and a["shape"] is not c["shape"]
    assert (a["hostname"], b["hostname"]) == ("a", "b")
    [big, small] = ClusterFacts(store_of_objects([node("a", {"cpu": "8"}), node("b", {"cpu": "8"}), node("c", {"cpu": "4"})])).node_classes()
    assert (big.count, big.hostnames, small.count) == (2, {"a", "b"}, 1)


def test_scale_targets_read_the_same_from_a_projection():
    owned = hpa("keda-hpa-so", "llm", owner="so")
    owned["metadata"]["ownerReferences"][0].update(controller=True, blockOwnerDeletion=True)
    for kind, entry, obj in (
        ("HorizontalPodAutoscaler", HPA, owned),
        ("AutoscalingPolicy", AUTOSCALINGPOLICY, policy("p", "llm")),
        ("AutoscalingPolicy", AUTOSCALINGPOLICY, policy("p", "llm", roles=("a", "b"))),
    ):
        assert scale_targets(kind, project(entry, copy.deepcopy(obj))) == scale_targets(kind, obj) != []


def test_the_podgroup_crd_is_one_fact():
    assert project_podgroup_crd(podgroup_crd(True))["subGroupPolicy"] is True
    assert project_podgroup_crd(podgroup_crd(False))["subGroupPolicy"] is False
    assert ClusterFacts(store_of_objects([podgroup_crd(False)])).subgroup_policy() is False
    assert ClusterFacts(store_of_objects([node("a", {"cpu": "1"})])).subgroup_policy() is None


def test_a_kind_not_installed_is_said_so_and_holds_nothing():
    store = ProjectionStore()
    store.replace(QUEUE, [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}])
    before = store.generation(QUEUE.api_version, QUEUE.kind)
    store.mark_missing(QUEUE)
    assert store.items(QUEUE.api_version, QUEUE.kind) == [] and not store.installed(QUEUE.api_version, QUEUE.kind)
    assert store.generation(QUEUE.api_version, QUEUE.kind) > before
    assert "Queue: not installed, its checks skipped" in store.describe()
    assert ClusterFacts(store).queues() is None
    store.replace(QUEUE, [])  # installed later: an empty list is "no queues", not "not installed"
    assert ClusterFacts(store).queues() == {}


def test_derived_facts_follow_changes():
    store = store_of_objects([node("a", {"cpu": "8"})])
    facts = ClusterFacts(store)
    assert [c.count for c in facts.node_classes()] == [1]
    store.apply(NODE, "ADDED", node("b", {"cpu": "8"}))
    assert [c.count for c in facts.node_classes()] == [2]
    store.apply(NODE, "DELETED", node("a", {"cpu": "8"}))
    assert [c.count for c in facts.node_classes()] == [1]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=examples(150), deadline=None)
@given(node_junk=_json, hn_junk=_json, spec_junk=_json)
def test_no_input_makes_a_rule_crash(kit, node_junk, hn_junk, spec_junk):
    objects = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": node_junk, "status": {"allocatable": node_junk}},
        {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "h"}, "spec": hn_junk},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": hn_junk, "status": node_junk},
        hypernode("h2", 1, members=[{"type": "Node", "selector": {"regexMatch": {"pattern": "("}}}]),
        node("ok", {"cpu": "1"}),
    ]
    ctx = Context(facts=ClusterFacts(store_of_objects(objects)))
    ms = kit.gang_ms()
    ms["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "q"}
    ms["spec"]["template"]["networkTopology"] = {"groupPolicy": {"highestTierAllowed": 1}}
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["affinity"] = spec_junk
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["tolerations"] = spec_junk
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["resources"] = spec_junk
    assert engine.validate(make_request(ms), ctx).crash is None
    other = hpa("h", "llm")
    other["spec"]["scaleTargetRef"] = spec_junk
    assert engine.validate(make_request(other), ctx).crash is None


def test_an_event_that_changes_nothing_kept_keeps_the_derived_facts():
    store = store_of_objects([node("a", {"cpu": "8"})])
    before = store.generation(NODE.api_version, NODE.kind)
    heartbeat = node("a", {"cpu": "8"})
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "now"}]
    store.apply(NODE, "MODIFIED", heartbeat)
    assert store.generation(NODE.api_version, NODE.kind) == before
    store.apply(NODE, "MODIFIED", node("a", {"cpu": "16"}))
    assert store.generation(NODE.api_version, NODE.kind) == before + 1
