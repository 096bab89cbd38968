"""The CEL fallback: the committed ValidatingAdmissionPolicies, evaluated with a CEL library the
way the API server evaluates them, must allow and deny exactly what the Python rules they mirror
allow and deny, with the rules' detail texts as messages."""

from __future__ import annotations

import json
from functools import cache

import cel
import kubernetes_validate
import pytest
import yaml
from deploy.rendering import COMPONENTS
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import admission_fixture_paths
from support.examples import examples

from webhook.admission.review import make_request
from webhook.deploy import configurations, fallback
from webhook.policies import Context
from webhook.policies.registry import NOT_BEING_DELETED, CelCheck, Rule, being_deleted

MS = "workload.serving.volcano.sh"
VARIANTS = {"v1": "1.30.0", "v1beta1": "1.28.0"}  # API version -> first Kubernetes schema that has it on


def committed(variant: str) -> list[dict]:
    text = (COMPONENTS / f"cel-fallback-{variant}" / "policies.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


def rules_with_cel() -> dict[str, Rule]:
    return {r.name: r for r in configurations.registry_rules() if r.cel}


@cache
def _policies() -> dict[str, dict]:
    """The committed v1 policies by the rule they mirror, parsed once: the property tests below
    look one up per generated example, and parsing the file was most of an example's time."""
    return {d["metadata"]["annotations"][fallback.RULE_ANNOTATION]: d for d in committed("v1") if d["kind"] == "ValidatingAdmissionPolicy"}


def policy_of(rule: str) -> dict:
    """The rule's committed policy; shared between callers, so a test that edits it edits a copy."""
    return _policies()[rule]


@cache
def program(expression: str):
    return cel.compile(expression)


def denials(policy: dict, obj: dict, old: dict | None, operation: str) -> list[str]:
    """What the API server says about a request under the policy: the message of each failed
    validation; [] when the policy does not match or every validation holds."""
    spec = policy["spec"]
    if not any(operation in r["operations"] for r in spec["matchConstraints"]["resourceRules"]):
        return []
    context = {"object": obj, "oldObject": old, "request": {"operation": operation}}
    for condition in spec.get("matchConditions", ()):
        if program(condition["expression"]).execute(context) is not True:
            return []
    out = []
    for validation in spec["validations"]:
        if program(validation["expression"]).execute(context) is not True:
            message = validation.get("message") or program(validation["messageExpression"]).execute(context)
            assert isinstance(message, str) and message
            out.append(message)
    return out


def findings(rule: Rule, obj: dict, old: dict | None) -> list[str]:
    """The details of the rule's findings that its CelChecks mirror."""
    operation = "UPDATE" if old is not None else "CREATE"
    req = make_request(obj, operation=operation, old=old)
    if being_deleted(req):  # engine.validate judges nothing then (NOT_BEING_DELETED)
        return []
    errors = rule.judge(req, Context()).errors
    mirrored = {c.detail for c in rule.cel if c.detail}
    return [e.detail for e in errors if not mirrored or e.detail in mirrored]


def agree(rule_name: str, obj: dict, old: dict | None = None) -> None:
    rule = rules_with_cel()[rule_name]
    operation = "UPDATE" if old is not None else "CREATE"
    if rule.kind == "update" and old is None:
        return
    python, api_server = findings(rule, obj, old), denials(policy_of(rule_name), obj, old, operation)
    assert bool(python) == bool(api_server), (obj, old, python, api_server)
    # Every message is the detail of a finding of the rule; the fallback never says more.
    assert set(api_server) <= set(python), (python, api_server)
    assert len(api_server) <= len(python)
    if api_server:
        assert api_server[0] in python[:1] or len(rule.cel) > 1, (python, api_server)


# ---- the policies ----------------------------------------------------------------------------


def test_every_rule_with_cel_has_one_policy_and_binding_named_after_it():
    for variant in VARIANTS:
        docs = committed(variant)
        assert {d["apiVersion"] for d in docs} == {fallback.API_VERSIONS[variant]}
        policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}
        bindings = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"}
        assert set(policies) == set(bindings) == {f"{name}.servinggate.io" for name in rules_with_cel()}
        for name, binding in bindings.items():
            assert binding["spec"]["policyName"] == name
            assert binding["spec"]["validationActions"] == ["Deny"]
            # The same namespaces as the webhook entries.
            assert binding["spec"]["matchResources"] == {"namespaceSelector": configurations.namespace_selector()}
    # The two variants are the same objects under two API versions.
    strip = lambda docs: [{k: v for k, v in d.items() if k != "apiVersion"} for d in docs]  # noqa: E731
    assert strip(committed("v1")) == strip(committed("v1beta1"))


