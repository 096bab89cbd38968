"""Autoscaler bounds: Kthena AutoscalingPolicy / Binding, HPA, KServe InferenceService, CronHPA."""

from __future__ import annotations

import copy

import pytest

from webhook.policies import Context, NoLookups, engine
from webhook.policies.cron import cron_problem

HOMOGENEOUS = "autoscalingpolicies-create-homogeneous-validating"
INVERTED = "autoscalingpolicies-create-min-greater-than-max-validating"
HPA = "horizontalpodautoscalers-create-modelserving-target-validating"


def disaggregated(kit, roles=None, ratio=None):
    policy = kit.obj(HOMOGENEOUS)
    spec = policy["spec"]
    del spec["homogeneousTarget"]
    spec["disaggregatedTarget"] = {
        "targetRef": {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "name": "sample"},
        "roles": roles
        or {
            "prefill": {"minReplicas": 2, "maxReplicas": 4, "metricSources": {"kv_cache_usage": {"pod": {"name": "m"}}}},
            "decode": {"minReplicas": 1, "maxReplicas": 4, "metricSources": {"kv_cache_usage": {"pod": {"name": "m"}}}},
        },
    }
    if ratio:
        spec["disaggregatedTarget"]["ratioConstraint"] = ratio
    return policy


# ---- AutoscalingPolicy -------------------------------------------------------------------------------


def test_recorded_homogeneous_policy_allowed(kit):
    out = engine.validate(kit.request(HOMOGENEOUS), kit.ctx())
    assert out.matched and out.allowed and [w.text for w in out.warnings] == []


def test_recorded_inverted_bounds_denied(kit):
    """Kthena issues #1668/#1792: the CRD and Kthena's webhook accept minReplicas 5 > maxReplicas 2."""
    out = engine.validate(kit.request(INVERTED), kit.ctx())
    assert kit.causes(out) == [("FieldValueInvalid", "spec.homogeneousTarget.minReplicas", "Invalid value: 5: minReplicas must be <= maxReplicas")]


def test_kthena_metric_target_and_behavior_checks(kit):
    policy = kit.obj(HOMOGENEOUS)
    policy["spec"]["metrics"] = [{"name": "a", "targetValue": "0"}, {"name": "a", "targetValue": "500m"}]
    policy["spec"]["homogeneousTarget"]["target"]["targetRef"] = {"kind": "Deployment", "name": ""}
    policy["spec"]["behavior"] = {"scaleDown": {"period": "31m"}, "scaleUp": {"panicPolicy": {"period": "1m", "panicModeHold": "2h"}}}
    out = kit.validate(policy)
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.metrics[0].targetValue", 'Invalid value: "0": metric target value must be greater than 0 and not equal to infinity'),
        ("FieldValueInvalid", "spec.metrics[1].name", 'Invalid value: "a": duplicate metric name a is not allowed'),
        (
            "FieldValueInvalid",
            "spec.homogeneousTarget.target.targetRef.kind",
            'Invalid value: "Deployment": targetRef.kind must be ModelServing, but got Deployment',
        ),
        ("FieldValueInvalid", "spec.homogeneousTarget.target.targetRef.name", 'Invalid value: "": targetRef.name must be set, but got empty'),
        ("FieldValueInvalid", "spec.behavior.scaleDown.period", 'Invalid value: "31m": stable policy period must be between 0 and 30 minutes'),
        (
            "FieldValueInvalid",
            "spec.behavior.scaleUp.panicPolicy.panicModeHold",
            'Invalid value: "2h": panic policy panic mode hold must be between 0 and 30 minutes',
        ),
    ]


def test_exactly_one_target_and_metrics_required(kit):
    policy = kit.obj(HOMOGENEOUS)
    del policy["spec"]["homogeneousTarget"]
    assert kit.causes(kit.validate(policy)) == [
        ("FieldValueInvalid", "spec", "Invalid value: 0: exactly one of homogeneousTarget, heterogeneousTarget, or disaggregatedTarget must be set")
    ]
    policy = kit.obj(HOMOGENEOUS)
    policy["spec"]["metrics"] = []
    assert kit.causes(kit.validate(policy)) == [("FieldValueRequired", "spec.metrics", "Required value: at least one metric must be set")]


