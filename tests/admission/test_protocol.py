"""The AdmissionReview protocol layer on the recorded reviews and on broken ones."""

from __future__ import annotations

import base64
import copy
import json

import jsonpatch
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from support import admission_fixture_paths, admission_path
from support.examples import examples

from webhook.admission import FieldPath, ReviewError, allowed, denied, forbidden, invalid, not_supported, parse_review, refused, required
from webhook.admission.decision import Decision, Verdict
from webhook.admission.patching import make_patch
from webhook.admission.responses import review_response

FIXTURES = admission_fixture_paths()


def test_fixtures_present():
    assert len(FIXTURES) >= 30


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_recorded_review_parses(path):
    raw = path.read_bytes()
    doc = json.loads(raw)
    req = parse_review(raw)
    r = doc["request"]
    assert req.uid == r["uid"]
    assert req.operation == r["operation"]
    assert req.resource.resource == r["resource"]["resource"]
    assert req.sub_resource == r.get("subResource", "")
    assert req.kind.kind == r["kind"]["kind"]
    assert req.name == r.get("name", "")
    assert req.dry_run == r.get("dryRun", False)
    if r["operation"] == "DELETE":
        assert req.object is None and req.old_object is not None
        assert req.subject is req.old_object
    if r["operation"] == "CREATE":
        assert req.old_object is None


def test_generate_name_pod_has_no_name_but_a_display_name():
    req = parse_review(admission_path("pods-create-by-replicaset-npu-mutating").read_bytes())
    assert req.name == ""
    assert req.display_name == "default/npu-infer-65c87f97cf-*"


def test_scale_subresource_is_parsed_with_its_parent_resource():
    req = parse_review(admission_path("modelservings-scale-update-kubectl-scale-to-3-validating").read_bytes())
    assert (req.resource.group, req.resource.resource, req.sub_resource) == ("workload.serving.volcano.sh", "modelservings", "scale")
    assert (req.kind.group, req.kind.version, req.kind.kind) == ("autoscaling", "v1", "Scale")


def _review(**request):
    base = {
        "uid": "u-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "object": {},
    }
    base.update(request)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": base}


@pytest.mark.parametrize(
    "body, needle, has_uid",
    [
        (b"{not json", "not valid JSON", False),
        (b"[1, 2]", "JSON object", False),
        (json.dumps({"kind": "AdmissionReview", "request": {"uid": "x"}}).encode(), "apiVersion", False),
        (json.dumps({"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview"}).encode(), "apiVersion", False),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "Pod", "request": {"uid": "x"}}).encode(), "kind", False),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), "request", False),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}).encode(), "request.uid", False),
        (json.dumps(_review(uid="")).encode(), "request.uid", False),
        (json.dumps(_review(operation="PATCH")).encode(), "request.operation", True),
        (json.dumps(_review(resource=None)).encode(), "request.resource", True),
        (json.dumps(_review(kind={"group": ""})).encode(), "request.kind", True),
        (json.dumps(_review(object=None)).encode(), "request.object", True),
        (json.dumps(_review(object="pod")).encode(), "request.object", True),
        (json.dumps(_review(operation="UPDATE")).encode(), "request.oldObject", True),
        (json.dumps(_review(dryRun="yes")).encode(), "request.dryRun", True),
    ],
)
def test_broken_reviews_name_what_is_wrong(body, needle, has_uid):
    with pytest.raises(ReviewError) as info:
        parse_review(body)
    assert info.value.code == 400
    assert needle in info.value.message
    assert (info.value.uid is not None) == has_uid


def test_field_errors_render_like_apimachinery():
    roles = FieldPath.of("spec", "template", "roles")
    assert (
        str(invalid(roles.index(1).child("replicas"), -1, "must be non-negative")) == "spec.template.roles[1].replicas: Invalid value: -1: must be non-negative"
    )
    assert str(invalid(FieldPath.of("metadata", "name"), "Ab", "bad")) == 'metadata.name: Invalid value: "Ab": bad'
    gang = FieldPath.of("spec", "template", "gangPolicy", "minRoleReplicas").key("prefill")
    assert str(forbidden(gang, "is immutable")) == "spec.template.gangPolicy.minRoleReplicas[prefill]: Forbidden: is immutable"
    assert str(required(roles.index(0).child("workerTemplate"))) == "spec.template.roles[0].workerTemplate: Required value"
    assert str(not_supported(FieldPath.of("spec", "x"), "a", ["b", "c"])) == 'spec.x: Unsupported value: "a": supported values: "b", "c"'


def decided(verdict: Verdict, action: str = "validate") -> Decision:
    decision = Decision(action, rules=("a-rule",))  # type: ignore[arg-type]
    decision.add("a-rule", verdict)
    return decision


