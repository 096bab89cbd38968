"""Pod mutation: scheduler defaulting, subgroup labels and PodGroup annotations (issue 3 §3)."""

from __future__ import annotations

import copy

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.willrun import ctx_of, podgroup_crd

from webhook.admission.responses import review_response
from webhook.admission.review import make_request
from webhook.policies import Context, DictLookups, NoLookups, engine

MISSING = "pods-create-kthena-entry-missing-scheduler-annotations-roleid-mutating"
COMPLETE = "pods-create-kthena-entry-complete-mutating"


def changes(decision) -> list[str]:
    return [c.text for c in decision.changes]


def test_complete_kthena_pod_is_left_alone(kit):
    req = kit.request(COMPLETE)
    out = engine.mutate(req, kit.ctx())
    assert out.matched and out.allowed
    assert out.patch == [] and [w.text for w in out.warnings] == [] and out.changes == []
    answer = review_response(req, out)["response"]
    assert "patch" not in answer and "patchType" not in answer


@pytest.mark.parametrize("name", ["pods-create-dry-run-mutating", "pods-create-by-replicaset-npu-mutating", "pods-create-by-replicaset-sa-token-mutating"])
def test_recorded_pods_needing_nothing(kit, name):
    out = engine.mutate(kit.request(name), kit.ctx())
    assert out.patch == [] and [w.text for w in out.warnings] == [] and out.changes == []


