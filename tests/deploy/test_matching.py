"""Narrow matching: one validating entry per API family, matchConditions derived from the rules'
`match` declarations, and the component for API servers without matchConditions."""

from __future__ import annotations

import cel
import kubernetes_validate
import pytest
from deploy.conftest import kustomize
from deploy.rendering import COMPONENTS, MANIFESTS
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

from webhook.admission.review import make_request
from webhook.deploy import configurations
from webhook.policies.hpa import TARGETS_MODELSERVING, hpa_errors
from webhook.policies.registry import NOT_BEING_DELETED, MatchCondition, Rule, Target, being_deleted

MS_GROUP = "workload.serving.volcano.sh"
# What each validating entry exists to guard: a failure of the webhook blocks these writes and no others.
FAMILIES = {
    "modelservings.validate.servinggate.io": {(MS_GROUP, "modelservings"), (MS_GROUP, "modelservings/scale")},
    "kthena-autoscaling.validate.servinggate.io": {(MS_GROUP, "autoscalingpolicies"), (MS_GROUP, "autoscalingpolicybindings")},
    "hpa.validate.servinggate.io": {("autoscaling", "horizontalpodautoscalers")},
    "cronhpa.validate.servinggate.io": {("autoscaling.alibabacloud.com", "cronhorizontalpodautoscalers")},
    "kserve.validate.servinggate.io": {("serving.kserve.io", "inferenceservices")},
    "keda.validate.servinggate.io": {("keda.sh", "scaledobjects")},
}


def _validating(docs):
    return next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")


def _resources(hook):
    return {(g, r) for rule in hook["rules"] for g in rule["apiGroups"] for r in rule["resources"]}


def test_each_validating_entry_guards_one_family(committed_configurations):
    hooks = _validating(committed_configurations)["webhooks"]
    assert {h["name"]: _resources(h) for h in hooks} == FAMILIES
    # A resource is sent to one entry only, so no request is reviewed twice.
    seen = [res for h in hooks for res in _resources(h)]
    assert len(seen) == len(set(seen))
    # The families are where the rules are written: every rule of an entry comes from one module.
    for hook in hooks:
        rules = [r for r in configurations.registry_rules() if r.action == "validate" and (r.target.group, r.target.full_resource) in _resources(hook)]
        assert {configurations.family(r) for r in rules} == {hook["name"].split(".")[0]}


def _entry(configs, name):
    return next(h for c in configs for h in c["webhooks"] if h["name"] == name)


def hpa(api_version: str | None, kind: str, min_replicas: int = 0, max_replicas: int = 3) -> dict:
    ref = {"kind": kind, "name": "target"}
    if api_version is not None:
        ref["apiVersion"] = api_version
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "default"},
        "spec": {"scaleTargetRef": ref, "minReplicas": min_replicas, "maxReplicas": max_replicas},
    }


def _condition(condition: MatchCondition) -> dict:
    return {"name": condition.name, "expression": condition.expression}


def _sends(hook: dict, obj: dict, operation: str = "CREATE") -> bool:
    """Whether the API server calls the entry for `obj`: every matchCondition is true."""
    context = {"object": obj, "oldObject": obj if operation == "UPDATE" else None, "request": {"operation": operation}}
    return all(cel.evaluate(c["expression"], context) is True for c in hook.get("matchConditions", ()))


def test_the_hpa_entry_is_sent_only_hpas_that_scale_a_modelserving(committed_configurations):
    hook = _entry(committed_configurations, "hpa.validate.servinggate.io")
    assert hook["matchConditions"] == [_condition(NOT_BEING_DELETED), _condition(TARGETS_MODELSERVING)]
    assert _sends(hook, hpa(f"{MS_GROUP}/v1alpha1", "ModelServing"))
    assert not _sends(hook, hpa("apps/v1", "Deployment"))
    assert _sends(hook, hpa(None, "ModelServing"))  # no apiVersion: the rule still judges it
    assert not _sends(hook, hpa(None, "Deployment"))
    assert not _sends(hook, hpa("example.com/v1", "ModelServing"))
    # The other families judge any target, so their entries carry only the one every entry has.
    for name in FAMILIES:
        if name != hook["name"]:
            assert _entry(committed_configurations, name)["matchConditions"] == [_condition(NOT_BEING_DELETED)]


def test_only_the_hpa_rule_declares_a_condition():
    # The property test below covers the HPA rule; a new condition needs its own.
    # (the one-owner rule of HPAs shares the HPA rule's condition: it too finds nothing outside it)
    assert {r.name for r in configurations.registry_rules() if r.match} == {
        "horizontalpodautoscalers.modelserving-bounds",
        "horizontalpodautoscalers.one-owner",
    }


API_VERSIONS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "",
            "v1",
            "v1alpha1",
            "/v1",
            "//",
            f"{MS_GROUP}/v1alpha1",
            f"{MS_GROUP}/",
            f"{MS_GROUP}/x/y",
            f"x/{MS_GROUP}/v1",
            f"{MS_GROUP}.evil/v1",
            "apps/v1",
            "autoscaling/v2",
        ]
    ),
    st.text(alphabet="/.abvw1", max_size=12),
)


@settings(max_examples=examples(300), deadline=None)
@given(api_version=API_VERSIONS, kind=st.sampled_from(["ModelServing", "Deployment", "modelserving", ""]), low=st.integers(-2, 4), high=st.integers(-2, 4))
def test_the_condition_is_false_only_where_the_rule_finds_nothing(api_version, kind, low, high):
    """The webhook without the condition must answer as with it: what the API server does not
    send is what the rule would have allowed anyway."""
    obj = hpa(api_version, kind, low, high)
    if not cel.evaluate(TARGETS_MODELSERVING.expression, {"object": obj}):
        assert hpa_errors(obj) == [], obj


