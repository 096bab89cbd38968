"""Network topology, role gangs and the queue, judged against the cluster's HyperNodes, PodGroup CRD
and Volcano Queues."""

from __future__ import annotations

import copy

from support.willrun import ctx_of, found, hypernode, judge, podgroup_crd, queue, texts

from webhook.policies.topology import BOTH_TIERS


def _ms(kit, *, topology: dict | None = None, queue_name: str | None = None, gang: bool = True) -> dict:
    ms = kit.gang_ms()
    if topology is not None:
        ms["spec"]["template"]["networkTopology"] = topology
    if not gang:
        ms["spec"]["template"].pop("gangPolicy", None)
    if queue_name is not None:
        ms["metadata"].setdefault("annotations", {})["scheduling.volcano.sh/queue-name"] = queue_name
    return ms


def test_both_tier_fields_are_refused_in_volcanos_words(kit):
    ms = _ms(
        kit, topology={"groupPolicy": {"highestTierAllowed": 2, "highestTierName": "spine"}, "rolePolicy": {"highestTierAllowed": 1, "highestTierName": "leaf"}}
    )
    decision = judge(ms, ctx_of())
    assert not decision.allowed
    assert found(decision, "modelservings.network-topology") == [
        ("spec.template.networkTopology.groupPolicy.highestTierName", BOTH_TIERS),
        ("spec.template.networkTopology.rolePolicy.highestTierName", BOTH_TIERS),
    ]
    one = _ms(kit, topology={"groupPolicy": {"highestTierAllowed": 2}, "rolePolicy": {"highestTierName": "leaf"}})
    assert not found(judge(one, ctx_of()), "modelservings.network-topology")


def test_a_tier_no_hypernode_has_warns(kit):
    facts = (hypernode("s0", 1, "leaf"), hypernode("s1", 2, "spine"), podgroup_crd(True))
    ms = _ms(kit, topology={"groupPolicy": {"highestTierAllowed": 3}, "rolePolicy": {"highestTierName": "rack"}})
    decision = judge(ms, ctx_of(*facts))
    assert decision.allowed  # warn by default
    got = found(decision, "modelservings.topology-facts")
    assert ("spec.template.networkTopology.groupPolicy.highestTierAllowed", "no HyperNode has tier 3 (tiers: 1, 2): the gang could never be placed") in got
    assert (
        "spec.template.networkTopology.rolePolicy.highestTierName",
        "no HyperNode has tierName rack (tier names: leaf, spine): the gang could never be placed",
    ) in got
    fine = _ms(kit, topology={"groupPolicy": {"highestTierAllowed": 2}, "rolePolicy": {"highestTierName": "leaf"}})
    assert not found(judge(fine, ctx_of(*facts)), "modelservings.topology-facts")
    # no HyperNode CRD: network topology is not in use, nothing to say
    assert not found(judge(ms, ctx_of(podgroup_crd(True), missing=("HyperNode",))), "modelservings.topology-facts")
    # an operator may deny it
    denied = judge(ms, ctx_of(*facts, rule_actions=(("modelservings.topology-facts", "deny"),)))
    assert not denied.allowed


def test_role_gangs_on_a_podgroup_crd_without_subgrouppolicy_warn(kit):
    ms = _ms(kit, topology={"rolePolicy": {"highestTierAllowed": 1}})
    got = found(judge(ms, ctx_of(hypernode("s0", 1), podgroup_crd(False))), "modelservings.topology-facts")
    assert [f for f, _ in got] == ["spec.template.gangPolicy.minRoleReplicas", "spec.template.networkTopology.rolePolicy"]
    assert all("kthena#587" in d for _, d in got)
    assert not found(judge(ms, ctx_of(hypernode("s0", 1), podgroup_crd(True))), "modelservings.topology-facts")
    # no PodGroup CRD at all (the field-selected list is empty): nothing to say
    assert not found(judge(ms, ctx_of(hypernode("s0", 1))), "modelservings.topology-facts")
    plain = _ms(kit, gang=False)
    assert not found(judge(plain, ctx_of(podgroup_crd(False))), "modelservings.topology-facts")


