"""Scenario 7, the other webhooks as oracles: the same objects sent to Kthena's validating webhook and
ours, and to Volcano's and ours, as the API server would send them (an AdmissionReview to each
webhook's URL, found through the kubeconfig in its webhook configuration). Every verdict that differs
must be one of the differences listed here as by design; with Volcano, ours is never the stricter.

The ModelServings are Kthena's gang example and variations of it in our words, one per check of
Kthena's validator (validator.go) and of ours; the PodGroups are those Kthena's controller creates,
read back from the cluster, and variations for the queue and topology checks."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from support.e2e import MS_GROUP, MS_VERSION, PG_GROUP, PG_VERSION, Cluster, OurWebhook, ask, create_request, gang_example, hook_url, poll, role

# Where ours refuses and Kthena's webhook admits, on purpose (docs/policies.md): case -> why.
STRICTER_BY_DESIGN = {
    "reserved label in a template": "modelservings.reserved-labels: Kthena's controller overwrites the key (kthena#1582, open PR #1593)",
    "both tier fields in groupPolicy": "modelservings.network-topology: Volcano's PodGroup webhook refuses the PodGroup Kthena would make",
    "container name not a DNS label": "modelservings.pod-templates: the API server refuses every pod Kthena would create",
    "role below its gang floor, via minRoleReplicas": "none: both refuse (kept to count agreement)",
}
# Where Kthena's webhook refuses and ours admits: none is by design (we are never looser on its checks).
LOOSER_BY_DESIGN: dict[str, str] = {}


def defaulted(ms: dict) -> dict:
    """What the API server would send after the CRD's defaults (those Kthena's validator reads)."""
    out = copy.deepcopy(ms)
    spec = out["spec"]
    spec.setdefault("replicas", 1)
    spec.setdefault("schedulerName", "volcano")
    spec.setdefault("recoveryPolicy", "RoleRecreate")
    spec["template"].setdefault("restartGracePeriodSeconds", 0)
    for r in spec["template"]["roles"]:
        r.setdefault("replicas", 1)
        r.setdefault("maxUnavailable", 1)
    return out


def modelserving_cases(owner: str) -> dict[str, dict]:
    base = gang_example(owner, npu=1)
    cases: dict[str, dict] = {"the gang example": base}

    def variant(name: str, edit: Callable[[dict], Any]) -> None:
        ms = copy.deepcopy(base)
        edit(ms)
        cases[name] = ms

    roles = lambda ms: ms["spec"]["template"]["roles"]  # noqa: E731
    variant("role name with upper case", lambda ms: roles(ms)[0].update(name="Prefill") or ms["spec"]["template"].pop("gangPolicy"))
    variant("role name starting with a digit", lambda ms: roles(ms)[0].update(name="1prefill") or ms["spec"]["template"].pop("gangPolicy"))
    variant("image with a space", lambda ms: roles(ms)[0]["entryTemplate"]["spec"]["containers"][0].update(image="nginx latest"))
    variant("image of blanks only", lambda ms: roles(ms)[1]["workerTemplate"]["spec"]["containers"][0].update(image="   "))
    variant("negative replicas", lambda ms: ms["spec"].update(replicas=-1))
    variant("negative role replicas", lambda ms: roles(ms)[1].update(replicas=-1))
    variant("zero replicas", lambda ms: ms["spec"].update(replicas=0))
    variant("workers without a workerTemplate", lambda ms: roles(ms)[0].pop("workerTemplate"))
    variant("negative workerReplicas", lambda ms: roles(ms)[0].update(workerReplicas=-1))
    variant("minRoleReplicas of an unknown role", lambda ms: ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"].update(router=1))
    variant("role below its gang floor, via minRoleReplicas", lambda ms: ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"].update(decode=3))
    variant("negative minRoleReplicas", lambda ms: ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"].update(decode=-1))
    variant(
        "ServingGroupRecreate with RoleRollingUpdate",
        lambda ms: ms["spec"].update(recoveryPolicy="ServingGroupRecreate", rolloutStrategy={"type": "RoleRollingUpdate"}),
    )
    variant(
        "rollingUpdateConfiguration under RoleRollingUpdate",
        lambda ms: ms["spec"].update(rolloutStrategy={"type": "RoleRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}}),
    )
    variant(
        "maxUnavailable above 100%",
        lambda ms: ms["spec"].update(rolloutStrategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": "150%"}}),
    )
    variant(
        "maxUnavailable 50% of one group",
        lambda ms: ms["spec"].update(rolloutStrategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": "50%"}}),
    )
    variant(
        "maxUnavailable 0",
        lambda ms: ms["spec"].update(rolloutStrategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 0}}),
    )
    variant("role partition without RoleRollingUpdate", lambda ms: roles(ms)[0].update(partition=1))
    variant(
        "role partition under RoleRollingUpdate",
        lambda ms: roles(ms)[0].update(partition=1) or ms["spec"].update(rolloutStrategy={"type": "RoleRollingUpdate"}),
    )
    variant("a name too long for its pods", lambda ms: ms["metadata"].update(name="m" * 56))
    variant("reserved label in a template", lambda ms: roles(ms)[0]["entryTemplate"].update(metadata={"labels": {"modelserving.volcano.sh/role": "x"}}))
    variant("another scheduler", lambda ms: ms["spec"].update(schedulerName="default-scheduler"))
    variant(
        "both tier fields in groupPolicy",
        lambda ms: ms["spec"]["template"].update(networkTopology={"groupPolicy": {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "t1"}}),
    )
    variant("container name not a DNS label", lambda ms: roles(ms)[0]["entryTemplate"]["spec"]["containers"][0].update(name="Leader"))
    variant("four roles", lambda ms: roles(ms).extend([role("router"), role("cache")]))
    return {name: defaulted(ms) for name, ms in cases.items()}


def test_kthena_and_ours_agree_on_modelservings(cluster: Cluster, need, servinggate: OurWebhook, namespace: str, record_property) -> None:
    need("kthena")
    kthena = hook_url(cluster, "validating", "modelservings")
    if kthena is None:
        pytest.skip("kthena: no validating webhook for modelservings reachable by URL (Kthena's webhook off, or service-based)")
    ours = (f"https://127.0.0.1:{servinggate.port}/validate", (servinggate.certs / "ca.crt").read_bytes())
    agree, stricter, looser = [], {}, {}
    for name, ms in modelserving_cases(namespace).items():
        request = create_request(namespace, ms, MS_GROUP, MS_VERSION, "ModelServing", "modelservings")
        theirs, mine = ask(*kthena, request), ask(*ours, request)
        if theirs["allowed"] == mine["allowed"]:
            agree.append(name)
        elif mine["allowed"]:
            looser[name] = (theirs.get("status") or {}).get("message")
        else:
            stricter[name] = (mine.get("status") or {}).get("message")
    record_property("kthena_oracle", f"{len(agree)} agree of {len(agree) + len(stricter) + len(looser)}; stricter {sorted(stricter)}; looser {sorted(looser)}")
    print(
        f"\nKthena oracle: {len(agree)} of {len(agree) + len(stricter) + len(looser)} verdicts agree; ours stricter on {sorted(stricter)}; looser on {sorted(looser)}"
    )
    assert set(looser) <= set(LOOSER_BY_DESIGN), looser
    assert set(stricter) <= set(STRICTER_BY_DESIGN), stricter


def podgroup_cases(cluster: Cluster, ns: str) -> dict[str, dict]:
    """The PodGroup Kthena made for the gang example, read back, and variations of its queue and topology."""
    (made,) = poll(lambda: cluster.podgroups(ns), 60, "Kthena's PodGroup")
    base = {"apiVersion": f"{PG_GROUP}/{PG_VERSION}", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": ns}, "spec": made["spec"]}
    cases = {"Kthena's PodGroup": base}

    def variant(name: str, edit: Callable[[dict], Any]) -> None:
        pg = copy.deepcopy(base)
        edit(pg)
        cases[name] = pg

    variant("a missing queue", lambda pg: pg["spec"].update(queue="no-such-queue"))
    variant("the default queue", lambda pg: pg["spec"].update(queue="default"))
    variant("the root queue", lambda pg: pg["spec"].update(queue="root"))
    variant("both tier fields", lambda pg: pg["spec"].update(networkTopology={"mode": "hard", "highestTierAllowed": 1, "highestTierName": "t1"}))
    variant("one tier field", lambda pg: pg["spec"].update(networkTopology={"mode": "hard", "highestTierAllowed": 1}))
    variant(
        "both tier fields in a subgroup",
        lambda pg: [
            p.update(networkTopology={"mode": "hard", "highestTierAllowed": 1, "highestTierName": "t1"}) for p in pg["spec"].get("subGroupPolicy") or []
        ],
    )
    return cases


def modelserving_for(pg: dict, base: dict) -> dict:
    """The ModelServing whose PodGroup this is: the queue as Kthena's annotation, the topology as groupPolicy/rolePolicy."""
    ms = copy.deepcopy(base)
    spec = pg["spec"]
    if spec.get("queue"):
        ms["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": spec["queue"]}
    topo: dict[str, Any] = {}
    if spec.get("networkTopology"):
        topo["groupPolicy"] = spec["networkTopology"]
    subs = [p.get("networkTopology") for p in spec.get("subGroupPolicy") or [] if p.get("networkTopology")]
    if subs:
        topo["rolePolicy"] = subs[0]
    if topo:
        ms["spec"]["template"]["networkTopology"] = topo
    return ms


