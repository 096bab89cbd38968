"""The engine's contract with rules: what mutators edit always reaches the patch, and never the request."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonpatch
import pytest

from webhook.admission.decision import Changes
from webhook.admission.review import parse_review
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