def test_denial_lists_every_error_with_422_and_one_cause_each():
    req = parse_review(
        json.dumps(_review(name="sample", kind={"group": "workload.serving.volcano.sh", "version": "v1alpha1", "kind": "ModelServing"})).encode()
    )
    e1 = invalid(FieldPath.of("spec", "replicas"), -1, "must be a non-negative integer")
    e2 = required(FieldPath.of("spec", "template", "roles"), "roles must be specified")
    out = review_response(req, decided(denied(e1, e2, warnings=["w"])))
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    resp = out["response"]
    assert resp["uid"] == "u-1" and resp["allowed"] is False
    st = resp["status"]
    assert st["code"] == 422 and st["reason"] == "Invalid"
    assert st["message"] == f'ModelServing.workload.serving.volcano.sh "sample" is invalid: [{e1}, {e2}]'
    assert [c["field"] for c in st["details"]["causes"]] == ["spec.replicas", "spec.template.roles"]
    assert [c["reason"] for c in st["details"]["causes"]] == ["FieldValueInvalid", "FieldValueRequired"]
    assert resp["warnings"] == ["servinggate [a-rule]: w"]  # a warning names the rule that gave it
    assert resp["auditAnnotations"] == {"rules": "a-rule"}


def test_refusal_is_403_forbidden_and_allow_has_no_status():
    req = parse_review(json.dumps(_review()).encode())
    resp = review_response(req, decided(refused("not while the gang is running")))["response"]
    assert resp["status"]["code"] == 403 and resp["status"]["reason"] == "Forbidden"
    assert resp["status"]["message"] == "not while the gang is running"
    ok = review_response(req, decided(denied()))["response"]
    assert ok == {"uid": "u-1", "allowed": True, "auditAnnotations": {"rules": "a-rule"}}


def test_v1beta1_review_is_answered_in_v1beta1():
    doc = _review()
    doc["apiVersion"] = "admission.k8s.io/v1beta1"
    req = parse_review(json.dumps(doc).encode())
    assert review_response(req, decided(denied()))["apiVersion"] == "admission.k8s.io/v1beta1"


def test_warnings_are_clipped_to_256_characters_and_deduplicated():
    req = parse_review(json.dumps(_review()).encode())
    resp = review_response(req, decided(allowed("x" * 300, "short", "short"), "mutate"))["response"]
    assert len(resp["warnings"][0]) == 256 and resp["warnings"][1:] == ["servinggate [a-rule]: short"]


def test_a_clipped_warning_keeps_its_rule_and_its_reason():
    req = parse_review(json.dumps(_review()).encode())
    long = (
        "spec.template.roles[0].entryTemplate.spec.containers[0].resources.requests[huawei.com/Ascend910]: "
        + "x" * 200
        + ": no node advertises huawei.com/Ascend910 (nodes have huawei.com/ascend-1980)"
    )
    [clipped] = review_response(req, decided(allowed(long), "mutate"))["response"]["warnings"]
    assert len(clipped) == 256 and clipped.startswith("servinggate [a-rule]: spec.template.roles[0].entryTemplate.spec.containers[0]")
    assert clipped.endswith("no node advertises huawei.com/Ascend910 (nodes have huawei.com/ascend-1980)") and "…" in clipped


def test_patch_is_a_diff_escapes_slashes_and_is_omitted_when_empty():
    original = {"metadata": {"labels": {"a": "1"}}, "spec": {}}
    edited = copy.deepcopy(original)
    edited["metadata"]["labels"]["modelserving.volcano.sh/role"] = "prefill"
    edited["metadata"]["annotations"] = {"volcano.sh/task-spec": "prefill-0"}
    ops = make_patch(original, edited)
    paths = sorted(op["path"] for op in ops)
    assert paths == ["/metadata/annotations", "/metadata/labels/modelserving.volcano.sh~1role"]
    assert jsonpatch.apply_patch(original, ops) == edited
    req = parse_review(json.dumps(_review()).encode())
    resp = review_response(req, Decision("mutate", patch=ops))["response"]
    assert resp["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(resp["patch"])) == ops
    empty = review_response(req, Decision("mutate", patch=make_patch(original, copy.deepcopy(original))))["response"]
    assert "patch" not in empty and "patchType" not in empty


_keys = st.sampled_from(["a", "b", "x/y", "t~1", "labels", "0"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


@hsettings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(_keys, _json, max_size=5), st.dictionaries(_keys, _json, max_size=5))
def test_patch_turns_any_object_into_any_other(src, dst):
    ops = make_patch(src, dst)
    assert jsonpatch.apply_patch(copy.deepcopy(src), ops) == dst
    assert (ops == []) == (src == dst)
