"""Projections keep what the rules read: every rule that looks an object up answers the same from
its projection as from the whole object; the store answers like DictLookups once listed."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import REPO  # tests/ is on sys.path via the root conftest
from support.examples import examples

from webhook.admission.review import make_request
from webhook.kthena import AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, MODELSERVING_API_VERSION, MODELSERVING_KIND
from webhook.policies import Context, DictLookups, LookupFailed, engine
from webhook.policies.modelservings import check_scale
from webhook.policies.projections import FETCHED, LOOKED_UP, looked_up, project
from webhook.policies.store import ProjectionStore

MS_ENTRY = looked_up(MODELSERVING_API_VERSION.rpartition("/")[0], MODELSERVING_KIND)


def _with(ms: dict, **spec) -> dict:
    ms = copy.deepcopy(ms)
    ms["spec"].update(spec)
    return ms


def _pod(ms_name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{ms_name}-0-prefill-0-0", "namespace": "default", "labels": {"modelserving.volcano.sh/name": ms_name}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


def _binding(ms_name: str, role: str, minimum: int, policy: str = "p") -> dict:
    return {
        "apiVersion": AUTOSCALINGPOLICY_API_VERSION,
        "kind": "AutoscalingPolicyBinding",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {
            "policyRef": {"name": policy},
            "homogeneousTarget": {
                "target": {"targetRef": {"kind": "ModelServing", "name": ms_name}, "subTargets": {"kind": "Role", "name": role}},
                "minReplicas": minimum,
                "maxReplicas": 9,
            },
        },
    }


def _answers(ms: dict) -> list:
    """What every rule that reads a looked-up ModelServing says about `ms`."""
    name = ms["metadata"]["name"]
    ctx = Context(
        lookups=DictLookups(
            [ms, {"apiVersion": AUTOSCALINGPOLICY_API_VERSION, "kind": AUTOSCALINGPOLICY_KIND, "metadata": {"name": "p", "namespace": "default"}}]
        )
    )
    out = []
    for n in (0, 1, 3, 40):
        scale = make_request(
            {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name, "namespace": "default"}, "spec": {"replicas": n}},
            operation="UPDATE",
            sub_resource="scale",
        )
        out.append(check_scale(scale, ms, n, ctx))
    out.append(engine.mutate(make_request(_pod(name)), ctx).patch)
    listed = ms["spec"]["template"].get("roles")
    roles = [r.get("name") for r in (listed if isinstance(listed, list) else []) if isinstance(r, dict)] + ["missing"]
    for role in roles:
        for minimum in (0, 1, 5):
            decision = engine.validate(make_request(_binding(name, role, minimum)), ctx)
            out.append((decision.allowed, [str(e.error) for e in decision.errors], [n.text for n in decision.warnings]))
    return out


def _projected(ms: dict) -> dict:
    return project(MS_ENTRY, ms)


def test_every_looked_up_kind_has_a_projection():
    from deploy.test_rbac import looked_up_resources

    assert {(e.group, e.plural) for e in LOOKED_UP + FETCHED} == looked_up_resources()


def test_rules_answer_the_same_from_the_projection(kit):
    ms = kit.gang_ms()
    ms["metadata"]["namespace"] = "default"
    cases = [
        ms,
        _with(ms, schedulerName="other"),
        _with(ms, replicas=7),
        _with(ms, rolloutStrategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": "50%", "partition": 1}}),
        _with(ms, rolloutStrategy={"type": "RoleRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 0}}),
        # Kthena's rollingupdate example after kthena#1626: a scale must not lose the surge budget.
        _with(ms, rolloutStrategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1}}),
        _with(
            ms, rolloutStrategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": "10%", "partition": 2}}
        ),
    ]
    for case in cases:
        assert _answers(_projected(case)) == _answers(case)


def test_the_projection_drops_the_pod_templates(kit):
    ms = kit.gang_ms()
    projected = _projected(ms)
    assert "entryTemplate" not in str(projected) and "workerTemplate" not in str(projected)
    assert projected["spec"]["template"]["gangPolicy"] == ms["spec"]["template"]["gangPolicy"]
    assert [r["name"] for r in projected["spec"]["template"]["roles"]] == [r["name"] for r in ms["spec"]["template"]["roles"]]


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 70) | st.text("ab%0-", max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "replicas", "x"]), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    replicas=_values,
    roles=st.lists(
        st.fixed_dictionaries({"name": st.sampled_from(["prefill", "decode", "Bad"]), "replicas": _values, "workerReplicas": _values, "entryTemplate": _values})
    )
    | _values,
    mins=_values,
    strategy=_values,
    scheduler=_values,
)
def test_rules_answer_the_same_for_odd_shapes(kit, replicas, roles, mins, strategy, scheduler):
    ms = kit.gang_ms()
    ms["metadata"]["namespace"] = "default"
    ms["spec"] = {
        "replicas": replicas,
        "schedulerName": scheduler,
        "rolloutStrategy": strategy,
        "template": {"roles": roles, "gangPolicy": {"minRoleReplicas": mins}},
    }
    assert _answers(_projected(ms)) == _answers(ms)


def test_store_lists_then_follows_events(kit):
    ms = kit.gang_ms()
    ms["metadata"]["namespace"] = "default"
    store = ProjectionStore()
    with pytest.raises(LookupFailed, match="not listed yet"):
        store.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", ms["metadata"]["name"])
    assert store.replace(MS_ENTRY, iter([ms]), "5") == 1
    name = ms["metadata"]["name"]
    assert store.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", name) == _projected(ms)
    assert store.get(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", "other") is None  # listed: absent
    store.apply(MS_ENTRY, "MODIFIED", _with(ms, schedulerName="other"))
    assert store.cached(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", name)["spec"]["schedulerName"] == "other"
    store.apply(MS_ENTRY, "DELETED", ms)
    assert store.cached(MODELSERVING_API_VERSION, MODELSERVING_KIND, "default", name) is None
    with pytest.raises(LookupFailed, match="not kept"):
        store.get("v1", "Pod", "default", "x")
    states = {s.kind: s for s in store.states()}
    assert states[MODELSERVING_KIND].synced and not states[AUTOSCALINGPOLICY_KIND].synced
    assert "ModelServing: 0 cached, watching" in store.describe() and "AutoscalingPolicy: not listed yet" in store.describe()


_MEASURE = """
import copy, gc, json, sys, tracemalloc
from webhook.kthena import MODELSERVING_API_VERSION, MODELSERVING_KIND
from webhook.policies.projections import looked_up
from webhook.policies.store import ProjectionStore
base = json.load(sys.stdin)
objects = []
for i in range(1000):
    ms = copy.deepcopy(base)
    ms["metadata"].update(name=f"serving-{i}", namespace=f"team-{i % 20}")
    objects.append(ms)
store = ProjectionStore()
entry = looked_up(MODELSERVING_API_VERSION.rpartition("/")[0], MODELSERVING_KIND)
gc.collect()
tracemalloc.start()
store.replace(entry, objects)
gc.collect()
print(tracemalloc.get_traced_memory()[0])
"""


def test_a_thousand_modelservings_stay_small(kit):
    """The bound docs/server.md names: the store's memory for 1,000 Kthena ModelServings.
    Measured in a fresh interpreter: what earlier tests leave behind (hypothesis's state among
    it) changes what an allocation costs in this one."""
    done = subprocess.run([sys.executable, "-c", _MEASURE], input=json.dumps(kit.gang_ms()), capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    size = int(done.stdout.split()[-1])
    print(f"store of 1,000 ModelServings: {size / 1024:.0f} KiB")
    assert size < 3 * 1024 * 1024
