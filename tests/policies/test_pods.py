"""Pod mutation: scheduler defaulting, subgroup labels and PodGroup annotations (issue 3 §3)."""

from __future__ import annotations

import copy

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.admission.responses import review_response
from webhook.policies import engine

MISSING = "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating"
COMPLETE = "pods-create-kthena-entry-complete-mutating"


def changes(decision) -> list[str]:
    return [c.text for c in decision.changes]


def test_complete_kthena_pod_is_left_alone(kit):
    req = kit.request(COMPLETE)
    out = engine.mutate(req, kit.ctx())
    assert out.matched and out.allowed
    assert out.patch == [] and out.warning_texts == [] and out.changes == []
    answer = review_response(req, out)["response"]
    assert "patch" not in answer and "patchType" not in answer


@pytest.mark.parametrize("name", ["pods-create-dry-run-mutating", "pods-create-by-replicaset-npu-mutating", "pods-create-by-replicaset-sa-token-mutating"])
def test_recorded_pods_needing_nothing(kit, name):
    out = engine.mutate(kit.request(name), kit.ctx())
    assert out.patch == [] and out.warning_texts == [] and out.changes == []


def test_recorded_pod_missing_scheduler_annotations_and_role_id(kit):
    req = kit.request(MISSING)
    out = engine.mutate(req, kit.ctx())
    assert out.patch == [
        {"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "prefill-1"},
        {"op": "add", "path": "/metadata/annotations", "value": {"scheduling.k8s.io/group-name": "sample-0", "volcano.sh/task-spec": "prefill-1"}},
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"},
    ]
    assert out.warning_texts == [], "routine changes are recorded, not warned"
    assert changes(out) == [
        "set spec.schedulerName to 'volcano' for gang scheduling",
        "added label modelserving.volcano.sh/role-id=prefill-1",
        "added annotation scheduling.k8s.io/group-name=sample-0",
        "added annotation volcano.sh/task-spec=prefill-1",
    ]
    assert review_response(req, out)["response"]["patchType"] == "JSONPatch"
    # applied, the pod has what Kthena's controller gives a complete entry pod, and a second pass is a no-op
    patched = jsonpatch.apply_patch(kit.obj(MISSING), out.patch)
    complete = kit.obj(COMPLETE)
    assert sorted(patched["metadata"]["labels"]) == sorted(complete["metadata"]["labels"])
    assert sorted(patched["metadata"]["annotations"]) == sorted(complete["metadata"]["annotations"])
    assert patched["spec"]["schedulerName"] == complete["spec"]["schedulerName"]
    again = kit.mutate(patched, namespace="default")
    assert again.patch == [] and again.warnings == []


def test_contradicting_values_are_repaired(kit):
    pod = kit.obj(COMPLETE)  # sample-0-prefill-0-0
    pod["metadata"]["labels"]["modelserving.volcano.sh/role-id"] = "prefill-7"
    pod["metadata"]["annotations"]["volcano.sh/task-spec"] = "decode-0"
    out = kit.mutate(pod)
    assert out.patch == [
        {"op": "replace", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "prefill-0"},
        {"op": "replace", "path": "/metadata/annotations/volcano.sh~1task-spec", "value": "prefill-0"},
    ]
    assert changes(out) == [
        "repaired label modelserving.volcano.sh/role-id: prefill-7 -> prefill-0 (it contradicted the pod name)",
        "repaired annotation volcano.sh/task-spec: decode-0 -> prefill-0 (it contradicted the pod name)",
    ]


def test_worker_pod_loses_entry_label(kit):
    pod = kit.obj(COMPLETE)
    pod["metadata"]["name"] = "sample-0-prefill-0-1"
    out = kit.mutate(pod)
    assert out.patch == [{"op": "remove", "path": "/metadata/labels/modelserving.volcano.sh~1entry"}]
    assert changes(out) == ["removed label modelserving.volcano.sh/entry=true (it contradicted the pod name)"]


def test_generate_name_pod_works_from_labels(kit):
    pod = kit.obj(MISSING)
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = "sample-0-prefill-"
    pod["metadata"]["labels"]["modelserving.volcano.sh/role-id"] = "prefill-1"
    out = kit.mutate(pod)
    assert out.patch == [
        {"op": "add", "path": "/metadata/annotations", "value": {"scheduling.k8s.io/group-name": "sample-0", "volcano.sh/task-spec": "prefill-1"}},
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"},
    ]


def test_opt_in_pod_maps_gang_and_subgroup(kit):
    pod = kit.obj("pods-create-by-replicaset-npu-mutating")
    pod["metadata"]["labels"].update({"servinggate.io/gang": "npu-infer", "servinggate.io/subgroup": "tp-0"})
    out = kit.mutate(pod)
    assert out.patch == [
        {"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1group-name", "value": "npu-infer"},
        {"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "tp-0"},
        {"op": "add", "path": "/metadata/annotations", "value": {"scheduling.k8s.io/group-name": "npu-infer", "volcano.sh/task-spec": "tp-0"}},
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"},
    ]
    assert len(changes(out)) == 5 and out.warning_texts == []


def test_skip_label_and_skipped_namespace(kit):
    pod = kit.obj(MISSING)
    pod["metadata"]["labels"]["servinggate.io/skip"] = "true"
    assert kit.mutate(pod).patch == []
    assert kit.mutate(kit.obj(MISSING), namespace="kube-system").patch == []
    assert kit.mutate(kit.obj(MISSING), ctx=kit.ctx(skip_namespaces=frozenset({"default"}))).patch == []


def test_other_explicit_scheduler_is_kept_with_a_warning(kit):
    pod = kit.obj(MISSING)
    pod["spec"]["schedulerName"] = "my-scheduler"
    out = kit.mutate(pod)
    assert out.patch == [{"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "prefill-1"}]
    assert out.warning_texts[0] == "servinggate: spec.schedulerName 'my-scheduler' kept; gang scheduling needs 'volcano'"


def test_configured_scheduler_name(kit):
    out = kit.mutate(kit.obj(MISSING), ctx=kit.ctx(scheduler_name="volcano-npu"))
    assert {"op": "replace", "path": "/spec/schedulerName", "value": "volcano-npu"} in out.patch


def test_odd_metadata_shapes_do_not_crash(kit):
    for meta in (
        {"labels": ["x"]},
        {"name": 3, "labels": {"modelserving.volcano.sh/name": 5}},
        {"labels": {"modelserving.volcano.sh/name": "s"}, "annotations": "x"},
    ):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": []}
        assert kit.mutate(pod).code == 200


# ---- idempotence on generated pods ------------------------------------------------------------------

names = st.from_regex(r"[a-z]{1,6}(-[a-z0-9]{1,3}){0,2}", fullmatch=True)
ordinals = st.integers(0, 12).map(str)
label_values = st.one_of(st.sampled_from(["true", "false", "x", ""]), names)
keys = st.sampled_from(
    [
        "modelserving.volcano.sh/group-name",
        "modelserving.volcano.sh/role",
        "modelserving.volcano.sh/role-id",
        "modelserving.volcano.sh/entry",
        "servinggate.io/gang",
        "servinggate.io/subgroup",
        "servinggate.io/skip",
        "app",
    ]
)


@st.composite
def pods(draw):
    ms, role = draw(names), draw(names)
    labels = draw(st.dictionaries(keys, label_values, max_size=6))
    if draw(st.booleans()):
        labels["modelserving.volcano.sh/name"] = ms
    meta = {"namespace": draw(st.sampled_from(["default", "kube-system", "llm"])), "labels": labels}
    choice = draw(st.sampled_from(["parsed", "other", "none"]))
    if choice == "parsed":
        meta["name"] = f"{ms}-{draw(ordinals)}-{role}-{draw(ordinals)}-{draw(ordinals)}"
    elif choice == "other":
        meta["name"] = draw(names)
    else:
        meta["generateName"] = ms + "-"
    if draw(st.booleans()):
        meta["annotations"] = draw(st.dictionaries(st.sampled_from(["scheduling.k8s.io/group-name", "volcano.sh/task-spec", "a/b"]), label_values, max_size=3))
    spec = {"containers": [{"name": "c", "image": "nginx"}]}
    scheduler = draw(st.sampled_from([None, "", "default-scheduler", "volcano", "other"]))
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


# 200 generated pods: test_recorded_pod_missing_scheduler_annotations_and_role_id is the explicit case of this
# property, and the generation, not the mutation, is where an example's time goes.
@settings(max_examples=200, deadline=None)
@given(pod=pods())
def test_mutation_is_idempotent(kit, pod):
    original = copy.deepcopy(pod)
    first = kit.mutate(pod, namespace=pod["metadata"]["namespace"])
    assert pod == original  # the request object is never edited in place
    assert first.code == 200
    assert bool(first.patch) == bool(first.changes), "every change is recorded, and only changes"
    mutated = jsonpatch.apply_patch(pod, first.patch)
    second = kit.mutate(mutated, namespace=pod["metadata"]["namespace"])
    assert second.patch == []


def test_surge_ordinals_beyond_replicas_and_with_gaps(kit):
    """kthena#1780: after a maxSurge rollout a pod of ServingGroup 3 and Role replica 12 of a
    2-replica ModelServing is normal; its labels and PodGroup annotations come from its name."""
    ms = {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "sample", "namespace": "default"},
        "spec": {"replicas": 2, "schedulerName": "volcano"},
    }
    pod = kit.obj(COMPLETE)  # sample-0-prefill-0-0
    pod["metadata"]["name"] = "sample-3-prefill-12-1"
    out = kit.mutate(pod, ctx=kit.ctx(ms))
    patched = jsonpatch.apply_patch(pod, out.patch)
    labels, notes = patched["metadata"]["labels"], patched["metadata"]["annotations"]
    assert (labels["modelserving.volcano.sh/group-name"], labels["modelserving.volcano.sh/role-id"]) == ("sample-3", "prefill-12")
    assert "modelserving.volcano.sh/entry" not in labels
    assert notes["scheduling.k8s.io/group-name"] == "sample-3" and notes["volcano.sh/task-spec"] == "prefill-12"
    assert out.allowed and out.warning_texts == []
