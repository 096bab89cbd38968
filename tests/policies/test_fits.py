"""Could a ModelServing's pods ever be placed: resource names, one node class for the whole pod,
taints, selectors, the gang against the cluster and against one HyperNode of the allowed tier."""

from __future__ import annotations

from dataclasses import replace

from support.willrun import ctx_of, found, hypernode, judge, node, texts

from webhook.kubeversion import KubeVersion
from webhook.policies.fits import close_names

NPU = "huawei.com/ascend-1980"
RULE = "modelservings.fits"
NODES = [
    node(
        f"npu-{i}",
        {"cpu": "64", "memory": "512Gi", "pods": "110", NPU: "8"},
        {"accelerator": "ascend"},
        [{"key": "npu", "value": "true", "effect": "NoSchedule"}],
    )
    for i in range(4)
]
NODES += [node(f"cpu-{i}", {"cpu": "16", "memory": "64Gi", "pods": "110"}) for i in range(2)]
NPU_TOLERATION = {"key": "npu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def _ms(
    kit,
    npus: int | str | None = 4,
    *,
    name: str = NPU,
    workers: int = 1,
    selector: dict | None = None,
    tolerations: list | None = None,
    affinity: dict | None = None,
    topology: dict | None = None,
) -> dict:
    ms = kit.gang_ms()
    for role in ms["spec"]["template"]["roles"]:
        role["workerReplicas"] = workers
        for which in ("entryTemplate", "workerTemplate"):
            spec = role[which]["spec"]
            resources = {"cpu": "1"}
            if npus is not None:
                resources[name] = str(npus)
            spec["containers"][0]["resources"] = {"requests": dict(resources), "limits": dict(resources)}
            spec["tolerations"] = [NPU_TOLERATION] if tolerations is None else tolerations
            if selector is not None:
                spec["nodeSelector"] = selector
            if affinity is not None:
                spec["affinity"] = affinity
    if topology is not None:
        ms["spec"]["template"]["networkTopology"] = topology
    return ms


def test_a_pod_that_fits_a_node_class_passes(kit):
    decision = judge(_ms(kit, 4, selector={"accelerator": "ascend"}), ctx_of(*NODES))
    assert decision.allowed and not found(decision, RULE)


def test_a_resource_name_no_node_advertises_names_the_close_ones(kit):
    decision = judge(_ms(kit, 1, name="huawei.com/Ascend910"), ctx_of(*NODES))
    assert decision.allowed  # warn by default
    got = found(decision, RULE)
    assert (
        "spec.template.roles[0].entryTemplate.spec.containers[0].resources.requests[huawei.com/Ascend910]",
        f"could never fit: no node advertises huawei.com/Ascend910; nodes advertise {NPU}",
    ) in got
    assert len(got) == 4  # each role's entry and worker pod
    denied = judge(_ms(kit, 1, name="huawei.com/Ascend910"), ctx_of(*NODES, rule_actions=((RULE, "deny"),)))
    assert not denied.allowed


def test_close_names():
    assert close_names("huawei.com/Ascend910", {NPU, "nvidia.com/gpu", "cpu"}) == [NPU]
    assert close_names("nvidia.com/GPU", {"nvidia.com/gpu", "nvidia.com/gpu-memory"}) == ["nvidia.com/gpu", "nvidia.com/gpu-memory"]
    assert close_names("example.com/foo", {"cpu", "memory"}) == []


def test_more_per_pod_than_any_node_holds(kit):
    got = found(judge(_ms(kit, 16), ctx_of(*NODES)), RULE)
    assert (
        "spec.template.roles[0].entryTemplate.spec",
        f"could never fit: it asks for 16 {NPU} per pod and the largest node it may use has 8 (free capacity not considered)",
    ) in got


