"""matchLabelKeys and mismatchLabelKeys of pod (anti-)affinity terms (1.29-1.34).

Cases from upstream's TestValidatePod (pkg/apis/core/validation/validation_test.go at commit
000f2605), replayed with MatchLabelKeysInPodAffinity on and off.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.gated import gated_errors
from support.pods import pod_with

GATE = "MatchLabelKeysInPodAffinity"
SELECTOR = {
    "matchExpressions": [
        {"key": "key", "operator": "NotIn", "values": ["value1", "value2"]},
        {"key": "key2", "operator": "In", "values": ["value1"]},
        {"key": "key3", "operator": "NotIn", "values": ["value1"]},
    ]
}


def _term(**fields: Any) -> dict[str, Any]:
    return {"labelSelector": SELECTOR, "topologyKey": "k8s.io/zone"} | fields


def _affinity(kind: str, required: bool, term: dict[str, Any]) -> dict[str, Any]:
    if required:
        return pod_with(affinity={kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    return pod_with(affinity={kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term}]}})


def _base(kind: str, required: bool) -> str:
    if required:
        return f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution[0]"
    return f"spec.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"


PLACES = [(kind, required) for kind in ("podAffinity", "podAntiAffinity") for required in (True, False)]


@pytest.mark.parametrize(("kind", "required"), PLACES)
def test_valid_keys_TestValidatePod(kind: str, required: bool) -> None:
    """MatchLabelKeys/MismatchLabelKeys in required/preferred PodAffinity/PodAntiAffinity."""
    assert gated_errors(_affinity(kind, required, _term(matchLabelKeys=["key2"], mismatchLabelKeys=["key3"])), GATE) == []


def test_selector_may_repeat_a_mismatch_key_TestValidatePod() -> None:
    """LabelSelector can have the same key as MismatchLabelKeys."""
    selector = {
        "matchExpressions": [
            {"key": "key", "operator": "NotIn", "values": ["value1", "value2"]},
            {"key": "key2", "operator": "In", "values": ["value1"]},
            {"key": "key2", "operator": "NotIn", "values": ["value1"]},
        ]
    }
    assert gated_errors(_affinity("podAffinity", True, _term(labelSelector=selector, mismatchLabelKeys=["key2"])), GATE) == []


@pytest.mark.parametrize(("kind", "required"), PLACES)
@pytest.mark.parametrize("field", ["matchLabelKeys", "mismatchLabelKeys"])
def test_key_not_a_label_name_TestValidatePod(kind: str, required: bool, field: str) -> None:
    """invalid soft/hard pod (anti-)affinity, key in MatchLabelKeys/MismatchLabelKeys isn't correctly defined."""
    errs = gated_errors(_affinity(kind, required, _term(**{field: ["/simple"]})), GATE)
    assert len(errs) == 1
    assert errs[0].startswith(f'{_base(kind, required)}.{field}[0]: Invalid value: "/simple": prefix part must be non-empty')


@pytest.mark.parametrize(("kind", "required"), PLACES)
def test_key_in_match_label_keys_and_selector_TestValidatePod(kind: str, required: bool) -> None:
    """invalid soft/hard pod (anti-)affinity, key exists in both matchLabelKeys and labelSelector.
    The path is the term's indexed by the key's position, as upstream builds it."""
    selector = {"matchExpressions": [{"key": "key", "operator": "In", "values": ["value1"]}, {"key": "key", "operator": "NotIn", "values": ["value2"]}]}
    errs = gated_errors(_affinity(kind, required, _term(labelSelector=selector, matchLabelKeys=["key"])), GATE)
    assert errs == [f'{_base(kind, required)}[0]: Invalid value: "key": exists in both matchLabelKeys and labelSelector']


def test_key_in_match_labels_and_an_expression() -> None:
    selector = {"matchLabels": {"key": "value1"}, "matchExpressions": [{"key": "key", "operator": "Exists"}]}
    errs = gated_errors(_affinity("podAffinity", True, _term(labelSelector=selector, matchLabelKeys=["other", "key"])), GATE)
    assert errs == [
        'spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][1]: Invalid value: "key": exists in both matchLabelKeys and labelSelector'
    ]