def test_recorded_pod_missing_scheduler_annotations_and_role_id(kit):
    req = kit.request(MISSING)
    out = engine.mutate(req, kit.ctx(kit.gang_ms()))  # its owner, `sample`, is scheduled by volcano
    assert out.patch == [
        {"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "prefill-1"},
        {"op": "add", "path": "/metadata/annotations", "value": {"scheduling.k8s.io/group-name": "sample-0", "volcano.sh/task-spec": "prefill-1"}},
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"},
    ]
    assert [w.text for w in out.warnings] == [], "routine changes are recorded, not warned"
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
    again = kit.mutate(patched, namespace="default", ctx=kit.ctx(kit.gang_ms()))
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
    out = kit.mutate(pod, ctx=kit.ctx(kit.gang_ms()))
    assert out.patch == [
        {"op": "add", "path": "/metadata/annotations", "value": {"scheduling.k8s.io/group-name": "sample-0", "volcano.sh/task-spec": "prefill-1"}},
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"},
    ]


def test_opt_in_pod_maps_gang_and_subgroup(kit):
    pod = kit.obj("pods-create-by-replicaset-npu-mutating")
    pod["metadata"]["labels"].update({"servinggate.io/gang": "npu-infer", "servinggate.io/subgroup": "tp-0"})
    out = kit.mutate(pod)
    assert out.patch == [
        {"op": "add", "path": "/metadata/annotations", "value": {"scheduling.k8s.io/group-name": "npu-infer", "volcano.sh/task-spec": "tp-0"}},
        {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"},
    ]
    assert len(changes(out)) == 3 and [w.text for w in out.warnings] == []


def test_an_opt_in_gang_gets_none_of_kthenas_labels(kit):
    """Issue 36 item 1: Kthena's pod informer selects on `modelserving.volcano.sh/group-name` and
    its deleteServingGroup deletes every pod carrying a ServingGroup's value of it: an opt-in gang
    named `llama-0` must not carry it (or any other label Kthena's controller owns), only the
    annotation Volcano matches its PodGroup by."""
    pod = kit.obj("pods-create-by-replicaset-npu-mutating")
    pod["metadata"]["labels"].update({"servinggate.io/gang": "llama-0", "servinggate.io/subgroup": "decode-0"})
    patched = jsonpatch.apply_patch(pod, kit.mutate(pod).patch)
    assert not [k for k in patched["metadata"]["labels"] if k.startswith("modelserving.volcano.sh/")]
    assert patched["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "llama-0"


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
    assert [w.text for w in out.warnings][0] == "servinggate: spec.schedulerName 'my-scheduler' kept; gang scheduling needs 'volcano'"


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
@settings(max_examples=examples(200), deadline=None)
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
    assert out.allowed and [w.text for w in out.warnings] == []


# ---- a PodGroup annotation only for a PodGroup that will exist (issue 36 item 2) -------------------

NOTES = {"scheduling.k8s.io/group-name", "volcano.sh/task-spec"}


def _owner(kit, scheduler: str | None) -> dict:
    ms = kit.gang_ms()  # `sample`, the owner of the recorded pods
    if scheduler is None:
        ms["spec"].pop("schedulerName", None)
    else:
        ms["spec"]["schedulerName"] = scheduler
    return ms


def _notes_added(out) -> set[str]:
    added = set()
    for op in out.patch:
        if op["path"] == "/metadata/annotations":
            added |= set(op["value"])
        elif op["path"].startswith("/metadata/annotations/"):
            added.add(op["path"].rpartition("/")[2].replace("~1", "/"))
    return added


@pytest.mark.parametrize(("scheduler", "crd", "annotated"), [("volcano", True, True), (None, True, True), ("volcano", False, False)])
def test_annotations_follow_kthenas_own_condition(kit, scheduler, crd, annotated):
    """Kthena makes a PodGroup only for `schedulerName: volcano` (absent: the CRD's default) with
    the PodGroup CRD installed (podgroupmanager/manager.go, shouldCreatePodGroup)."""
    objects = [_owner(kit, scheduler)] + ([podgroup_crd(True)] if crd else [])
    out = kit.mutate(kit.obj(MISSING), ctx=ctx_of(*objects))
    assert _notes_added(out) == (NOTES if annotated else set())
    assert {"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "prefill-1"} in out.patch
    assert [w.text for w in out.warnings] == []


def test_a_gang_scheduler_other_than_volcano_gets_no_podgroup_annotations(kit):
    """With `--scheduler-name volcano-npu` and a ModelServing on it, Kthena makes no PodGroup (it
    compares with `volcano` literally): the pod keeps its scheduler and gets no annotations."""
    pod = kit.obj(MISSING)
    pod["spec"]["schedulerName"] = "volcano-npu"
    ctx = ctx_of(_owner(kit, "volcano-npu"), podgroup_crd(True), settings={"scheduler_name": "volcano-npu"})
    out = kit.mutate(pod, ctx=ctx)
    assert _notes_added(out) == set() and [w.text for w in out.warnings] == []
    assert out.patch == [{"op": "add", "path": "/metadata/labels/modelserving.volcano.sh~1role-id", "value": "prefill-1"}]


def test_an_unlisted_podgroup_crd_counts_as_installed_and_says_so(kit):
    out = kit.mutate(kit.obj(MISSING), ctx=ctx_of(_owner(kit, "volcano"), unlisted=("CustomResourceDefinition",)))
    assert _notes_added(out) == NOTES
    assert [w for w in [w.text for w in out.warnings] if "PodGroup CRD not checked" in w]


@pytest.mark.parametrize("lookups", [NoLookups(), DictLookups()], ids=["unreadable", "not-found"])
def test_an_owner_not_read_adds_no_annotation_kthena_did_not_make(kit, lookups):
    """Bad input: the owner cannot be read (or is not there). Kthena annotates exactly the pods
    whose PodGroup it makes, so a pod that came without the annotation gets none; one that came
    with it has its values kept consistent. The unreadable owner's warning stays."""
    out = engine.mutate(make_request(kit.obj(MISSING)), Context(lookups=lookups))
    assert _notes_added(out) == set()
    assert {"op": "replace", "path": "/spec/schedulerName", "value": "volcano"} in out.patch
    unreadable = [w for w in [w.text for w in out.warnings] if "its scheduler choice was not checked" in w]
    assert len(unreadable) == (1 if isinstance(lookups, NoLookups) else 0)
    pod = kit.obj(MISSING)
    pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "sample-0"}
    came_annotated = engine.mutate(make_request(pod), Context(lookups=lookups))
    assert _notes_added(came_annotated) == {"volcano.sh/task-spec"}


def test_an_opt_in_gang_without_a_podgroup_crd_is_not_annotated_and_told_why(kit):
    pod = kit.obj("pods-create-by-replicaset-npu-mutating")
    pod["metadata"]["labels"]["servinggate.io/gang"] = "npu-infer"
    out = kit.mutate(pod, ctx=ctx_of())
    assert _notes_added(out) == set()
    assert [w.text for w in out.warnings] == ["servinggate: no PodGroup CRD is installed, so gang 'npu-infer' can have no PodGroup: not annotated"]
    assert _notes_added(kit.mutate(pod, ctx=ctx_of(podgroup_crd(False)))) == {"scheduling.k8s.io/group-name"}
