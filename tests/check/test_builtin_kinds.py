"""`check` validates built-in kinds as kube-apiserver 1.28 does: Pods with the Pod validation port,
workloads' pod templates with ValidatePodTemplateSpec and each kind's own template checks, and
the whole of HorizontalPodAutoscaler v2."""

from __future__ import annotations

import copy
import io

import pytest
import yaml

from webhook.check import run
from webhook.check.hpa import validate_hpa
from webhook.check.workloads import selector_matches, validate_workload
from webhook.kubeversion import KubeVersion
from webhook.podvalidation.options import options_for
from webhook.policies.settings import PolicySettings


def check_obj(obj: dict):
    results, problems = run(["-"], [], PolicySettings(), crd_paths=[str(CRDS)], stdin=io.StringIO(yaml.safe_dump(obj, sort_keys=False)))
    assert problems == []
    [r] = results
    return r


def _errors(r) -> list[str]:
    return [f"{f.field}: {f.message}" for f in r.errors]


# ---- Pods ---------------------------------------------------------------------------------------


def test_a_pod_gets_the_api_servers_pod_validation():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "vllm:1", "ports": [{"containerPort": 0}], "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
    }
    r = check_obj(pod)
    assert r.status == "denied" and r.code == 422
    assert _errors(r) == [
        "spec.containers[0].ports[0].containerPort: Required value",
        "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
    ]
    assert r.message.startswith('Pod "p" is invalid: [spec.containers[0].ports[0].containerPort: Required value, ')


# ---- workloads ----------------------------------------------------------------------------------


def deployment(**template_spec) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}], **template_spec}},
        },
    }


def test_a_valid_deployment_passes():
    assert check_obj(deployment()).status == "allowed"


def test_a_deployment_template_is_judged_at_its_path():
    d = deployment(restartPolicy="Never", activeDeadlineSeconds=5)
    d["spec"]["template"]["spec"]["containers"][0]["name"] = "C"
    d["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    r = check_obj(d)
    assert r.status == "denied"
    assert [e.split(":")[0] for e in _errors(r)] == [
        "spec.template.metadata.labels",
        "spec.template.spec.containers[0].name",
        "spec.template.spec.restartPolicy",
        "spec.template.spec.activeDeadlineSeconds",
    ]
    assert _errors(r)[0] == ('spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`')
    assert _errors(r)[2] == 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'
    assert _errors(r)[3] == "spec.template.spec.activeDeadlineSeconds: Invalid value: 5: activeDeadlineSeconds in ReplicaSet is not Supported"


def test_a_job_needs_on_failure_or_never():
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    assert _errors(check_obj(job)) == ['spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"']
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert check_obj(job).status == "allowed"


def test_a_cronjob_template_is_judged_under_its_job_template():
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 70000}]}]}}
                }
            },
        },
    }
    assert [e.split(":")[0] for e in _errors(check_obj(cron))] == ["spec.jobTemplate.spec.template.spec.containers[0].ports[0].containerPort"]


def test_a_statefulset_template_spec_is_left_alone_as_in_1_28():
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {
            "serviceName": "s",
            "selector": {"matchLabels": {"app": "s"}},
            "template": {
                "metadata": {"labels": {"app": "s"}},
                "spec": {"containers": [{"name": "c", "image": "x", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]},
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
        },
    }
    assert validate_workload(sts, "apps", "StatefulSet") == []
    bad = copy.deepcopy(sts)
    bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 3
    assert [str(e) for e in validate_workload(bad, "apps", "StatefulSet")] == [
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"
    ]


def test_a_daemonset_with_an_empty_selector_matches_everything():
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "d"},
        "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }
    assert validate_workload(ds, "apps", "DaemonSet") == []


@pytest.mark.parametrize(
    "selector, labels, matches",
    [
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
    ],
)
def test_selector_matching(selector, labels, matches):
    assert selector_matches(selector, labels) is matches


def test_odd_templates_give_field_errors():
    for template in ("nope", [], {"spec": "x"}, {"spec": {"containers": [None, 3]}}):
        d = deployment()
        d["spec"]["template"] = template
        errs = validate_workload(d, "apps", "Deployment")
        assert errs and all(e.field.startswith("spec.template") for e in errs)


# ---- HorizontalPodAutoscaler v2 ---------------------------------------------------------------


def hpa(**spec) -> dict:
    base = {"minReplicas": 1, "maxReplicas": 3, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"}, "spec": {**base, **spec}}


def _hpa(**spec) -> list[str]:
    return [str(e) for e in validate_hpa(hpa(**spec))]


def test_a_valid_v2_hpa_passes():
    metrics = [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}}},
    ]
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 300, "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}}
    assert _hpa(metrics=metrics, behavior=behavior) == []
    assert check_obj(hpa(metrics=metrics, behavior=behavior)).status == "allowed"