@pytest.mark.parametrize(("kind", "required"), PLACES)
def test_key_in_both_lists_TestValidatePod(kind: str, required: bool) -> None:
    """invalid soft/hard pod (anti-)affinity, key exists in both MatchLabelKeys and MismatchLabelKeys."""
    errs = gated_errors(_affinity(kind, required, _term(matchLabelKeys=["samekey"], mismatchLabelKeys=["samekey"])), GATE)
    assert errs == [f'{_base(kind, required)}.matchLabelKeys[0]: Invalid value: "samekey": exists in both matchLabelKeys and mismatchLabelKeys']


def test_keys_need_a_label_selector() -> None:
    """validateLabelKeys: keys without a labelSelector are forbidden, and their names then unchecked."""
    term = {"topologyKey": "zone", "matchLabelKeys": ["/bad"], "mismatchLabelKeys": ["b"]}
    base = _base("podAffinity", True)
    assert gated_errors(_affinity("podAffinity", True, term), GATE) == [
        f"{base}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
        f"{base}.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
    ]


def test_keys_not_checked_with_the_gate_off() -> None:
    term = _term(matchLabelKeys=["samekey", "/simple"], mismatchLabelKeys=["samekey"])
    assert gated_errors(_affinity("podAffinity", True, term)) == []


def test_wrong_types_are_field_errors() -> None:
    errs = gated_errors(_affinity("podAffinity", True, _term(matchLabelKeys="key2", mismatchLabelKeys=[3])), GATE)
    base = _base("podAffinity", True)
    # the wrong item reads as "" (Go's zero value), which is then no label name either
    assert [e.split(":")[0] for e in errs] == [f"{base}.matchLabelKeys"] + [f"{base}.mismatchLabelKeys[0]"] * 3
    assert "must be of type array" in errs[0] and "must be of type string" in errs[1]


# ---- what a new Pod's labels append first (mutatePodAffinity, 1.31 to 1.34) ---------------------


def _labelled(labels: dict[str, str], term: dict[str, Any], kind: str = "podAntiAffinity", required: bool = True) -> dict[str, Any]:
    pod = _affinity(kind, required, term)
    pod["metadata"]["labels"] = labels
    return pod


@pytest.mark.parametrize(("kind", "required"), PLACES)
def test_a_match_key_the_selector_names_is_refused_once_the_pod_carries_its_label(kind: str, required: bool) -> None:
    """The strategy appends `app In (web)` to the selector before validation: `app` is then named
    twice. The written selector alone (a template, or a pod without the label) passes."""
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname", "matchLabelKeys": ["app"]}
    assert gated_errors(_labelled({"app": "web"}, term, kind, required), GATE) == [
        f'{_base(kind, required)}[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector'
    ]
    assert gated_errors(_labelled({"tier": "web"}, term, kind, required), GATE) == []
    assert gated_errors(_labelled({"app": "web"}, term, kind, required)) == []  # gate off: the fields are dropped


def test_an_expression_key_counts_and_a_match_key_named_twice_is_refused_at_its_last_index() -> None:
    expression = {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "topologyKey": "zone", "matchLabelKeys": ["app"]}
    twice = {"labelSelector": {}, "topologyKey": "zone", "matchLabelKeys": ["app", "app"]}
    base = _base("podAntiAffinity", True)
    assert gated_errors(_labelled({"app": "web"}, expression), GATE) == [f'{base}[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector']
    assert gated_errors(_labelled({"app": "web"}, twice), GATE) == [f'{base}[1]: Invalid value: "app": exists in both matchLabelKeys and labelSelector']


def test_a_mismatch_key_the_selector_names_stays_allowed() -> None:
    """`key NotIn (value)` appended beside the selector's own use of the key is what mismatchLabelKeys is for."""
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone", "mismatchLabelKeys": ["app"]}
    assert gated_errors(_labelled({"app": "web"}, term), GATE) == []


def test_a_nil_selector_gets_nothing_appended() -> None:
    term = {"topologyKey": "zone", "matchLabelKeys": ["app"]}
    assert gated_errors(_labelled({"app": "web"}, term), GATE) == [
        f"{_base('podAntiAffinity', True)}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"
    ]