def test_the_queue_must_exist_be_open_and_a_leaf(kit):
    queues = (queue("root"), queue("ml", parent="root"), queue("closed", state="Closed"), queue("ml-a", parent="ml"))
    path = "metadata.annotations[scheduling.volcano.sh/queue-name]"
    ok = judge(_ms(kit, queue_name="ml-a"), ctx_of(*queues))
    assert ok.allowed and not found(ok, "modelservings.queue")
    missing = judge(_ms(kit, queue_name="gone"), ctx_of(*queues))
    assert found(missing, "modelservings.queue") == [(path, 'unable to find queue: queues.scheduling.volcano.sh "gone" not found')]
    assert not missing.allowed
    closed = judge(_ms(kit, queue_name="closed"), ctx_of(*queues))
    assert found(closed, "modelservings.queue") == [(path, "can only submit workload to queue with state `Open`, queue `closed` status is `Closed`")]
    # not a leaf: warned, not refused (Volcano's PodGroup webhook does not require a leaf)
    parent = judge(_ms(kit, queue_name="ml"), ctx_of(*queues))
    assert parent.allowed and not [e for e in parent.errors if e.rule == "modelservings.queue"]
    assert any("not a leaf queue (child queues: ml-a)" in t for t in texts(parent, "modelservings.queue"))


def test_the_queue_is_judged_when_it_changes_and_skipped_without_volcano(kit):
    queues = (queue("closed", state="Closed"), queue("open"))
    old = _ms(kit, queue_name="closed")
    assert judge(old, ctx_of(*queues), old=copy.deepcopy(old)).allowed  # unchanged: the queue closed since
    assert not judge(old, ctx_of(*queues), old=_ms(kit, queue_name="open")).allowed
    assert judge(_ms(kit, queue_name="gone"), ctx_of(missing=("Queue",))).allowed
    unlisted = judge(_ms(kit, queue_name="gone"), ctx_of(unlisted=("Queue",)))
    assert unlisted.allowed and any("queue not checked" in t for t in texts(unlisted, "modelservings.queue"))
    # a namespaced queue reference is Volcano's to judge
    assert judge(_ms(kit, queue_name="team/q"), ctx_of(*queues)).allowed


def test_odd_topology_shapes_do_not_crash(kit):
    for topology in ([], {"groupPolicy": []}, {"groupPolicy": {"highestTierAllowed": "2", "highestTierName": 5}}, {"rolePolicy": None}):
        decision = judge(_ms(kit, topology=topology), ctx_of(hypernode("h", 1), podgroup_crd(False)))
        assert decision.crash is None


def test_a_malformed_topology_field_is_a_field_error_at_its_path_or_nothing(kit):
    """The policies are read through their view (webhook/shapes/volcano.py): a tier set to anything
    counts as set, a tier name counts only as text, and a policy that is not an object is none."""
    group = "spec.template.networkTopology.groupPolicy"
    both = judge(_ms(kit, topology={"groupPolicy": {"highestTierAllowed": "2", "highestTierName": "spine"}}), ctx_of())
    assert found(both, "modelservings.network-topology") == [(f"{group}.highestTierName", BOTH_TIERS)]
    assert not found(judge(_ms(kit, topology={"groupPolicy": {"highestTierAllowed": 2, "highestTierName": 5}}), ctx_of()), "modelservings.network-topology")
    facts = (hypernode("s0", 1, "leaf"), podgroup_crd(False))
    odd = judge(_ms(kit, topology={"groupPolicy": {"highestTierAllowed": "3", "highestTierName": 7}, "rolePolicy": "x"}), ctx_of(*facts))
    assert found(odd, "modelservings.topology-facts") == [
        ("spec.template.gangPolicy.minRoleReplicas", "the installed PodGroup CRD has no subGroupPolicy: Kthena drops the role gangs silently (kthena#587)")
    ]
    named = judge(_ms(kit, topology={"groupPolicy": {"highestTierAllowed": "3", "highestTierName": "rack"}}), ctx_of(*facts))
    assert (f"{group}.highestTierName", "no HyperNode has tierName rack (tier names: leaf): the gang could never be placed") in found(
        named, "modelservings.topology-facts"
    )