def test_metric_types_and_their_sources():
    assert (
        _hpa(metrics=[{"type": "Bogus"}])
        == ['spec.metrics[0].type: Unsupported value: "Bogus": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"'] * 2
    )
    assert _hpa(metrics=[{"type": "Pods"}]) == ["spec.metrics[0].pods: Required value: must populate information for the given metric source"]
    both = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
        "pods": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "1"}},
    }
    assert _hpa(metrics=[both]) == ["spec.metrics[0].pods: Forbidden: must populate the given metric source only"]


def test_metric_targets():
    resource = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Percent", "averageUtilization": 0}}}
    assert _hpa(metrics=[resource]) == [
        'spec.metrics[0].resource.target.type: Invalid value: "Percent": must be either Utilization, Value, or AverageValue',
        "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
    ]
    pods = {"type": "Pods", "pods": {"metric": {"name": "a/b"}, "target": {"type": "AverageValue", "averageValue": "-1"}}}
    assert _hpa(metrics=[pods]) == [
        "spec.metrics[0].pods.metric.name: Invalid value: \"a/b\": may not contain '/'",
        "spec.metrics[0].pods.target.averageValue: Invalid value: resource.Quantity{i:resource.int64Amount{value:-1, scale:0}, "
        'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"-1", Format:"DecimalSI"}: must be positive',
    ]
    external = {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value"}}}
    assert _hpa(metrics=[external]) == [
        "spec.metrics[0].external.target.averageValue: Required value: must set either a target value for metric or a per-pod target"
    ]
    container = {
        "type": "ContainerResource",
        "containerResource": {"name": "cpu", "container": "Main", "target": {"type": "Utilization", "averageUtilization": 5}},
    }
    assert [e.split(":")[0] for e in _hpa(metrics=[container])] == ["spec.metrics[0].containerResource.container"]


def test_behavior_policies():
    behavior = {
        "scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Most", "policies": []},
        "scaleDown": {"policies": [{"type": "Replicas", "value": 0, "periodSeconds": 2000}]},
    }
    assert _hpa(behavior=behavior) == [
        "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
        'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Most": supported values: "Disabled", "Max", "Min"',
        "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
        'spec.behavior.scaleDown.policies[0].type: Unsupported value: "Replicas": supported values: "Percent", "Pods"',
        "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
        "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
    ]


def test_a_cloneset_template_is_judged_like_a_replicasets():
    clone = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "c"}},
            "template": {"metadata": {"labels": {"app": "c"}}, "spec": {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 0}]}]}},
        },
    }
    r = check_obj(clone)
    assert r.status == "denied" and _errors(r) == ["spec.template.spec.containers[0].ports[0].containerPort: Required value"]
    clone["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    assert check_obj(clone).status != "denied"


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support import CRDS  # noqa: E402
from support.examples import examples  # noqa: E402

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 4000) | st.text(max_size=5) | st.sampled_from(["Pods", "Resource", "-1", "Utilization"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "metrics",
                    "behavior",
                    "scaleUp",
                    "policies",
                    "value",
                    "periodSeconds",
                    "resource",
                    "pods",
                    "target",
                    "averageValue",
                    "name",
                    "selector",
                    "matchLabels",
                    "matchExpressions",
                    "key",
                    "operator",
                    "values",
                    "template",
                    "metadata",
                    "labels",
                    "spec",
                    "containers",
                    "restartPolicy",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=16,
)


@settings(max_examples=examples(200), deadline=None)
@given(spec=_json)
def test_any_hpa_or_workload_spec_gives_field_errors_never_a_crash(spec):
    validate_hpa({"spec": spec})
    for group, kind in (("apps", "Deployment"), ("apps", "StatefulSet"), ("batch", "Job"), ("batch", "CronJob")):
        validate_workload({"spec": spec}, group, kind)


def test_a_template_field_whose_gate_is_off_is_dropped_with_a_warning_by_minor():
    """`check` judges a workload's template as its minor's server: at 1.28 the sidecar's
    restartPolicy is dropped (SidecarContainers off) and its probe is refused; at 1.34 it is a
    sidecar. Each drop comes back as a warning at the template path."""
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {},
            "template": {
                "spec": {
                    "containers": [{"name": "c", "image": "x"}],
                    "initContainers": [{"name": "sync", "image": "x", "restartPolicy": "Always", "readinessProbe": {"exec": {"command": ["true"]}}}],
                }
            },
        },
    }
    dropped: list[str] = []
    errs = validate_workload(ds, "apps", "DaemonSet", options_for(KubeVersion(1, 28)), dropped)
    assert [e.field for e in errs] == ["spec.template.spec.initContainers[0].readinessProbe"]
    assert dropped == [
        "spec.template.spec.initContainers[0].restartPolicy: dropped: the feature gate SidecarContainers is"
        " off by default in Kubernetes 1.28, so the API server drops it"
    ]
    dropped = []
    assert validate_workload(ds, "apps", "DaemonSet", options_for(KubeVersion(1, 34)), dropped) == [] and dropped == []