def test_taints_no_toleration_covers(kit):
    [first, *_] = found(judge(_ms(kit, 4, tolerations=[]), ctx_of(*NODES[:4])), RULE)
    assert first[1] == ("could never fit: every node it may use has a taint it does not tolerate (npu=true:NoSchedule) (free capacity not considered)")
    # beside untainted CPU nodes, the cause is that those have no NPUs
    [first, *_] = found(judge(_ms(kit, 4, tolerations=[]), ctx_of(*NODES)), RULE)
    assert first[1].startswith(f"could never fit: it asks for 4 {NPU} per pod and the largest node it may use has 0")
    wrong_effect = [dict(NPU_TOLERATION, effect="NoExecute")]
    assert "does not tolerate" in found(judge(_ms(kit, 4, tolerations=wrong_effect), ctx_of(*NODES[:4])), RULE)[0][1]
    # an Exists toleration of every taint covers it; passing node conditions are never held against a node
    assert not found(judge(_ms(kit, 4, tolerations=[{"operator": "Exists"}]), ctx_of(*NODES)), RULE)
    cordoned = [
        node("n", {"cpu": "64", "memory": "1Ti", "pods": "110", NPU: "8"}, taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    ]
    assert not found(judge(_ms(kit, 1, tolerations=[]), ctx_of(*cordoned)), RULE)


def test_a_selector_or_required_affinity_no_node_matches(kit):
    [(field, detail), *_] = found(judge(_ms(kit, 4, selector={"accelerator": "gpu"}), ctx_of(*NODES)), RULE)
    assert field == "spec.template.roles[0].entryTemplate.spec"
    assert detail == (
        "could never fit: no node has the label accelerator=gpu its nodeSelector asks for (nodes have accelerator=ascend) (free capacity not considered)"
    )
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "accelerator", "operator": "In", "values": ["gpu"]}]},
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["npu-3"]}]},
                ]
            }
        }
    }
    assert not found(judge(_ms(kit, 4, affinity=affinity), ctx_of(*NODES)), RULE)  # the second term matches npu-3
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].pop()
    [(_, detail), *_] = found(judge(_ms(kit, 4, affinity=affinity), ctx_of(*NODES)), RULE)
    assert detail.startswith("could never fit: no node matches its required node affinity: no node has accelerator In (gpu) (")
    empty_term = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
    [(_, detail), *_] = found(judge(_ms(kit, 4, affinity=empty_term), ctx_of(*NODES)), RULE)
    assert "an empty term matches no node" in detail
    # affinity of the wrong shape is not ours to refuse
    for odd in (
        {"nodeAffinity": []},
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [5, {"matchExpressions": [1]}]}}},
    ):
        decision = judge(_ms(kit, 4, affinity=odd), ctx_of(*NODES))
        assert decision.crash is None


def test_the_gang_against_the_cluster(kit):
    # prefill: minRoleReplicas 2, decode 1; each replica an entry and one worker of 8 NPUs: 48 > 32 in all
    got = found(judge(_ms(kit, 8), ctx_of(*NODES)), RULE)
    assert got == [
        (
            "spec.template.gangPolicy.minRoleReplicas",
            f"could never fit: one ServingGroup's gang needs 48 {NPU} and the cluster's nodes have 32 in all (free capacity not considered)",
        )
    ]
    assert not found(judge(_ms(kit, 4), ctx_of(*NODES)), RULE)  # 24 of 32


def test_the_gang_within_one_hypernode_of_the_allowed_tier(kit):
    leaf = [
        hypernode("leaf-a", 1, "leaf", [{"type": "Node", "selector": {"regexMatch": {"pattern": "^npu-[01]$"}}}]),
        hypernode(
            "leaf-b",
            1,
            "leaf",
            [
                {"type": "Node", "selector": {"exactMatch": {"name": "npu-2"}}},
                {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"kubernetes.io/hostname": "npu-3"}}}},
            ],
        ),
        # HyperNode members by exact name: Volcano resolves no other kind (see the test below)
        hypernode("spine", 2, "spine", [{"type": "HyperNode", "selector": {"exactMatch": {"name": n}}} for n in ("leaf-a", "leaf-b")]),
    ]
    ms = _ms(kit, 4, topology={"groupPolicy": {"highestTierAllowed": 1}})  # 24 NPUs; one leaf has 16
    got = found(judge(ms, ctx_of(*NODES, *leaf)), RULE)
    assert got == [
        (
            "spec.template.networkTopology.groupPolicy",
            f"could never fit: one ServingGroup's gang needs 24 {NPU} within one HyperNode of tier 1 or lower, "
            "and the largest has 16 (free capacity not considered)",
        )
    ]
    assert not found(judge(_ms(kit, 4, topology={"groupPolicy": {"highestTierName": "spine"}}), ctx_of(*NODES, *leaf)), RULE)
    soft = _ms(kit, 4, topology={"groupPolicy": {"highestTierAllowed": 1, "mode": "soft"}})
    assert not found(judge(soft, ctx_of(*NODES, *leaf)), RULE)


def _never_fits(tier: int, most: int) -> list[tuple[str, str]]:
    return [
        (
            "spec.template.networkTopology.groupPolicy",
            f"could never fit: one ServingGroup's gang needs 24 {NPU} within one HyperNode of tier {tier} or lower, "
            f"and the largest has {most} (free capacity not considered)",
        )
    ]