def test_heterogeneous_params_min_max(kit):
    policy = kit.obj(HOMOGENEOUS)
    target = policy["spec"].pop("homogeneousTarget")["target"]
    policy["spec"]["heterogeneousTarget"] = {
        "params": [{"target": target, "minReplicas": 1, "maxReplicas": 3, "cost": 1}, {"target": target, "minReplicas": 4, "maxReplicas": 3, "cost": 2}]
    }
    assert kit.causes(kit.validate(policy)) == [
        ("FieldValueInvalid", "spec.heterogeneousTarget.params[1].minReplicas", "Invalid value: 4: minReplicas must be <= maxReplicas")
    ]


def test_disaggregated_against_the_gang_example(kit):
    out = kit.validate(disaggregated(kit), ctx=kit.ctx(kit.gang_ms()))
    assert out.allowed and [w.text for w in out.warnings] == []


def test_disaggregated_role_missing_and_below_gang_floor(kit):
    roles = {
        "prefill": {"minReplicas": 1, "maxReplicas": 4, "metricSources": {"kv_cache_usage": {"pod": {"name": "m"}}}},
        "router": {"minReplicas": 1, "maxReplicas": 1},
    }
    out = kit.validate(disaggregated(kit, roles), ctx=kit.ctx(kit.gang_ms()))
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.disaggregatedTarget.roles[prefill].minReplicas",
            "Invalid value: 1: must not be below minRoleReplicas (2) of role prefill in ModelServing sample: the ModelServing would refuse that scale-down",
        ),
        (
            "FieldValueInvalid",
            "spec.disaggregatedTarget.roles[router]",
            'Invalid value: "router": role router does not exist in ModelServing sample (roles: decode, prefill)',
        ),
    ]


def test_disaggregated_target_missing_or_unreadable_warns(kit):
    out = kit.validate(disaggregated(kit), ctx=kit.ctx())
    assert out.allowed
    assert [w.text for w in out.warnings] == ["servinggate: role bounds not checked, ModelServing default/sample does not exist yet"]
    out = kit.validate(disaggregated(kit), ctx=Context(lookups=NoLookups()))
    assert out.allowed
    assert [w.text for w in out.warnings] == [
        "servinggate: role bounds not checked, ModelServing default/sample unreadable: no Kubernetes API access configured"
    ]


def test_disaggregated_kthena_checks(kit):
    roles = {
        "prefill": {"minReplicas": 3, "maxReplicas": 2},
        "decode": {"minReplicas": 1, "maxReplicas": 4, "metricSources": {"other": {"pod": {"name": "m"}}}},
    }
    policy = disaggregated(kit, roles, ratio={"numeratorRole": "prefill", "denominatorRole": "decode", "minRatio": "10", "maxRatio": "20"})
    policy["spec"]["metrics"] = [{"name": "kv_cache_usage", "targetValue": "0.8"}]
    out = kit.validate(policy, ctx=kit.ctx(kit.gang_ms()))
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.disaggregatedTarget.roles[decode].metricSources[other]",
            'Invalid value: "other": metricSources key must match an effective metric name',
        ),
        ("FieldValueInvalid", "spec.disaggregatedTarget.roles[prefill].minReplicas", "Invalid value: 3: minReplicas must be <= maxReplicas"),
        (
            "FieldValueRequired",
            "spec.disaggregatedTarget.roles[prefill].metricSources",
            "Required value: metricSources must be set on every non-fixed role when metrics are configured",
        ),
        (
            "FieldValueInvalid",
            "spec.disaggregatedTarget.ratioConstraint",
            'Invalid value: {"maxRatio":"20","minRatio":"10"}: ratioConstraint is not achievable within role replica bounds',
        ),
    ]