def test_volcano_never_admits_what_ours_refuses(cluster: Cluster, need, servinggate: OurWebhook, namespace: str, record_property) -> None:
    """Each PodGroup goes to Volcano's webhook; the ModelServing that would make it goes to ours. Where ours
    refuses the ModelServing, Volcano must refuse the PodGroup (else ours would be stricter than Volcano)."""
    need("kthena", "volcano-controllers")
    volcano = hook_url(cluster, "validating", "podgroups")
    if volcano is None:
        pytest.skip("volcano-webhook: no validating webhook for podgroups reachable by URL")
    cluster.node(f"{namespace}-n0", namespace, npu=8)
    base = gang_example(namespace, npu=1)
    cluster.create_ms(namespace, base)
    ours = (f"https://127.0.0.1:{servinggate.port}/validate", (servinggate.certs / "ca.crt").read_bytes())
    counts = {"agree": 0, "ours stricter": [], "volcano stricter": []}
    for name, pg in podgroup_cases(cluster, namespace).items():
        theirs = ask(*volcano, create_request(namespace, pg, PG_GROUP, PG_VERSION, "PodGroup", "podgroups"))
        ms = defaulted(modelserving_for(pg, base))
        mine = ask(*ours, create_request(namespace, ms, MS_GROUP, MS_VERSION, "ModelServing", "modelservings"))
        if theirs["allowed"] == mine["allowed"]:
            counts["agree"] += 1  # type: ignore[operator]
        elif mine["allowed"]:
            counts["volcano stricter"].append(name)  # type: ignore[union-attr]
        else:
            counts["ours stricter"].append((name, (mine.get("status") or {}).get("message")))  # type: ignore[union-attr]
    record_property("volcano_oracle", json.dumps(counts))
    print(f"\nVolcano oracle: {counts}")
    assert counts["ours stricter"] == [], counts