def test_hypernode_members_as_volcano_resolves_them(kit, caplog):
    """volcano pkg/util/hypernode/member_selector.go: an empty labelMatch selects no node, a HyperNode
    member given by regex names no HyperNode, a pattern that does not compile selects nothing (noted)."""
    by_tier_1 = _ms(kit, 4, topology={"groupPolicy": {"highestTierAllowed": 1}})  # 24 NPUs
    everything = [hypernode("all", 1, "leaf", [{"type": "Node", "selector": {"regexMatch": {"pattern": "npu"}}}])]
    assert not found(judge(by_tier_1, ctx_of(*NODES, *everything)), RULE)  # 32 NPUs in one HyperNode
    empty = [hypernode("all", 1, "leaf", [{"type": "Node", "selector": {"labelMatch": {}}}])]
    assert found(judge(by_tier_1, ctx_of(*NODES, *empty)), RULE) == _never_fits(1, 0)
    bad = [hypernode("all", 1, "leaf", [{"type": "Node", "selector": {"regexMatch": {"pattern": "npu-(?=0)"}}}])]  # look-ahead: not RE2
    assert found(judge(by_tier_1, ctx_of(*NODES, *bad)), RULE) == _never_fits(1, 0)
    assert any("does not compile as Go's RE2" in r.getMessage() for r in caplog.records)
    leaves = [
        hypernode("leaf-a", 1, "leaf", [{"type": "Node", "selector": {"regexMatch": {"pattern": "^npu-[01]$"}}}]),
        hypernode("leaf-b", 1, "leaf", [{"type": "Node", "selector": {"regexMatch": {"pattern": "^npu-[23]$"}}}]),
        hypernode("spine", 2, "spine", [{"type": "HyperNode", "selector": {"regexMatch": {"pattern": "^leaf-"}}}]),
    ]
    by_spine = _ms(kit, 4, topology={"groupPolicy": {"highestTierName": "spine"}})
    assert found(judge(by_spine, ctx_of(*NODES, *leaves)), RULE) == _never_fits(2, 16)


def test_no_nodes_unlisted_nodes_and_bad_quantities(kit):
    assert not found(judge(_ms(kit, 16), ctx_of()), RULE)  # no nodes at all: nothing to judge by
    unlisted = judge(_ms(kit, 16), ctx_of(unlisted=("Node",)))
    assert unlisted.allowed and any("placement not checked" in t for t in texts(unlisted, RULE))
    odd = [node("odd", {"cpu": "lots", NPU: "8", "memory": "1Ti", "pods": "110"}), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}}]
    decision = judge(_ms(kit, "many", tolerations=[]), ctx_of(*odd))
    assert decision.crash is None


def test_an_update_that_keeps_the_template_is_not_judged_again(kit):
    old = _ms(kit, 16)
    new = _ms(kit, 16)
    new["spec"]["replicas"] = 3
    assert not found(judge(new, ctx_of(*NODES), old=old), RULE)
    changed = _ms(kit, 12)
    assert found(judge(changed, ctx_of(*NODES), old=old), RULE)


def test_the_never_fit_warning_names_what_no_node_has(kit):
    """The key and value no node matches, each term's own, and a nodeSelector's labels that no
    node has together; what the nodes do have for a key is shown beside it."""
    both = {"accelerator": "ascend", "kubernetes.io/hostname": "cpu-0"}
    [(_, detail), *_] = found(judge(_ms(kit, 4, selector=both), ctx_of(*NODES)), RULE)
    assert detail.startswith("could never fit: no node has all the labels its nodeSelector asks for (accelerator=ascend, kubernetes.io/hostname=cpu-0)")
    [(_, detail), *_] = found(judge(_ms(kit, 4, selector={"zone": "a"}), ctx_of(*NODES)), RULE)
    assert "no node has the label zone=a its nodeSelector asks for (no node has the label zone)" in detail
    terms = [
        {"matchExpressions": [{"key": "accelerator", "operator": "Exists"}, {"key": "accelerator", "operator": "In", "values": ["gpu", "tpu"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-9"]}]},
        {
            "matchExpressions": [
                {"key": "accelerator", "operator": "In", "values": ["ascend"]},
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["cpu-1"]},
            ]
        },
    ]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    [(_, detail), *_] = found(judge(_ms(kit, 4, affinity=affinity), ctx_of(*NODES)), RULE)
    assert detail == (
        "could never fit: no node matches its required node affinity: no node has accelerator In (gpu, tpu);"
        " no node has field metadata.name In (gpu-9);"
        " no node meets all of accelerator In (ascend), kubernetes.io/hostname In (cpu-1) (free capacity not considered)"
    )
    [(_, detail), *_] = found(
        judge(
            _ms(
                kit,
                4,
                selector={"accelerator": "ascend"},
                affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms[1:2]}}},
            ),
            ctx_of(*NODES),
        ),
        RULE,
    )
    assert detail.startswith(
        "could never fit: no node matches its required node affinity among the nodes with accelerator=ascend: no node has field metadata.name"
    )


def _each_template(ms: dict, edit) -> dict:
    for role in ms["spec"]["template"]["roles"]:
        for which in ("entryTemplate", "workerTemplate"):
            edit(role[which]["spec"])
    return ms


