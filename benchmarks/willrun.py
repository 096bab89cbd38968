"""What the will-it-run rules cost a webhook worker: the memory of the cluster-fact projections,
and the CPU they add to a ModelServing review.

The cluster: 5,000 Nodes in 40 shapes (four accelerator kinds, taints on half, a unique hostname
each), 2,000 ModelServings, 1,000 HPAs, 500 AutoscalingPolicies, 250 ScaledObjects, 250 CronHPAs,
40 Queues, 625 leaf HyperNodes of 8 nodes under 20 spine HyperNodes, and the PodGroup CRD.

Memory: tracemalloc of the whole store (every kept kind) plus the facts derived from it once
(node classes, HyperNode capacities, queues, the autoscaler index), beside a store of the
ModelServings alone measured the same way in the same run; the difference is what the cluster
facts add (AutoscalingPolicies counted in it whole: they now keep their targets).

CPU: the CPU time (thread_time: the machine may be shared, and wall time would count waiting) of
the same ModelServing review (Kthena's gang example asking for NPUs, with a queue annotation and
a hard network topology) with the will-it-run rules on and off, interleaved; and an HPA review
with the one-owner rule on and off. Targets (issue 30): under 20 MiB per worker, under 150 µs added
per ModelServing review.

Usage: python benchmarks/willrun.py [--rounds 3000]
Prints figures; it passes or fails nothing.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import re
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import orjson  # noqa: E402
from support.willrun import cron_hpa, hpa, hypernode, node, podgroup_crd, policy, queue, scaled_object  # noqa: E402

from webhook.admission.review import make_request  # noqa: E402
from webhook.policies import Context, DictLookups, PolicySettings, engine  # noqa: E402
from webhook.policies.clusterfacts import ClusterFacts  # noqa: E402
from webhook.policies.projections import KEPT, LOOKED_UP, kept  # noqa: E402
from webhook.policies.store import ProjectionStore  # noqa: E402

NPUS = ("huawei.com/ascend-1980", "huawei.com/Ascend910", "nvidia.com/gpu", "huawei.com/ascend-310")
MS_RULES = ("modelservings.fits", "modelservings.topology-facts", "modelservings.queue", "modelservings.network-topology")
HPA_RULE = "horizontalpodautoscalers.one-owner"


def gang_ms() -> dict:
    review = json.loads((REPO / "tests/fixtures/admission/modelservings-create-gang-example-validating.json").read_text())
    return review["request"]["object"]


def cluster() -> tuple[list[dict], list[dict]]:
    """(cluster-fact objects, looked-up objects)."""
    facts: list[dict] = []
    for i in range(5000):
        shape = i % 40
        npu = NPUS[shape % 4]
        taints = [{"key": "accelerator", "value": npu.rpartition("/")[2], "effect": "NoSchedule"}] if shape % 2 else []
        facts.append(
            node(
                f"node-{i:05d}",
                {"cpu": str(64 + shape), "memory": f"{512 + shape}Gi", "pods": "110", npu: "8", "ephemeral-storage": "1700Gi", "hugepages-2Mi": "0"},
                {
                    "accelerator": npu.rpartition("/")[2],
                    "pool": f"pool-{shape}",
                    "topology.kubernetes.io/zone": f"z{shape % 3}",
                    "kubernetes.io/arch": "arm64",
                    "kubernetes.io/os": "linux",
                },
                taints,
            )
        )
    for leaf in range(625):
        facts.append(
            hypernode(
                f"leaf-{leaf}", 1, "leaf", [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^node-0*{leaf * 8 + k}$"}}} for k in range(0, 8, 4)]
            )
        )
    for spine in range(20):
        # Volcano resolves a HyperNode member by exactMatch only: one member per leaf whose name
        # starts with the spine's number (the regexMatch `^leaf-{spine}[0-9]*$` this once was)
        leaves = [leaf for leaf in range(625) if re.fullmatch(f"{spine}[0-9]*", str(leaf))]
        facts.append(hypernode(f"spine-{spine}", 2, "spine", [{"type": "HyperNode", "selector": {"exactMatch": {"name": f"leaf-{leaf}"}}} for leaf in leaves]))
    facts += [queue(f"q{i}") for i in range(40)] + [podgroup_crd(True)]
    looked: list[dict] = []
    for i in range(2000):
        ms = gang_ms()
        ms["metadata"].update(name=f"serving-{i}", namespace=f"team-{i % 20}")
        looked.append(ms)
    facts += [hpa(f"h{i}", f"serving-{i}", namespace=f"team-{i % 20}") for i in range(1000)]
    looked += [policy(f"p{i}", f"serving-{1000 + i}", namespace=f"team-{i % 20}") for i in range(500)]
    facts += [scaled_object(f"so{i}", f"serving-{1500 + i}", namespace=f"team-{i % 20}") for i in range(250)]
    facts += [cron_hpa(f"c{i}", f"serving-{1750 + i}", namespace=f"team-{i % 20}") for i in range(250)]
    return facts, looked


def fill(store: ProjectionStore, objects: list[dict], kinds: tuple) -> None:
    for entry in kinds:
        store.replace(entry, [o for o in objects if o["kind"] == entry.kind and kept(str(o["apiVersion"]).rpartition("/")[0], o["kind"]) is entry])


def memory(objects: list[dict], kinds: tuple, derive: bool) -> float:
    """MiB held by a store of `kinds` filled from `objects` (and the facts derived from it)."""
    encoded = orjson.dumps(objects)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = ProjectionStore(kinds)
    decoded = orjson.loads(encoded)  # as a watcher decodes each page: what the store keeps of it stays
    fill(store, decoded, kinds)
    del decoded
    facts = ClusterFacts(store)
    if derive:
        facts.node_classes(), facts.hypernode_most(), facts.queues(), facts.scale_targets("team-0"), facts.by_label()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del store, facts
    return size / 2**20


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def interleaved(req, on: Context, off: Context, rounds: int) -> tuple[list[float], list[float]]:
    with_rules: list[float] = []
    without: list[float] = []
    clock = time.thread_time_ns
    for _ in range(rounds):
        t0 = clock()
        engine.validate(req, on)
        t1 = clock()
        engine.validate(req, off)
        t2 = clock()
        with_rules.append((t1 - t0) / 1000)
        without.append((t2 - t1) / 1000)
    return with_rules, without


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3000)
    args = parser.parse_args()
    facts_objects, looked = cluster()
    everything = facts_objects + looked
    whole_mib = memory(everything, KEPT, derive=True)
    ms_mib = memory(everything, LOOKED_UP[:1], derive=False)
    print("memory per worker (tracemalloc, this run)")
    print(f"  the whole store and the facts derived from it:  {whole_mib:6.2f} MiB")
    print(f"  the 2,000 ModelServings alone, as before:       {ms_mib:6.2f} MiB")
    print(f"  added by the cluster facts (and the policies' targets): {whole_mib - ms_mib:6.2f} MiB   (target < 20 MiB)")

    store = ProjectionStore()
    fill(store, everything, tuple(store.kinds))
    facts = ClusterFacts(store)
    print(f"  node classes: {len(facts.node_classes())} for 5,000 nodes")
    settings_on = PolicySettings()
    off_actions = tuple((r, "off") for r in MS_RULES)
    on = Context(settings=settings_on, lookups=store, facts=facts)
    off = Context(settings=PolicySettings(rule_actions=off_actions), lookups=store, facts=facts)
    ms = gang_ms()
    ms["metadata"].update(name="bench", namespace="team-0", annotations={"scheduling.volcano.sh/queue-name": "q1"})
    ms["spec"]["template"]["networkTopology"] = {"groupPolicy": {"mode": "hard", "highestTierAllowed": 2}}
    for role in ms["spec"]["template"]["roles"]:
        for which in ("entryTemplate", "workerTemplate"):
            limits = {"cpu": "8", "memory": "64Gi", "huawei.com/ascend-1980": "4"}
            spec = role[which]["spec"]
            spec["containers"][0]["resources"] = {"requests": dict(limits), "limits": dict(limits)}
            spec["tolerations"] = [{"key": "accelerator", "operator": "Exists", "effect": "NoSchedule"}]
            spec["nodeSelector"] = {"accelerator": "ascend-1980"}
    req = make_request(copy.deepcopy(ms))
    decision = engine.validate(req, on)
    assert decision.allowed and not decision.warnings, [n.text for n in decision.warnings]
    interleaved(req, on, off, 200)  # warm up
    with_rules, without = interleaved(req, on, off, args.rounds)
    print(f"\nModelServing review, {args.rounds} rounds interleaved (µs)")
    for name, samples in (("with the will-it-run rules", with_rules), ("without (the four rules off)", without)):
        print(f"  {name:32s} p50 {percentile(samples, 0.5):8.1f}   p90 {percentile(samples, 0.9):8.1f}")
    print(f"  added p50: {percentile(with_rules, 0.5) - percentile(without, 0.5):8.1f} µs   (target < 150 µs)")

    hpa_req = make_request(hpa("new", "serving-1", namespace="team-1"))
    hpa_off = Context(settings=PolicySettings(rule_actions=((HPA_RULE, "off"),)), lookups=DictLookups(), facts=facts)
    hpa_on = Context(lookups=DictLookups(), facts=facts)
    interleaved(hpa_req, hpa_on, hpa_off, 200)
    with_rule, without_rule = interleaved(hpa_req, hpa_on, hpa_off, args.rounds)
    print(
        f"\nHPA review (1,500 autoscalers in the store), one-owner rule on / off (µs): "
        f"p50 {percentile(with_rule, 0.5):.1f} / {percentile(without_rule, 0.5):.1f}"
    )


if __name__ == "__main__":
    main()
