"""The engine's contract with rules: what mutators edit always reaches the patch, and never the request."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import jsonpatch
import pytest

from webhook.admission.decision import Changes
from webhook.admission.fields import FieldPath, forbidden, invalid
from webhook.admission.review import make_request, parse_review
from webhook.policies import REGISTRY, Context, Registry, engine
from webhook.policies.registry import LabelScope, Target
from webhook.policies.settings import PolicySettings

ADMISSION = Path(__file__).resolve().parents[1] / "fixtures" / "admission"
POD_REVIEWS = sorted(p for p in ADMISSION.glob("pods-create-*-mutating.json"))
PODS = Target(group="", resource="pods", versions=("v1",), operations=("CREATE",))


def _pod_request(name: str = "pods-create-kthena-entry-complete-mutating"):
    return parse_review((ADMISSION / f"{name}.json").read_bytes())


def test_a_mutator_editing_anything_gets_its_change_into_the_patch_and_leaves_the_request_alone():
    """Before: only declared dicts were copied, so appending an env var edited the request in
    place and produced an empty patch (the API server would be told "allowed", change lost)."""
    registry = Registry()

    @registry.mutates("env", PODS)
    def add_env(req, pod, ctx):
        pod["spec"]["containers"][0].setdefault("env", []).append({"name": "GANG", "value": "1"})
        return Changes()

    req = _pod_request()
    before = copy.deepcopy(req.object)
    decision = engine.mutate(req, Context(), registry)
    assert req.object == before
    assert decision.patch, "the edit must be in the patch"
    assert jsonpatch.apply_patch(before, decision.patch) == decision.edited
    assert {"name": "GANG", "value": "1"} in decision.edited["spec"]["containers"][0]["env"]


@pytest.mark.parametrize("review", POD_REVIEWS, ids=lambda p: p.stem)
def test_every_registered_mutator_on_every_pod_fixture_only_changes_through_its_patch(review):
    assert REGISTRY.rules("mutate"), "no mutators registered"
    req = parse_review(review.read_bytes())
    for labels in (None, {"servinggate.io/gang": "g1", "servinggate.io/subgroup": "s0"}):
        obj = copy.deepcopy(req.object)
        if labels is not None:  # also through the opt-in path, where the recorded pod has none of our labels
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        request = type(req)(**{**{f: getattr(req, f) for f in req.__dataclass_fields__}, "object": obj})
        snapshot = json.loads(json.dumps(obj))
        decision = engine.mutate(request, Context())
        assert request.object == snapshot, "a mutator changed the request in place"
        assert decision.crash is None
        if decision.edited is not None:
            assert jsonpatch.apply_patch(snapshot, decision.patch) == decision.edited


def test_a_mutator_that_raises_denies_with_500_naming_the_rule():
    registry = Registry()

    @registry.mutates("boom", PODS)
    def boom(req, pod, ctx):
        pod["metadata"]["labels"] = {"half": "done"}
        raise RuntimeError("bug")

    decision = engine.mutate(_pod_request(), Context(), registry)
    assert not decision.allowed and decision.code == 500
    assert decision.crash is not None and decision.crash.rule == "boom"
    assert decision.patch == []


def test_a_label_scope_is_applied_by_the_engine_and_the_same_scope_gives_the_selectors():
    scope = LabelScope(any_of=(("a", "example.com/a"),), opt_out=("example.com/skip", "true"))
    registry = Registry()
    seen: list[str] = []

    @registry.mutates("scoped", PODS, scope=scope)
    def scoped(req, pod, ctx):
        seen.append(pod["metadata"].get("name", ""))
        return Changes()

    req = _pod_request()
    settings = PolicySettings(skip_namespaces=frozenset())
    for labels, runs in (({}, False), ({"example.com/a": "x"}, True), ({"example.com/a": "x", "example.com/skip": "true"}, False)):
        obj = copy.deepcopy(req.object)
        obj["metadata"]["labels"] = labels
        request = type(req)(**{**{f: getattr(req, f) for f in req.__dataclass_fields__}, "object": obj})
        decision = engine.mutate(request, Context(settings=settings), registry)
        assert decision.matched is runs, labels
    assert [s for s, _ in scope.object_selectors()] == ["a"]
    # the configured skipped namespaces are part of the scope too
    obj = copy.deepcopy(req.object)
    obj["metadata"]["labels"] = {"example.com/a": "x"}
    request = type(req)(**{**{f: getattr(req, f) for f in req.__dataclass_fields__}, "object": obj})
    skipped = PolicySettings(skip_namespaces=frozenset({request.namespace or "default"}))
    assert not engine.mutate(request, Context(settings=skipped), registry).matched


def test_rule_names_are_unique_and_stable_public_keys():
    names = REGISTRY.names()
    assert len(names) == len(set(names))
    assert all(n == n.lower() and " " not in n for n in names)
    kthena = [n for n in names if n.startswith("modelservings.kthena.")]
    assert len(kthena) == 9, "Kthena's nine check groups are one rule each"


def test_the_scale_subresource_reruns_exactly_the_rules_registered_as_replica_dependent():
    dependent = {r.name for r in REGISTRY.rules() if r.replica_dependent}
    assert dependent == {"modelservings.kthena.generated-names", "modelservings.kthena.rolling-update"}
    assert all(r.kind == "object" for r in REGISTRY.rules() if r.replica_dependent)


def test_the_rule_index_never_keeps_what_a_client_invents():
    """A cache keyed by request fields must be bounded by the registry: invented resource names
    (up to megabytes each, in a fuzz run) are answered but never held (issue 19, flat memory)."""
    from webhook.policies.registry import REGISTRY

    before = len(REGISTRY._index)
    for i in range(2000):
        assert REGISTRY.match("validate", "example.com", f"invented-{i}" + "x" * 1000, "", "CREATE") == ()
    assert len(REGISTRY._index) == before
    assert REGISTRY.match("mutate", "", "pods", "", "CREATE")  # a served resource is still indexed
    assert ("mutate", "", "pods", "", "CREATE") in REGISTRY._index


NAMESPACES = Target(group="", resource="namespaces", versions=("v1",), operations=("DELETE",), scope="Cluster")


def test_an_object_rule_on_delete_judges_the_object_being_deleted():
    """The adapter, not the rule, maps the operation to the object: on DELETE `object` is null and
    the rule is handed `oldObject` (before: an empty dict, so a DELETE rule could never see what
    it guards)."""
    registry = Registry()
    seen: list[dict] = []

    @registry.validates("keep-protected", NAMESPACES)
    def keep_protected(obj):
        seen.append(obj)
        if obj.get("metadata", {}).get("labels", {}).get("example.com/protected") == "true":
            return [forbidden(FieldPath.of("metadata", "labels"), "protected namespaces cannot be deleted")]
        return []

    doomed = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"example.com/protected": "true"}}}
    decision = engine.validate(make_request(None, operation="DELETE", old=doomed), Context(), registry)
    assert seen == [doomed]
    assert not decision.allowed and decision.matched
    assert [(e.rule, e.error.detail) for e in decision.errors] == [("keep-protected", "protected namespaces cannot be deleted")]
    # a DELETE that does not carry the old object has nothing to judge, and is allowed
    nameless = replace(make_request(None, operation="DELETE", old=doomed), old_object=None)
    assert engine.validate(nameless, Context(), registry).allowed
    assert len(seen) == 1


def test_a_view_is_computed_once_per_review_and_kept_by_nothing_after_it():
    """A family of rules shares one view of the object through the review's memo; the next
    review computes its own (no rule or module keeps the last object alive)."""
    registry = Registry()
    made: list[int] = []
    things = Target(group="example.com", resource="things", versions=("v1",))

    def size(obj):
        made.append(id(obj))
        return len(obj.get("spec", {}))

    @registry.validates("a", things, view=size)
    def rule_a(n):
        return []

    @registry.validates("b", things, view=size)
    def rule_b(n):
        return [] if n < 3 else [invalid(FieldPath.of("spec"), n, "too many fields")]

    @registry.validates_update("c", things, view=size)
    def rule_c(n, old_n):
        return [] if n >= old_n else [invalid(FieldPath.of("spec"), n, "fields removed")]

    new = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"x": 1, "y": 2, "z": 3}}
    old = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"x": 1, "y": 2, "z": 3, "w": 4}}
    decision = engine.validate(make_request(new, operation="UPDATE", old=old), Context(), registry)
    assert made == [id(new), id(old)], "one view per object per review"
    assert sorted(e.error.detail for e in decision.errors) == ["fields removed", "too many fields"]
    engine.validate(make_request(new), Context(), registry)
    assert made == [id(new), id(old), id(new)], "a second review shapes again"


def test_the_modelserving_rules_share_one_shape_per_review(kit):
    from webhook.policies.modelservings import shape

    shaped: list[dict] = []

    def counting(ms):
        shaped.append(ms)
        return shape(ms)

    rules = [r for r in REGISTRY.rules("validate") if r.view is shape]
    assert len(rules) == 13, "the thirteen ModelServing rules are registered with view=shape"
    registry = Registry()
    for rule in rules:
        register = registry.validates_update if rule.kind == "update" else registry.validates
        register(rule.name, rule.target, view=counting)(rule.fn)
    ms = kit.gang_ms()
    assert engine.validate(make_request(ms), Context(), registry).allowed
    assert shaped == [ms]
    update = kit.request("modelservings-update-replicas-1-to-2-validating")
    shaped.clear()
    assert engine.validate(update, Context(), registry).allowed
    assert [id(o) for o in shaped] == [id(update.object), id(update.old_object)]


def _without_edits(registry: Registry) -> Registry:
    """The same rules, each handed a deep copy of the whole object (no `edits`)."""
    plain = Registry()
    for rule in registry.rules():
        plain._rules.append(replace(rule, edits=None))
    return plain


@pytest.mark.parametrize("review", POD_REVIEWS, ids=lambda p: p.stem)
def test_mutators_that_name_their_edits_answer_as_with_a_deep_copy(review):
    """`edits` only saves copying: patches, changes and warnings are those of a deep copy, on
    every recorded pod and on shapes the recorded pods do not have."""
    assert all(r.edits is not None for r in REGISTRY.rules("mutate")), "the pod mutators name their edits"
    plain = _without_edits(REGISTRY)
    req = parse_review(review.read_bytes())
    shapes = [
        lambda o: None,
        lambda o: o.setdefault("metadata", {}).setdefault("labels", {}).update({"servinggate.io/gang": "g1", "servinggate.io/subgroup": "s0"}),
        lambda o: o["metadata"].pop("annotations", None),
        lambda o: o["metadata"].update(annotations=None),
        lambda o: o["metadata"].update(annotations={"example.com/other": "kept"}),
        lambda o: o["metadata"].update(labels={"modelserving.volcano.sh/name": "x", "modelserving.volcano.sh/entry": "true"}),
        lambda o: o["metadata"].update(annotations=["not", "a", "dict"]),
        lambda o: o.update(spec=None),
        lambda o: o.update(spec=[{"schedulerName": ""}]),
        lambda o: o["spec"].update(schedulerName="other-scheduler"),
    ]
    for shape in shapes:
        obj = copy.deepcopy(req.object)
        shape(obj)
        request = replace(req, object=obj)
        snapshot = copy.deepcopy(obj)
        named = engine.mutate(request, Context(), REGISTRY)
        assert request.object == snapshot, "a mutator changed the request in place"
        deep = engine.mutate(replace(req, object=copy.deepcopy(snapshot)), Context(), plain)
        assert (named.patch, named.changes, named.warnings, named.crash) == (deep.patch, deep.changes, deep.warnings, deep.crash)
        assert named.edited == deep.edited


def test_a_private_copy_shares_only_what_no_rule_names():
    registry = Registry()

    @registry.mutates("labels", PODS, edits=(("metadata", "labels"), ("spec", "containers")))
    def labels(req, pod, ctx):
        return Changes()

    obj = {"metadata": {"labels": {"a": "1"}, "annotations": {"b": "2"}}, "spec": {"containers": [{"name": "c"}], "volumes": []}}
    copied = engine.private_copy(obj, tuple(registry.rules()))
    assert copied == obj and copied is not obj
    assert copied["metadata"] is not obj["metadata"] and copied["metadata"]["labels"] is not obj["metadata"]["labels"]
    assert copied["metadata"]["annotations"] is obj["metadata"]["annotations"]  # shared: no rule names it
    assert copied["spec"]["containers"] is not obj["spec"]["containers"]  # a list on a path: deep-copied
    assert copied["spec"]["containers"][0] is not obj["spec"]["containers"][0]
    assert copied["spec"]["volumes"] is obj["spec"]["volumes"]


# ---- objects being deleted ------------------------------------------------------------------------


def _isvc(**meta) -> dict:
    """An InferenceService KServe's webhook refuses (minReplicas above maxReplicas)."""
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "qwen", "namespace": "default", "annotations": {"serving.kserve.io/deploymentMode": "Standard"}, **meta},
        "spec": {"predictor": {"minReplicas": 3, "maxReplicas": 1}},
    }


def test_an_update_of_an_object_being_deleted_is_never_refused():
    """Its finalizers' removals must go through, or it stays Terminating (NOT_BEING_DELETED)."""
    leaving = _isvc(deletionTimestamp="2026-12-06T09:00:00Z", finalizers=[])
    decision = engine.validate(make_request(leaving, operation="UPDATE", old=_isvc(finalizers=["inferenceservice.finalizers"])), Context())
    assert decision.allowed and decision.rules == () and not decision.warnings
    # The same object is refused while it is not being deleted, and on CREATE whatever it says.
    for req in (make_request(_isvc(), operation="UPDATE", old=_isvc()), make_request(leaving)):
        decision = engine.validate(req, Context())
        assert not decision.allowed and "inferenceservices.autoscaling" in decision.rules, req.operation