def test_the_whole_pod_is_counted_as_the_scheduler_counts_it(kit):
    """webhook/podrequests.py's PodRequests (its cases: tests/test_podrequests.py): a sidecar runs
    beside the containers and beside every init container after it, and the overhead adds."""
    sidecar = {"name": "proxy", "image": "proxy", "restartPolicy": "Always", "resources": {"requests": {NPU: "2"}, "limits": {NPU: "2"}}}
    setup = {"name": "setup", "image": "setup", "resources": {"limits": {NPU: "7"}}}  # its limit stands for its request

    def beside(spec):
        spec["initContainers"] = [dict(sidecar)]

    assert not found(judge(_each_template(_ms(kit, 2), beside), ctx_of(*NODES)), RULE)  # 2 + 2 on an 8-NPU node

    def then_setup(spec):
        spec["initContainers"] = [dict(sidecar), dict(setup)]

    [(field, detail), *_] = found(judge(_each_template(_ms(kit, 2), then_setup), ctx_of(*NODES)), RULE)
    assert (field, detail) == (
        "spec.template.roles[0].entryTemplate.spec",
        f"could never fit: it asks for 9 {NPU} per pod and the largest node it may use has 8 (free capacity not considered)",
    )  # the setup container's 7 beside the sidecar's 2

    def with_overhead(spec):
        spec["initContainers"] = [dict(sidecar)]
        spec["overhead"] = {NPU: "5"}

    [(_, detail), *_] = found(judge(_each_template(_ms(kit, 2), with_overhead), ctx_of(*NODES)), RULE)
    assert detail.startswith(f"could never fit: it asks for 9 {NPU} per pod")


def test_a_sidecar_is_an_init_container_where_the_gate_is_off(kit):
    """SidecarContainers: off by default in 1.28, on from 1.29. Where it is off the API server
    drops an init container's restartPolicy, so the scheduler counts it at its own peak, not
    beside the containers: 5 + 4 NPUs would not fit an 8-NPU node, max(5, 4) does."""
    proxy = {"name": "proxy", "image": "proxy", "restartPolicy": "Always", "resources": {"requests": {NPU: "4"}, "limits": {NPU: "4"}}}

    def beside(spec):
        spec["initContainers"] = [dict(proxy)]

    ms = _each_template(_ms(kit, 5), beside)
    ctx = ctx_of(*NODES)
    judged = {
        (minor, gates): found(judge(ms, replace(ctx, kubernetes_version=KubeVersion(1, minor), feature_gates=gates)), RULE)
        for minor, gates in [(29, ()), (28, ()), (28, (("SidecarContainers", True),))]
    }
    assert judged[(29, ())][0][1].startswith(f"could never fit: it asks for 9 {NPU} per pod")
    assert judged[(28, (("SidecarContainers", True),))] == judged[(29, ())]
    assert judged[(28, ())] == []
    assert found(judge(_ms(kit, 4), replace(ctx, kubernetes_version=KubeVersion(1, 28))), RULE) == []  # no init containers at all


def test_pod_level_resources_count_where_the_cluster_has_the_gate_on(kit):
    """PodLevelResources: off by default in 1.33, on from 1.34; the cluster's --feature-gates
    turn it either way. Where it is off the API server drops `spec.resources` and the scheduler
    skips it."""

    def pod_level(spec):
        spec["resources"] = {"requests": {"cpu": "100"}}

    ms = _each_template(_ms(kit, 4), pod_level)
    ctx = ctx_of(*NODES)
    at = {(minor, gates): found(judge(ms, replace(ctx, kubernetes_version=KubeVersion(1, minor), feature_gates=gates)), RULE) for minor, gates in CASES}
    assert at[(34, ())][0][1].startswith("could never fit: it asks for 100 cpu per pod and the largest node it may use has 64")
    assert at[(33, (("PodLevelResources", True),))] == at[(34, ())]
    assert at[(33, ())] == [] and at[(34, (("PodLevelResources", False),))] == []


CASES = [(34, ()), (33, ()), (33, (("PodLevelResources", True),)), (34, (("PodLevelResources", False),))]


def test_a_name_no_node_advertises_is_shown_where_the_pod_asks_for_it(kit):
    def asks(spec):
        spec["resources"] = {"limits": {"hugepages-1Gi": "2Gi", "cpu": "1"}}
        spec["overhead"] = {"example.com/fpga": "1"}
        spec["initContainers"] = [{"name": "i", "image": "i", "resources": {"limits": {"example.com/dsp": "1"}}}]

    got = {field for field, _ in found(judge(_each_template(_ms(kit, 4), asks), ctx_of(*NODES)), RULE)}
    at = "spec.template.roles[0].entryTemplate.spec"
    assert {f"{at}.resources.limits[hugepages-1Gi]", f"{at}.overhead[example.com/fpga]", f"{at}.initContainers[0].resources.limits[example.com/dsp]"} <= got