def test_ratio_constraint_roles(kit):
    ratio = {"numeratorRole": "prefill", "denominatorRole": "prefill", "minRatio": "1", "maxRatio": "0.5"}
    out = kit.validate(disaggregated(kit, ratio=ratio), ctx=kit.ctx(kit.gang_ms()))
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.disaggregatedTarget.ratioConstraint.denominatorRole",
            'Invalid value: "prefill": numeratorRole and denominatorRole must differ',
        ),
        ("FieldValueInvalid", "spec.disaggregatedTarget.ratioConstraint.minRatio", 'Invalid value: "1": minRatio must be <= maxRatio'),
    ]
    ratio = {"numeratorRole": "prefill", "denominatorRole": "decode", "minRatio": "0.5", "maxRatio": "2"}
    assert kit.validate(disaggregated(kit, ratio=ratio), ctx=kit.ctx(kit.gang_ms())).allowed


# ---- AutoscalingPolicyBinding (v0.4) -------------------------------------------------------------------


def binding(**spec):
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "AutoscalingPolicyBinding",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"policyRef": {"name": "sample-kv"}, **spec},
    }


HOMO_TARGET = {"target": {"targetRef": {"kind": "ModelServing", "name": "sample"}}, "minReplicas": 1, "maxReplicas": 3}


def test_binding_allowed_when_policy_exists(kit):
    out = kit.validate(binding(homogeneousTarget=HOMO_TARGET), ctx=kit.ctx(kit.obj(HOMOGENEOUS)))
    assert out.allowed and [w.text for w in out.warnings] == []


def test_binding_checks(kit):
    homo = copy.deepcopy(HOMO_TARGET)
    homo["minReplicas"] = 4
    homo["target"]["subTargets"] = {"kind": "Pod", "name": ""}
    out = kit.validate(binding(homogeneousTarget=homo), ctx=kit.ctx())
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.homogeneousTarget.target.subTargets.name",
            'Invalid value: "": homogeneousTarget.targetRef.subTarget.name must be set, but got empty',
        ),
        (
            "FieldValueInvalid",
            "spec.homogeneousTarget.target.subTargets.kind",
            'Invalid value: "Pod": homogeneousTarget.targetRef.subTarget.kind must be `Role`, but got Pod',
        ),
        ("FieldValueInvalid", "spec.homogeneousTarget.minReplicas", "Invalid value: 4: minReplicas must be <= maxReplicas"),
        ("FieldValueInvalid", "spec.policyRef.name", 'Invalid value: "sample-kv": autoscaling policy resource sample-kv does not exist'),
    ]


def test_binding_targets(kit):
    ctx = kit.ctx(kit.obj(HOMOGENEOUS))
    assert kit.causes(kit.validate(binding(), ctx=ctx)) == [
        ("FieldValueRequired", "spec.homogeneousTarget", "Required value: spec.homogeneousTarget should be set if spec.heterogeneousTarget does not exist")
    ]
    hetero = {"params": [{"target": {"targetRef": {"kind": "Deployment", "name": "x"}}, "minReplicas": 0, "maxReplicas": 1}]}
    assert kit.causes(kit.validate(binding(heterogeneousTarget=hetero), ctx=ctx)) == [
        (
            "FieldValueInvalid",
            "spec.heterogeneousTarget.params[0].target.targetRef.kind",
            'Invalid value: "Deployment": heterogeneousTarget.params[].targetRef.kind must be ModelServing, but got Deployment',
        )
    ]


def test_binding_role_target_against_gang_floor(kit):
    homo = copy.deepcopy(HOMO_TARGET)
    homo["target"]["subTargets"] = {"kind": "Role", "name": "prefill"}
    out = kit.validate(binding(homogeneousTarget=homo), ctx=kit.ctx(kit.obj(HOMOGENEOUS), kit.gang_ms()))
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.homogeneousTarget.minReplicas",
            "Invalid value: 1: must not be below minRoleReplicas (2) of role prefill in ModelServing sample: the ModelServing would refuse that scale-down",
        )
    ]