def test_a_queue_of_malformed_fields_is_judged_as_volcano_would_read_it(kit):
    """A state that is not text is shown as sent; a parent that is not a name makes the queue a
    child of root, as an absent one does."""
    path = "metadata.annotations[scheduling.volcano.sh/queue-name]"
    odd = {**queue("odd"), "status": {"state": 5}, "spec": {"parent": 5}}
    got = judge(_ms(kit, queue_name="odd"), ctx_of(queue("root"), odd, {**queue("bare"), "status": "x", "spec": "x"}))
    assert found(got, "modelservings.queue") == [(path, "can only submit workload to queue with state `Open`, queue `odd` status is `5`")]
    root = judge(_ms(kit, queue_name="root"), ctx_of(queue("root"), odd))
    assert any("queue `root` is not a leaf queue (child queues: odd)" in t for t in texts(root, "modelservings.queue"))


# ---- queues as Kthena uses them and Volcano sees them (issue 36 item 4) -----------------------------


def test_the_queue_is_judged_only_for_a_modelserving_kthena_makes_podgroups_for(kit):
    """Kthena reads the queue annotation only for `schedulerName: volcano` (podgroupmanager/
    manager.go, shouldCreatePodGroup before createPodGroup): another scheduler's queue is not ours
    to refuse; turning to `volcano` with it is judged."""
    path = "metadata.annotations[scheduling.volcano.sh/queue-name]"
    other = _ms(kit, queue_name="gone")
    other["spec"]["schedulerName"] = "default-scheduler"
    assert judge(other, ctx_of(queue("ml"))).allowed
    assert not found(judge(other, ctx_of(queue("ml"))), "modelservings.queue")
    turned = _ms(kit, queue_name="gone")
    assert found(judge(turned, ctx_of(queue("ml")), old=other), "modelservings.queue") == [
        (path, 'unable to find queue: queues.scheduling.volcano.sh "gone" not found')
    ]
    absent = _ms(kit, queue_name="gone")
    absent["spec"].pop("schedulerName")  # the CRD's default: volcano
    assert not judge(absent, ctx_of(queue("ml"))).allowed


def test_root_has_every_queue_without_a_parent_as_child(kit):
    """Volcano makes a queue without spec.parent a child of `root` (capacity.go updateAncestors)."""
    queues = (queue("root"), queue("team-a"), queue("team-b", parent="root"))
    warned = judge(_ms(kit, queue_name="root"), ctx_of(*queues))
    assert warned.allowed
    assert any("queue `root` is not a leaf queue (child queues: team-a, team-b)" in t for t in texts(warned, "modelservings.queue"))
    alone = judge(_ms(kit, queue_name="root"), ctx_of(queue("root")))
    assert alone.allowed and not found(alone, "modelservings.queue")
    assert not found(judge(_ms(kit, queue_name="team-a"), ctx_of(*queues)), "modelservings.queue")


def test_a_queue_with_children_stalls_capacity_with_hierarchy(kit):
    """Under `capacity` with hierarchy, one PodGroup in a queue with children makes
    buildHierarchicalQueueAttrs fail and every allocation of the session stop: refused with the
    setting, otherwise warned of in those words."""
    queues = (queue("root"), queue("ml"), queue("ml-a", parent="ml"))
    path = "metadata.annotations[scheduling.volcano.sh/queue-name]"
    detail = (
        "queue `ml` is not a leaf queue (child queues: ml-a): under Volcano's `capacity` plugin with hierarchy, "
        "one PodGroup in it fails the session's queue hierarchy and stalls every allocation in the cluster"
    )
    warned = judge(_ms(kit, queue_name="ml"), ctx_of(*queues))
    assert warned.allowed and texts(warned, "modelservings.queue") == [f'{path}: Invalid value: "ml": {detail}']
    refused = judge(_ms(kit, queue_name="ml"), ctx_of(*queues, settings={"capacity_hierarchy": True}))
    assert not refused.allowed and found(refused, "modelservings.queue") == [(path, detail)]
    leaf = judge(_ms(kit, queue_name="ml-a"), ctx_of(*queues, settings={"capacity_hierarchy": True}))
    assert leaf.allowed and not found(leaf, "modelservings.queue")
