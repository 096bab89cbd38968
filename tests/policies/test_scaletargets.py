"""One autoscaler per ModelServing (or role): a second is refused naming the first; KEDA's own HPA,
a CronHPA on an HPA, other roles, the object itself and the opt-out are not conflicts."""

from __future__ import annotations

import pytest
from support.willrun import cron_hpa, ctx_of, found, hpa, judge, policy, scaled_object, texts

from webhook.policies.clusterfacts import NoFacts
from webhook.policies.context import Context
from webhook.policies.scalers import scale_targets


def _rule(obj: dict) -> str:
    return {
        "HorizontalPodAutoscaler": "horizontalpodautoscalers",
        "ScaledObject": "scaledobjects",
        "CronHorizontalPodAutoscaler": "cronhorizontalpodautoscalers",
        "AutoscalingPolicy": "autoscalingpolicies",
    }[obj["kind"]] + ".one-owner"


@pytest.mark.parametrize("first", [policy("p1", "llm"), hpa("h1", "llm"), scaled_object("so1", "llm"), cron_hpa("c1", "llm")], ids=lambda o: o["kind"])
@pytest.mark.parametrize("second", [policy("p2", "llm"), hpa("h2", "llm"), scaled_object("so2", "llm"), cron_hpa("c2", "llm")], ids=lambda o: o["kind"])
def test_a_second_autoscaler_on_a_modelserving_is_refused_naming_the_first(first, second):
    decision = judge(second, ctx_of(first))
    assert not decision.allowed
    [(field, detail)] = found(decision, _rule(second))
    assert f"already scaled by {first['kind']} default/{first['metadata']['name']}" in detail
    assert field.endswith("name") and field.startswith("spec.")


def test_the_object_itself_on_update_is_no_conflict():
    mine = hpa("h1", "llm")
    assert judge(mine, ctx_of(mine), old=mine).allowed


def test_kedas_own_hpa_is_no_conflict_either_way():
    so, made = scaled_object("so1", "llm"), hpa("keda-hpa-so1", "llm", owner="so1")
    assert judge(made, ctx_of(so)).allowed
    assert judge(so, ctx_of(made), old=so).allowed
    # another ScaledObject meets the first one through its HPA, and is told about the ScaledObject
    decision = judge(scaled_object("so2", "llm"), ctx_of(so, made))
    [(_, detail)] = found(decision, "scaledobjects.one-owner")
    assert "already scaled by ScaledObject default/so1" in detail


def test_a_cronhpa_on_the_hpa_is_the_documented_pattern():
    assert judge(cron_hpa("c1", "h1", kind="HorizontalPodAutoscaler"), ctx_of(hpa("h1", "llm"))).allowed
    assert judge(hpa("h1", "llm"), ctx_of(cron_hpa("c1", "h1", kind="HorizontalPodAutoscaler"))).allowed


def test_roles_each_have_their_owner():
    first = policy("p1", "llm", roles=("prefill",))
    assert judge(policy("p2", "llm", roles=("decode",)), ctx_of(first)).allowed
    decision = judge(policy("p2", "llm", roles=("decode", "prefill")), ctx_of(first))
    [(field, detail)] = found(decision, "autoscalingpolicies.one-owner")
    assert field == "spec.disaggregatedTarget.roles[prefill]"
    assert "role prefill of ModelServing default/llm is already scaled by AutoscalingPolicy default/p1" in detail


def test_other_modelservings_and_namespaces_are_no_conflict():
    assert judge(hpa("h2", "other"), ctx_of(hpa("h1", "llm"))).allowed
    assert judge(hpa("h2", "llm", namespace="team-b"), ctx_of(hpa("h1", "llm"))).allowed


def test_the_opt_out_annotation_on_the_newcomer():
    second = hpa("h2", "llm")
    second["metadata"]["annotations"] = {"servinggate.io/shared-scale-target": "true"}
    assert judge(second, ctx_of(policy("p1", "llm"))).allowed


def test_a_kind_not_installed_is_skipped_and_unlisted_ones_warn():
    assert judge(hpa("h2", "llm"), ctx_of(missing=("ScaledObject", "CronHorizontalPodAutoscaler"))).allowed
    decision = judge(hpa("h2", "llm"), ctx_of(unlisted=("ScaledObject",)))
    assert decision.allowed
    assert any("not checked" in t and "ScaledObject objects not listed yet" in t for t in texts(decision, "horizontalpodautoscalers.one-owner"))
    loud = judge(hpa("h2", "llm"), Context(facts=NoFacts()))
    assert loud.allowed and texts(loud, "horizontalpodautoscalers.one-owner")
    assert not judge(hpa("h2", "llm"), Context()).warnings  # no facts given at all (check on files): quiet


def test_odd_shapes_give_no_targets_and_no_crash():
    for odd in (
        {"spec": []},
        {"spec": {"scaleTargetRef": "x"}},
        {"metadata": [], "spec": {"homogeneousTarget": {"target": 5}}},
        {"spec": {"disaggregatedTarget": {"targetRef": {"name": "x"}, "roles": ["a"]}}},
        {"spec": {"heterogeneousTarget": {"params": {"a": 1}}}},
    ):
        for kind in ("HorizontalPodAutoscaler", "AutoscalingPolicy"):
            assert scale_targets(kind, odd) == []