def test_binding_policy_lookup_failure_warns(kit):
    out = kit.validate(binding(homogeneousTarget=HOMO_TARGET), ctx=Context(lookups=NoLookups()))
    assert out.allowed
    assert [w.text for w in out.warnings] == [
        "servinggate: policyRef not checked, AutoscalingPolicy default/sample-kv unreadable: no Kubernetes API access configured"
    ]


# ---- HPA ------------------------------------------------------------------------------------------


def test_recorded_hpa_allowed(kit):
    assert engine.validate(kit.request(HPA), kit.ctx()).allowed


def test_hpa_scale_to_zero_and_inverted(kit):
    hpa = kit.obj(HPA)
    hpa["spec"]["minReplicas"] = 0
    hpa["spec"]["maxReplicas"] = 0
    assert kit.causes(kit.validate(hpa)) == [
        (
            "FieldValueInvalid",
            "spec.minReplicas",
            "Invalid value: 0: must be at least 1 for a ModelServing target: at zero there are no pods, so no metrics to scale back up",
        )
    ]
    hpa["spec"]["minReplicas"] = 3
    hpa["spec"]["maxReplicas"] = 2
    assert kit.causes(kit.validate(hpa)) == [("FieldValueInvalid", "spec.maxReplicas", "Invalid value: 2: must be greater than or equal to minReplicas (3)")]


def test_hpa_of_other_kinds_is_not_ours(kit):
    hpa = kit.obj(HPA)
    hpa["spec"]["scaleTargetRef"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}
    hpa["spec"]["minReplicas"] = 0
    assert kit.validate(hpa).allowed


# ---- KServe InferenceService -------------------------------------------------------------------------


def isvc(raw=False, **predictor):
    meta = {"name": "llm", "namespace": "default"}
    if raw:
        meta["annotations"] = {"serving.kserve.io/deploymentMode": "RawDeployment"}
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": meta,
        "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"}}, **predictor}},
    }


def test_inference_service_allowed(kit):
    out = kit.validate(isvc(minReplicas=0, maxReplicas=3, scaleMetric="concurrency", scaleTarget=10))
    assert out.allowed and [w.text for w in out.warnings] == []


def test_inference_service_denied(kit):
    out = kit.validate(isvc(raw=True, minReplicas=0, scaleMetric="gpu", scaleTarget=0))
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.predictor.minReplicas", "Invalid value: 0: must be at least 1 in RawDeployment mode (no scale-to-zero)"),
        ("FieldValueNotSupported", "spec.predictor.scaleMetric", 'Unsupported value: "gpu": supported values: "cpu", "memory", "concurrency", "rps"'),
        ("FieldValueInvalid", "spec.predictor.scaleTarget", "Invalid value: 0: must be greater than 0"),
    ]
    out = kit.validate(isvc(minReplicas=-1, maxReplicas=2))
    assert kit.causes(out) == [("FieldValueInvalid", "spec.predictor.minReplicas", "Invalid value: -1: must be greater than or equal to 0")]
    out = kit.validate(isvc(minReplicas=3, maxReplicas=2))
    assert kit.causes(out) == [("FieldValueInvalid", "spec.predictor.maxReplicas", "Invalid value: 2: must be greater than or equal to minReplicas (3)")]


def test_inference_service_cpu_target_above_100_warns(kit):
    out = kit.validate(isvc(scaleMetric="cpu", scaleTarget=150))
    assert out.allowed
    assert [w.text for w in out.warnings] == ["servinggate: spec.predictor.scaleTarget 150 is above 100% cpu utilisation; the autoscaler may never scale up"]


# ---- CronHPA --------------------------------------------------------------------------------------


def cronhpa(*jobs, ref=True):
    spec = {"jobs": list(jobs)}
    if ref:
        spec["scaleTargetRef"] = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "name": "sample"}
    return {
        "apiVersion": "autoscaling.alibabacloud.com/v1beta1",
        "kind": "CronHorizontalPodAutoscaler",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": spec,
    }