def test_the_fallback_covers_the_rules_the_issue_names():
    assert set(rules_with_cel()) == {
        "modelservings.gang-immutable",
        "modelservings.gang-floor",
        "autoscalingpolicies.bounds",
        "autoscalingpolicybindings.bounds",
        "horizontalpodautoscalers.modelserving-bounds",
    }


def test_a_policy_matches_what_its_rule_is_registered_for():
    for name, rule in rules_with_cel().items():
        spec = policy_of(name)["spec"]
        assert spec["failurePolicy"] == "Fail"
        assert spec["matchConstraints"]["resourceRules"] == configurations.resource_rules([rule])
        assert spec["matchConditions"] == [{"name": c.name, "expression": c.expression} for c in (NOT_BEING_DELETED, *rule.match)]
        assert [v["expression"] for v in spec["validations"]] == [c.expression for c in rule.cel]
        assert all(v["reason"] == "Invalid" for v in spec["validations"])
    # The update rule is matched on UPDATE only, where oldObject is set.
    assert policy_of("modelservings.gang-immutable")["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == ["UPDATE"]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_policies_are_valid_for_the_kubernetes_versions_they_are_for(variant):
    for doc in committed(variant):
        kubernetes_validate.validate(doc, VARIANTS[variant], strict=True)
    if variant == "v1":  # v1 exists from 1.30 on only
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            kubernetes_validate.validate(committed(variant)[0], "1.29.0", strict=True)


def test_a_check_has_exactly_one_message_form():
    rule = rules_with_cel()["modelservings.gang-floor"]
    for bad in (CelCheck("true"), CelCheck("true", message="m", message_expression="'m'")):
        with pytest.raises(ValueError, match="exactly one"):
            fallback.policy_and_binding(Rule(rule.name, rule.kind, rule.target, rule.fn, cel=(bad,)), "x/v1")


# ---- the same answers as the rules --------------------------------------------------------------

ROLE_NAMES = ["prefill", "decode", "router"]
SMALL = st.integers(-1, 4)


def maybe(key: str, values) -> st.SearchStrategy[dict]:
    return st.one_of(st.just({}), values.map(lambda v: {key: v}))


@st.composite
def modelservings(draw) -> dict:
    names = draw(st.lists(st.sampled_from(ROLE_NAMES), min_size=1, max_size=3))
    roles = [
        {"name": n, "workerReplicas": 0, "entryTemplate": {"spec": {"containers": [{"name": "c", "image": "i"}]}}, **draw(maybe("replicas", SMALL))}
        for n in names
    ]
    template: dict = {"roles": roles}
    gang = draw(
        st.one_of(st.none(), st.just({}), st.dictionaries(st.sampled_from(ROLE_NAMES + ["ghost"]), SMALL, max_size=3).map(lambda m: {"minRoleReplicas": m}))
    )
    if gang is not None:
        template["gangPolicy"] = gang
    return {
        "apiVersion": f"{MS}/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "m", "namespace": "default"},
        "spec": {"replicas": 1, "template": template},
    }


GATE_DEMO = {
    "apiVersion": f"{MS}/v1alpha1",
    "kind": "ModelServing",
    "metadata": {"name": "gate-demo"},
    "spec": {
        "replicas": 1,
        "template": {"gangPolicy": {"minRoleReplicas": {"prefill": 2}}, "roles": [{"name": "prefill", "replicas": 1, "workerReplicas": 0}]},
    },
}


@settings(max_examples=examples(200), deadline=None)
@given(ms=modelservings())
@example(ms=GATE_DEMO)
def test_gang_floor_agrees(ms):
    agree("modelservings.gang-floor", ms)


def with_gang(gang: dict | None) -> dict:
    ms = json.loads(json.dumps(GATE_DEMO))
    if gang is None:
        del ms["spec"]["template"]["gangPolicy"]
    else:
        ms["spec"]["template"]["gangPolicy"] = gang
    return ms


@settings(max_examples=examples(300), deadline=None)
@given(new=modelservings(), old=modelservings())
@example(new=with_gang(None), old=GATE_DEMO)  # gangPolicy removed
@example(new=with_gang({}), old=GATE_DEMO)  # minRoleReplicas removed: the rule allows it
@example(new=with_gang({"minRoleReplicas": {"prefill": 1}}), old=GATE_DEMO)  # changed
@example(new=with_gang({"minRoleReplicas": {}}), old=GATE_DEMO)  # emptied
@example(new=GATE_DEMO, old=with_gang({}))  # set for the first time
def test_gang_immutable_agrees(new, old):
    agree("modelservings.gang-immutable", new, old)
    agree("modelservings.gang-immutable", old, old)


def test_the_gang_floor_message_is_the_rules_detail():
    two_short = json.loads(json.dumps(GATE_DEMO))
    two_short["spec"]["template"]["gangPolicy"]["minRoleReplicas"]["decode"] = 3
    two_short["spec"]["template"]["roles"].append({"name": "decode", "replicas": 2, "workerReplicas": 0})
    rule = rules_with_cel()["modelservings.gang-floor"]
    python = findings(rule, two_short, None)
    assert python == [
        "role prefill asks for 1 replicas, below its gang minimum gangPolicy.minRoleReplicas[prefill] (2)",
        "role decode asks for 2 replicas, below its gang minimum gangPolicy.minRoleReplicas[decode] (3)",
    ]
    # One message per failed validation: the fallback names the first role, the rule each one.
    assert denials(policy_of(rule.name), two_short, None, "CREATE") == python[:1]


TARGET_REFS = st.sampled_from(
    [
        {"apiVersion": f"{MS}/v1alpha1", "kind": "ModelServing", "name": "m"},
        {"kind": "ModelServing", "name": "m"},
        {"apiVersion": "v1alpha1", "kind": "ModelServing", "name": "m"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
        {"apiVersion": "example.com/v1", "kind": "ModelServing", "name": "m"},
    ]
)


@settings(max_examples=examples(200), deadline=None)
@given(ref=TARGET_REFS, low=maybe("minReplicas", SMALL), high=maybe("maxReplicas", SMALL))
def test_hpa_bounds_agree(ref, low, high):
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"}, "spec": {"scaleTargetRef": ref, **low, **high}}
    agree("horizontalpodautoscalers.modelserving-bounds", hpa)


BOUNDS = st.fixed_dictionaries({}, optional={"minReplicas": SMALL, "maxReplicas": SMALL})
TARGET = {"targetRef": {"kind": "ModelServing", "name": "m"}}


@st.composite
def autoscaling_policies(draw) -> dict:
    spec: dict = {"metrics": [{"name": "kv", "targetValue": "1"}]}
    if draw(st.booleans()):
        spec["homogeneousTarget"] = {"target": TARGET, **draw(BOUNDS)}
    if draw(st.booleans()):
        spec["heterogeneousTarget"] = {"params": [{"target": TARGET, "cost": 1, **b} for b in draw(st.lists(BOUNDS, max_size=3))]}
    if draw(st.booleans()):
        roles = draw(st.dictionaries(st.sampled_from(ROLE_NAMES), BOUNDS, max_size=3))
        spec["disaggregatedTarget"] = {"targetRef": {"kind": "ModelServing", "name": "m"}, "roles": roles}
    return {"apiVersion": f"{MS}/v1alpha1", "kind": "AutoscalingPolicy", "metadata": {"name": "p"}, "spec": spec}


@settings(max_examples=examples(300), deadline=None)
@given(policy=autoscaling_policies())
def test_autoscaling_policy_min_max_agrees(policy):
    agree("autoscalingpolicies.bounds", policy)


@settings(max_examples=examples(200), deadline=None)
@given(policy=autoscaling_policies())
def test_autoscaling_policy_binding_min_max_agrees(policy):
    spec = {k: v for k, v in policy["spec"].items() if k in ("homogeneousTarget", "heterogeneousTarget")}
    agree("autoscalingpolicybindings.bounds", {**policy, "kind": "AutoscalingPolicyBinding", "spec": {"policyRef": {"name": "p"}, **spec}})


def test_the_recorded_reviews_get_the_same_answers():
    """What a real kube-apiserver 1.28 sent us, for the resources the fallback covers."""
    by_resource = {(r.target.group, r.target.resource): r for r in rules_with_cel().values()}
    seen = 0
    for path in admission_fixture_paths():
        request = json.loads(path.read_text())["request"]
        res = request["resource"]
        for rule in rules_with_cel().values():
            if (rule.target.group, rule.target.resource) == (res["group"], res["resource"]) and not request.get("subResource"):
                agree(rule.name, request["object"], request.get("oldObject"))
                seen += 1
    assert seen >= 5 and by_resource


def test_a_drifted_expression_is_caught():
    """The agreement check above is not vacuous: a policy whose floor is off by one disagrees."""
    rule = rules_with_cel()["modelservings.gang-floor"]
    policy = json.loads(json.dumps(policy_of(rule.name)))
    policy["spec"]["validations"][0]["expression"] = policy["spec"]["validations"][0]["expression"].replace("r.replicas < ", "r.replicas + 1 < ")
    assert findings(rule, GATE_DEMO, None) and not denials(policy, GATE_DEMO, None, "CREATE")
