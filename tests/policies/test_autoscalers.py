"""Autoscaler bounds: Kthena AutoscalingPolicy / Binding, HPA, KServe InferenceService, CronHPA."""

from __future__ import annotations

import copy
import json

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


def isvc(mode=None, annotations=None, **predictor):
    meta = {"name": "llm", "namespace": "default", "annotations": dict(annotations or {})}
    if mode is not None:
        meta["annotations"]["serving.kserve.io/deploymentMode"] = mode
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": meta,
        "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"}}, **predictor}},
    }


def kserve_config(mode, namespace="kserve"):
    """KServe's inferenceservice-config as its chart ships it, the default mode changed."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "inferenceservice-config", "namespace": namespace},
        "data": {"deploy": json.dumps({"defaultDeploymentMode": mode}, indent=2)},
    }


def warned(out):
    return [w.text for w in out.warnings]


NO_MODE = (
    "servinggate: deployment mode unknown (no annotation, and ConfigMap kserve/inferenceservice-config does not exist): only the checks of every mode were made"
)


def test_the_guides_inference_service_is_admitted_in_standard_mode(kit):
    # The ACK guide's qwen-cronhpa predictor: minReplicas 1, maxReplicas 10, cpu at 10%.
    for ctx, mode in ((kit.ctx(), "Standard"), (kit.ctx(kserve_config("Standard")), None)):
        out = kit.validate(isvc(mode, minReplicas=1, maxReplicas=10, scaleMetric="cpu", scaleTarget=10), ctx=ctx)
        assert out.allowed and warned(out) == []


def test_bounds_refused_in_every_mode(kit):
    for mode in ("Standard", "Knative", None):
        out = kit.validate(isvc(mode, minReplicas=3, maxReplicas=2))
        assert kit.causes(out) == [("FieldValueInvalid", "spec.predictor.maxReplicas", "Invalid value: 2: must be greater than or equal to minReplicas (3)")]
        out = kit.validate(isvc(mode, minReplicas=-1, maxReplicas=-2, scaleTarget=0))
        assert kit.causes(out) == [
            ("FieldValueInvalid", "spec.predictor.minReplicas", "Invalid value: -1: must be greater than or equal to 0"),
            ("FieldValueInvalid", "spec.predictor.maxReplicas", "Invalid value: -2: must be greater than or equal to 0"),
            ("FieldValueInvalid", "spec.predictor.scaleTarget", "Invalid value: 0: must be greater than 0"),
        ]
        out = kit.validate(isvc(mode, scaleMetric="gpu"))
        assert kit.causes(out) == [
            ("FieldValueNotSupported", "spec.predictor.scaleMetric", 'Unsupported value: "gpu": supported values: "cpu", "memory", "concurrency", "rps"')
        ]
    # maxReplicas 0 is "no limit" to KServe: never compared with minReplicas
    assert kit.validate(isvc("Knative", minReplicas=3, maxReplicas=0)).allowed


def test_standard_mode_admits_what_kserve_admits_and_says_what_its_hpa_does(kit):
    # minReplicas 0: admitted by KServe in every mode; its HPA raises it to 1 (createHPA)
    for mode in ("Standard", "RawDeployment"):
        out = kit.validate(isvc(mode, minReplicas=0, maxReplicas=3))
        assert out.allowed
        assert "servinggate: spec.predictor.minReplicas 0: KServe's HPA in Standard mode keeps at least 1 replica (no scale to zero), minReplicas 1" in warned(
            out
        )
    assert warned(kit.validate(isvc("RawDeployment", minReplicas=1, maxReplicas=3))) == [
        "servinggate: metadata.annotations[serving.kserve.io/deploymentMode] RawDeployment is deprecated: KServe reads it as Standard"
    ]
    # maxReplicas 0 or unset with a metric: the HPA's maxReplicas becomes minReplicas
    out = kit.validate(isvc("Standard", minReplicas=2, maxReplicas=0))
    assert warned(out) == [
        "servinggate: spec.predictor.maxReplicas is 0: in Standard mode KServe's HPA gets maxReplicas = minReplicas (2), so the component does not scale"
    ]
    out = kit.validate(isvc("Standard", scaleMetric="cpu", scaleTarget=50))
    assert warned(out) == [
        "servinggate: spec.predictor.maxReplicas is not set: in Standard mode KServe's HPA gets maxReplicas = minReplicas (1), so the component does not scale"
    ]
    # a Knative metric: KServe's webhook admits it without the class annotation; its HPA gets no metric
    out = kit.validate(isvc("Standard", minReplicas=1, maxReplicas=3, scaleMetric="concurrency", scaleTarget=10))
    assert out.allowed and warned(out) == [
        "servinggate: spec.predictor.scaleMetric concurrency is a Knative metric: KServe's HPA in Standard mode gets no metric for it and scales on CPU at 80% (the HPA's default)"
    ]
    out = kit.validate(isvc("Standard", minReplicas=1, maxReplicas=3, scaleMetric="cpu", scaleTarget=150))
    assert out.allowed
    assert warned(out) == ["servinggate: spec.predictor.scaleTarget 150 is above 100% cpu utilisation; the autoscaler may never scale up"]


def test_standard_mode_with_the_hpa_class_refuses_what_kserves_webhook_refuses(kit):
    hpa = {"serving.kserve.io/autoscalerClass": "hpa"}
    out = kit.validate(isvc("Standard", hpa, minReplicas=1, maxReplicas=3, scaleMetric="rps", scaleTarget=150))
    assert kit.causes(out) == [
        ("FieldValueNotSupported", "spec.predictor.scaleMetric", 'Unsupported value: "rps": supported values: "cpu", "memory"'),
        ("FieldValueInvalid", "spec.predictor.scaleTarget", "Invalid value: 150: must be at most 100: KServe's HPA target is a utilisation percentage"),
    ]
    keda = {"serving.kserve.io/autoscalerClass": "keda"}
    out = kit.validate(isvc("Standard", keda, minReplicas=1, maxReplicas=3, scaleMetric="cpu"))
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.predictor.scaleMetric",
            'Invalid value: "cpu": is not supported with KServe\'s KEDA autoscaler class: use autoScaling.metrics',
        )
    ]
    out = kit.validate(isvc("Standard", {"serving.kserve.io/autoscalerClass": "vpa"}))
    assert kit.causes(out) == [
        (
            "FieldValueNotSupported",
            "metadata.annotations[serving.kserve.io/autoscalerClass]",
            'Unsupported value: "vpa": supported values: "hpa", "external", "keda", "none"',
        )
    ]


def test_knative_mode_refuses_hpa_metrics_unless_knatives_hpa_class(kit):
    out = kit.validate(isvc("Knative", minReplicas=0, maxReplicas=3, scaleMetric="cpu", scaleTarget=10))
    assert kit.causes(out) == [("FieldValueNotSupported", "spec.predictor.scaleMetric", 'Unsupported value: "cpu": supported values: "concurrency", "rps"')]
    out = kit.validate(isvc("Serverless", minReplicas=0, maxReplicas=3, scaleMetric="concurrency", scaleTarget=10))
    assert out.allowed and warned(out) == [
        "servinggate: metadata.annotations[serving.kserve.io/deploymentMode] Serverless is deprecated: KServe reads it as Knative"
    ]
    knative_hpa = {"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev"}
    assert kit.validate(isvc("Knative", knative_hpa, minReplicas=1, maxReplicas=3, scaleMetric="cpu", scaleTarget=10)).allowed
    out = kit.validate(isvc("Knative", minReplicas=1, maxReplicas=3, deploymentStrategy={"type": "Recreate"}))
    assert kit.causes(out) == [
        ("FieldValueForbidden", "spec.predictor.deploymentStrategy", "Forbidden: is only supported in KServe's Standard (RawDeployment) mode")
    ]


def test_the_mode_comes_from_kserves_configmap_when_no_annotation_says_it(kit):
    body = {"minReplicas": 0, "maxReplicas": 3, "scaleMetric": "cpu", "scaleTarget": 10}
    # Standard by the ConfigMap (legacy word too): the HPA rules and their warnings
    for word in ("Standard", "RawDeployment"):
        out = kit.validate(isvc(**body), ctx=kit.ctx(kserve_config(word)))
        assert out.allowed and len(warned(out)) == 1 and "minReplicas 0" in warned(out)[0]
    # Knative by the ConfigMap: cpu is not a Knative metric
    out = kit.validate(isvc(**body), ctx=kit.ctx(kserve_config("Serverless")))
    assert [c[1] for c in kit.causes(out)] == ["spec.predictor.scaleMetric"]
    # the namespace is a setting
    out = kit.validate(isvc(**body), ctx=kit.ctx(kserve_config("Standard", "ml-serving"), kserve_namespace="ml-serving"))
    assert out.allowed and "minReplicas 0" in warned(out)[0]
    # unreadable: only what every mode refuses, and the warning says why
    out = kit.validate(isvc(**body))
    assert out.allowed and warned(out) == [NO_MODE]
    out = kit.validate(isvc(**body), ctx=kit.ctx(kserve_config("Sideways")))
    assert out.allowed and warned(out) == [
        "servinggate: deployment mode unknown (no annotation, and ConfigMap kserve/inferenceservice-config names no mode KServe accepts): "
        "only the checks of every mode were made"
    ]
    # nothing about scaling set: no mode needed, nothing said
    out = kit.validate(isvc())
    assert out.allowed and warned(out) == []


def test_a_mode_kserve_does_not_know_is_refused_it_would_never_run(kit):
    """KServe's webhook admits it (its Knative branch) and its controller deploys nothing
    ("unsupported deployment mode for workload", tests/e2e/test_kserve.py); the Knative branch's
    refusals are made too."""
    out = kit.validate(isvc("Turbo", minReplicas=1, maxReplicas=3, scaleMetric="cpu"), ctx=kit.ctx(kserve_config("Standard")))
    assert kit.causes(out) == [
        (
            "FieldValueNotSupported",
            "metadata.annotations[serving.kserve.io/deploymentMode]",
            'Unsupported value: "Turbo": supported values: "Standard", "Knative", "ModelMesh", "RawDeployment", "Serverless"',
        ),
        ("FieldValueNotSupported", "spec.predictor.scaleMetric", 'Unsupported value: "cpu": supported values: "concurrency", "rps"'),
    ]
    assert warned(out) == []
    # With no scaling field at all it would not run either: refused the same, without a lookup.
    for bare in (isvc("Turbo"), {**isvc("Turbo"), "spec": {}}):
        out = kit.validate(bare)
        assert [(c[0], c[1]) for c in kit.causes(out)] == [("FieldValueNotSupported", "metadata.annotations[serving.kserve.io/deploymentMode]")]
    # The words KServe knows, deprecated or not, are admitted with nothing about scaling set.
    for known in ("Standard", "Knative", "ModelMesh", "RawDeployment", "Serverless"):
        assert kit.validate(isvc(known)).allowed, known


def test_every_warning_fits_the_api_servers_limit(kit):
    """The API server truncates a warning past 256 characters; ours stay whole."""
    long_ns = "n" * 63
    bodies = [
        isvc(**{"minReplicas": 0, "maxReplicas": 0, "scaleMetric": "concurrency", "scaleTarget": 150}),
        isvc("RawDeployment", minReplicas=0, scaleMetric="rps"),
        isvc(minReplicas=0, maxReplicas=3),
    ]
    for body in bodies:
        out = kit.validate(body, ctx=kit.ctx(kserve_namespace=long_ns))
        assert all(len(w) <= 256 for w in warned(out)), warned(out)
        body["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] = "Standard"
        assert all(len(w) <= 256 for w in warned(kit.validate(body))), warned(kit.validate(body))


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
        cronhpa(
            {"name": "up", "schedule": "0 8 * *", "targetSize": -1},
            {"name": "up", "schedule": "0 0 25 * * *", "targetSize": 2**31},
            {"name": "down", "targetSize": 1},
            ref=False,
        )
    )
    assert kit.causes(out) == [
        ("FieldValueRequired", "spec.scaleTargetRef", "Required value: the workload to scale needs kind and name"),
        (
            "FieldValueInvalid",
            "spec.jobs[0].schedule",
            'Invalid value: "0 8 * *": the CronHPA controller cannot parse it: Expected 5 to 6 fields, found 4: 0 8 * *',
        ),
        ("FieldValueInvalid", "spec.jobs[0].targetSize", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueDuplicate", "spec.jobs[1].name", 'Duplicate value: "up"'),
        (
            "FieldValueInvalid",
            "spec.jobs[1].schedule",
            'Invalid value: "0 0 25 * * *": the CronHPA controller cannot parse it: End of range (25) above maximum (23): 25',
        ),
        ("FieldValueInvalid", "spec.jobs[1].targetSize", "Invalid value: 2147483648: must be at most 2147483647 (an int32)"),
        ("FieldValueRequired", "spec.jobs[2].schedule", "Required value: a cron schedule, seconds first (0 30 10 * * *), or a descriptor (@daily, @every 1h)"),
    ]


def test_the_guides_cronhpa_is_admitted(kit):
    """The ACK guide's CronHPA on KServe's predictor Deployment: up to 2 at 10:30, down to 1 at noon."""
    out = kit.validate(
        {
            "apiVersion": "autoscaling.alibabacloud.com/v1beta1",
            "kind": "CronHorizontalPodAutoscaler",
            "metadata": {"name": "qwen-cronhpa", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen-cronhpa-predictor"},
                "jobs": [
                    {"name": "scale-up", "schedule": "0 30 10 * * *", "targetSize": 2},
                    {"name": "scale-down", "schedule": "0 0 12 * * *", "targetSize": 1},
                ],
            },
        }
    )
    assert out.allowed and out.warnings == []


def test_a_job_on_a_modelserving_is_judged_as_its_scale_will_be(kit):
    """The job's scale goes through modelservings/scale when it runs; a size that scale would be
    refused at is refused at apply. At 2 groups a 50% maxUnavailable is 1; at 1 it rounds down to
    0 and, with no maxSurge, the rolling update could never move (Kthena's budget check)."""
    ms = kit.gang_ms()
    ms["metadata"].update(name="sample", namespace="default")
    ms["spec"]["replicas"] = 2
    ms["spec"]["rolloutStrategy"] = {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": "50%"}}
    jobs = ({"name": "night", "schedule": "0 0 2 * * *", "targetSize": 1}, {"name": "off", "schedule": "0 0 3 * * *", "targetSize": 0})
    out = kit.validate(cronhpa(*jobs), ctx=kit.ctx(ms))
    assert [(c[1], c[2].split(": ", 2)[-1]) for c in kit.causes(out)] == [
        (
            "spec.jobs[0].targetSize",
            'ModelServing sample would refuse this scale: spec.rolloutStrategy.rollingUpdateConfiguration: Invalid value: "": maxUnavailable and maxSurge cannot both resolve to 0',
        )
    ]
    # not found (made later): judged when the job runs; unreadable: allowed, and said
    out = kit.validate(cronhpa(*jobs))
    assert out.allowed and out.warnings == []
    out = kit.validate(cronhpa(*jobs), ctx=Context(lookups=NoLookups()))
    assert out.allowed and [w.text for w in out.warnings] == [
        "servinggate: job sizes not checked, ModelServing default/sample unreadable: no Kubernetes API access configured"
    ]


@pytest.mark.parametrize(
    "schedule, problem",
    [
        # what go-cron's Parse (ringtail/go-cron, vendored by the controller) reads
        ("*/15 * * * * *", None),
        ("0 30 1 1,15 JAN-JUN ?", None),
        ("0 30 1 1,15 jan-Jun", None),  # five fields: the day of week is optional, then `*`
        ("0 0 ? * * *", None),  # `?` is `*` in any field
        ("5/20 * * * * *", None),  # N/STEP runs from N to the field's end
        ("+5 0 0 * * *", None),  # strconv.Atoi takes a sign
        ("0 0 0 ,, * *", None),  # an empty list sets nothing, and is not refused
        ("@every 5m", None),
        ("@every 0s", None),  # under a second: rounded up to one
        ("@daily", None),
        ("@date 2030-01-01 10:00:00", None),  # go-cron's own descriptor: one moment
        ("@date 2028-02-29 23:59:59", None),
        ("@date 2030-02-29 10:00:00", "Failed to parse date @date 2030-02-29 10:00:00"),
        ("@date 2030-1-1 10:00:00", "Failed to parse date @date 2030-1-1 10:00:00"),
        ("0 0 0 ? * 7", "End of range (7) above maximum (6): 7"),
        ("0 0 0 0 * *", "Beginning of range (0) below minimum (1): 0"),
        ("0 0 10-5 * * *", "Beginning of range (10) beyond end of range (5): 10-5"),
        ("0 0 */0 * * *", "Step of range should be a positive number: */0"),
        ("0 0 1-2-3 * * *", "Too many hyphens: 1-2-3"),
        ("0 0 1/2/3 * * *", "Too many slashes: 1/2/3"),
        ("0 0 -1 * * *", 'Failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
        ("x 0 0 * * *", 'Failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("0 0 0 * * * *", "Expected 5 to 6 fields, found 7: 0 0 0 * * * *"),
        ("@every soon", "Failed to parse duration @every soon"),
        ("@fortnightly", "Unrecognized descriptor: @fortnightly"),
        ("", "Empty spec string"),
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