def test_cronhpa_allowed(kit):
    out = kit.validate(
        cronhpa({"name": "up", "schedule": "0 0 8 * * MON-FRI", "targetSize": 4}, {"name": "down", "schedule": "0 */30 20-23 ? * *", "targetSize": 0})
    )
    assert out.allowed


def test_cronhpa_denied(kit):
    out = kit.validate(
        cronhpa({"name": "up", "schedule": "0 8 * * *", "targetSize": -1}, {"name": "up", "schedule": "0 0 25 * * *", "targetSize": 1}, ref=False)
    )
    assert kit.causes(out) == [
        ("FieldValueRequired", "spec.scaleTargetRef", "Required value: the workload to scale needs kind and name"),
        (
            "FieldValueInvalid",
            "spec.jobs[0].schedule",
            'Invalid value: "0 8 * * *": expected 6 fields (second minute hour day-of-month month day-of-week), found 5',
        ),
        ("FieldValueInvalid", "spec.jobs[0].targetSize", "Invalid value: -1: must be a non-negative integer"),
        ("FieldValueDuplicate", "spec.jobs[1].name", 'Duplicate value: "up"'),
        ("FieldValueInvalid", "spec.jobs[1].schedule", "Invalid value: \"0 0 25 * * *\": hour '25' is out of range 0-23"),
    ]


@pytest.mark.parametrize(
    "schedule, problem",
    [
        ("*/15 * * * * *", None),
        ("0 30 1 1,15 JAN-JUN ?", None),
        ("@every 5m", None),
        ("@daily", None),
        ("@every 0s", "@every needs a positive duration such as 30s or 5m"),
        ("0 0 0 ? * 7", "day of week '7' is out of range 0-6"),
        ("0 0 ? * * *", "'?' is not allowed in the hour field"),
        ("0 0 10-5 * * *", "hour range '10-5' is backwards"),
        ("0 0 */0 * * *", "step of the hour field must be positive"),
        ("x 0 0 * * *", "invalid second field 'x'"),
        ("", "schedule must be a non-empty cron expression"),
    ],
)
def test_cron_schedules(schedule, problem):
    assert cron_problem(schedule) == problem


# ---- never a crash on odd input ------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.examples import examples  # noqa: E402

KEYS = [
    "metrics",
    "name",
    "targetValue",
    "homogeneousTarget",
    "heterogeneousTarget",
    "disaggregatedTarget",
    "params",
    "target",
    "targetRef",
    "kind",
    "minReplicas",
    "maxReplicas",
    "roles",
    "ratioConstraint",
    "numeratorRole",
    "denominatorRole",
    "minRatio",
    "maxRatio",
    "metricSources",
    "behavior",
    "scaleUp",
    "scaleDown",
    "period",
    "panicPolicy",
    "policyRef",
    "subTargets",
    "scaleTargetRef",
    "predictor",
    "scaleMetric",
    "scaleTarget",
    "jobs",
    "schedule",
    "targetSize",
]
odd = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=True)
    | st.sampled_from(["", "ModelServing", "1m", "0.5", "Role", "* * * * * *", "prefill"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=25,
)
KINDS = [
    ("workload.serving.volcano.sh/v1alpha1", "AutoscalingPolicy"),
    ("workload.serving.volcano.sh/v1alpha1", "AutoscalingPolicyBinding"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("serving.kserve.io/v1beta1", "InferenceService"),
    ("autoscaling.alibabacloud.com/v1beta1", "CronHorizontalPodAutoscaler"),
]


@settings(max_examples=examples(300), deadline=None)
@given(kind=st.sampled_from(KINDS), spec=odd)
def test_odd_shapes_never_crash(kit, kind, spec):
    obj = {"apiVersion": kind[0], "kind": kind[1], "metadata": {"name": "x", "namespace": "default"}, "spec": spec}
    out = kit.validate(obj, ctx=kit.ctx(kit.gang_ms()))
    assert out.matched and out.code in (200, 422)