# ---- objects being deleted ------------------------------------------------------------------------


def test_no_validating_entry_is_sent_an_update_of_an_object_being_deleted(committed_configurations):
    """A finalizer's removal is never held by us, nor refused while we are down."""
    staying = hpa(f"{MS_GROUP}/v1alpha1", "ModelServing", 5, 1)  # sent to every entry, the HPA's too
    leaving = {**staying, "metadata": {**staying["metadata"], "deletionTimestamp": "2026-12-06T09:00:00Z"}}
    for hook in _validating(committed_configurations)["webhooks"]:
        assert not _sends(hook, leaving, "UPDATE"), hook["name"]
        assert _sends(hook, staying, "UPDATE") and _sends(hook, leaving, "CREATE"), hook["name"]
    mutating = next(d for d in committed_configurations if d["kind"] == "MutatingWebhookConfiguration")
    assert not any(_condition(NOT_BEING_DELETED) in h.get("matchConditions", ()) for h in mutating["webhooks"])


METADATA = st.fixed_dictionaries(
    {"name": st.just("x")},
    optional={"deletionTimestamp": st.one_of(st.none(), st.just("2026-12-06T09:00:00Z")), "finalizers": st.lists(st.just("f"), max_size=1)},
)


@settings(max_examples=examples(100), deadline=None)
@given(operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]), metadata=METADATA)
def test_the_condition_and_the_engine_leave_out_the_same_requests(operation, metadata):
    obj = None if operation == "DELETE" else {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": metadata}
    old = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": metadata} if operation in ("UPDATE", "DELETE") else None
    context = {"object": obj, "oldObject": old, "request": {"operation": operation}}
    sent = cel.evaluate(NOT_BEING_DELETED.expression, context)
    assert sent is (not being_deleted(make_request(obj, operation=operation, old=old))), (operation, metadata)


# ---- deriving an entry's conditions ---------------------------------------------------------------


def _a_rule(name: str, *conditions: MatchCondition) -> Rule:
    target = Target(group="example.com", resource="widgets", versions=("v1",))
    return Rule(name, "object", target, lambda obj: [], match=conditions)


A = MatchCondition("a", "object.spec.a == 1")
B = MatchCondition("b", "object.spec.b == 1")


def test_an_entry_keeps_only_the_conditions_every_rule_in_it_declared():
    both, only_a, none = _a_rule("w.both", A, B), _a_rule("w.a", A), _a_rule("w.none")
    [hook] = configurations.webhook_entries([both, only_a], "validate")
    assert hook["matchConditions"] == [_condition(NOT_BEING_DELETED), {"name": "a", "expression": A.expression}]
    [hook] = configurations.webhook_entries([both], "validate")
    assert [c["name"] for c in hook["matchConditions"]] == [NOT_BEING_DELETED.name, "a", "b"]
    [hook] = configurations.webhook_entries([both, none], "validate")
    assert hook["matchConditions"] == [_condition(NOT_BEING_DELETED)]
    with pytest.raises(ValueError, match="two expressions"):
        configurations.webhook_entries([both, _a_rule("w.other", MatchCondition("a", "true"))], "validate")


# ---- clusters without matchConditions -------------------------------------------------------------


def _without(docs, field):
    out = []
    for doc in docs:
        doc = {**doc}
        if "webhooks" in doc:
            doc["webhooks"] = [{k: v for k, v in h.items() if k != field} for h in doc["webhooks"]]
        out.append(doc)
    return out


def test_the_component_for_older_clusters_removes_the_conditions_and_nothing_else(render_overlay):
    base = kustomize(MANIFESTS)
    assert any("matchConditions" in h for d in base for h in d.get("webhooks", ()))
    rendered = render_overlay([MANIFESTS], components=[COMPONENTS / "without-match-conditions"])
    assert not any("matchConditions" in h for d in rendered for h in d.get("webhooks", ()))
    key = lambda d: (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])  # noqa: E731
    assert sorted(_without(rendered, "matchConditions"), key=key) == sorted(_without(base, "matchConditions"), key=key)


def test_with_the_component_the_install_is_valid_for_kubernetes_1_26(render_overlay):
    """1.26 has no matchConditions in its schema: the base needs the component there, and with it
    every object is valid."""
    with pytest.raises(kubernetes_validate.ValidationError, match="matchConditions"):
        for doc in kustomize(MANIFESTS):
            kubernetes_validate.validate(doc, "1.26.0", strict=True)
    for doc in render_overlay([MANIFESTS], components=[COMPONENTS / "without-match-conditions"]):
        kubernetes_validate.validate(doc, "1.26.0", strict=True)


NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def test_the_docs_count_the_entries_they_ask_you_to_check(committed_configurations):
    """docs/operations.md (Verify) counts the entries to check; docs/install.md names the families."""
    import re

    verify = (MANIFESTS.parent / "docs" / "operations.md").read_text()
    counts = {c["metadata"]["name"]: len(c["webhooks"]) for c in committed_configurations}
    said = {m[1]: int(m[2]) for m in re.finditer(r"`(servinggate-\w+)` \((\d+) webhooks", verify.replace("\n", " "))}
    assert said == counts
    subjects = re.search(r"You should see (\w+) `subject=", verify)[1]
    assert NUMBERS[subjects] == sum(counts.values())
    install = (MANIFESTS.parent / "docs" / "install.md").read_text()
    for name in FAMILIES:
        assert f"`{name.split('.')[0]}`" in install
