"""webhook/shapes/volcano.py: HyperNodes, Queues and network topology policies read without
trusting a field's type.

Each field of the wrong type reads as absent, or is kept as sent where a reader names it; nothing
raises. What a malformed HyperNode member becomes downstream is pinned here too: the same note,
naming the same member, as before the views (the resolver's notes are what a malformed HyperNode
field turns into, as a field error is for a ModelServing)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook import hypernodes
from webhook.shapes.volcano import (
    GROUP_POLICY,
    ROLE_POLICY,
    HyperNode,
    LabelSelector,
    Member,
    MemberSelector,
    Queue,
    hypernode,
    label_selector,
    member_selector,
    queue,
    topology_policies,
    topology_policy,
)

ODD: list[Any] = ["text", 3, 1.5, True, ["a"], []]  # set, and of the wrong type (null is "not set")


@pytest.mark.parametrize("value", [None, *ODD])
def test_a_hypernode_of_malformed_fields_reads_as_absent(value: Any) -> None:
    assert hypernode(value) == HyperNode("", None, "", ())
    assert hypernode({"metadata": value, "spec": value}) == HyperNode("", None, "", ())
    got = hypernode({"metadata": {"name": value}, "spec": {"tier": value, "tierName": value, "members": value}})
    members = tuple(Member(i, None, None) for i, _ in enumerate(value)) if isinstance(value, list) else ()  # a list's entries are kept, each unusable
    assert got == HyperNode("text" if value == "text" else "", 3 if value == 3 else None, "text" if value == "text" else "", members)


@pytest.mark.parametrize("value", [None, *ODD])
def test_a_member_keeps_its_place_and_its_type_as_sent(value: Any) -> None:
    got = hypernode({"spec": {"members": [value, {"type": value, "selector": value}, {"type": "Node", "selector": {}}]}})
    assert got.members == (Member(0, None, None), Member(1, value, None), Member(2, "Node", MemberSelector()))


@pytest.mark.parametrize("value", ODD)
def test_a_member_selector_keeps_unset_apart_from_unusable(value: Any) -> None:
    assert member_selector(value) is None
    assert member_selector({"exactMatch": None, "regexMatch": None, "labelMatch": None}) == MemberSelector()
    unusable = member_selector({"exactMatch": value, "regexMatch": value, "labelMatch": value})
    assert unusable == MemberSelector(exact="", has_regex=True, pattern=None, has_label=True, label=None)
    inner = member_selector({"exactMatch": {"name": value}, "regexMatch": {"pattern": value}, "labelMatch": {"matchLabels": value}})
    assert inner is not None and inner.exact == ("text" if value == "text" else "") and inner.pattern == value
    assert inner.label == LabelSelector(not value, None, ())


@pytest.mark.parametrize("value", ODD)
def test_a_label_selector_keeps_each_malformed_part_for_its_refusal(value: Any) -> None:
    assert label_selector({}) == LabelSelector(True, {}, ())
    assert label_selector({"matchExpressions": value}).expressions == (tuple(None for _ in value) if isinstance(value, list) else None)
    got = label_selector({"matchLabels": {"a": "b"}, "matchExpressions": [value, {"key": "a", "operator": "Exists"}]})
    assert got == LabelSelector(False, {"a": "b"}, (None, {"key": "a", "operator": "Exists"}))


@pytest.mark.parametrize("value", [None, *ODD])
def test_a_queue_of_malformed_fields_reads_as_a_child_of_root_with_its_state_as_text(value: Any) -> None:
    assert queue(value) == Queue("", "", "")
    got = queue({"metadata": {"name": value}, "spec": {"parent": value}, "status": {"state": value}})
    text = "text" if value == "text" else ""
    assert got == Queue(text, text, str(value) if value else "")


@pytest.mark.parametrize("value", ODD)
def test_a_topology_policy_keeps_a_tier_as_sent_and_a_tier_name_only_as_text(value: Any) -> None:
    assert topology_policy(value) is None
    assert topology_policies({"networkTopology": value}) == {}
    assert topology_policies({"networkTopology": {GROUP_POLICY: value, ROLE_POLICY: value}}) == {}
    got = topology_policy({"mode": value, "highestTierAllowed": value, "highestTierName": value})
    assert got is not None and got.tier_allowed == value and got.tier_name == ("text" if value == "text" else "")
    assert got.hard is (not value)  # an unset mode is the CRD's default, hard; any other value is not hard
    assert topology_policy({})


# ---- what a malformed member becomes: the resolver's note, at the member's place ----------------------

NOTES = [
    ({"type": "Node", "selector": "x"}, "members[0]: its selector is not an object"),
    ({"type": 5, "selector": {}}, "members[0]: unknown member type 5"),
    ({"type": "HyperNode", "selector": {"exactMatch": {"name": 5}}}, "members[0]: a HyperNode member is resolved by exactMatch only, and this one has none"),
    ({"type": "Node", "selector": {"exactMatch": "x"}}, "Node member 1: exactMatch without a name: it selects nothing"),
    (
        {"type": "Node", "selector": {"regexMatch": {"pattern": 5}}},
        "Node member 1: regexMatch pattern 5 does not compile as Go's RE2 (not a string): it selects nothing",
    ),
    (
        {"type": "Node", "selector": {"regexMatch": "x"}},
        "Node member 1: regexMatch pattern None does not compile as Go's RE2 (not a string): it selects nothing",
    ),
    ({"type": "Node", "selector": {"labelMatch": 5}}, "Node member 1: labelMatch is not an object: it selects nothing"),
    ({"type": "Node", "selector": {"labelMatch": {"matchLabels": "x"}}}, "Node member 1: labelMatch refused: matchLabels is not a map: it selects nothing"),
    (
        {"type": "Node", "selector": {"labelMatch": {"matchExpressions": "x"}}},
        "Node member 1: labelMatch refused: matchExpressions is not a list: it selects nothing",
    ),
    (
        {"type": "Node", "selector": {"labelMatch": {"matchExpressions": [5]}}},
        "Node member 1: labelMatch refused: a matchExpressions entry is not an object: it selects nothing",
    ),
    (
        {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"a": "b"}, "matchExpressions": "x"}}},
        "Node member 1: labelMatch refused: matchExpressions is not a list: it selects nothing",
    ),
    (
        {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"a": "not a value"}, "matchExpressions": "x"}}},
        "Node member 1: labelMatch refused: matchLabels 'a': 'not a value' is not a valid label: it selects nothing",
    ),
]


@pytest.mark.parametrize("member, note", NOTES)
def test_a_malformed_member_is_the_same_note_at_its_place(member: dict[str, Any], note: str) -> None:
    picked, notes = hypernodes.resolve_nodes(hypernode({"spec": {"members": [member]}}), {"worker-1": {"a": "b"}})
    assert picked == set() and notes == [note]


@pytest.mark.parametrize(
    "key, valid",
    [("role", True), ("example.com/role", True), ("a/b/c", False), ("/role", False), ("Example.com/role", False), ("r" * 64, False), ("bad key", False)],
)
def test_label_keys_are_judged_by_apimachinerys_qualified_name(key: str, valid: bool) -> None:
    """One implementation of the label key and value formats (webhook/names.py) for the Pod
    validation port and the HyperNode resolver: a key it refuses refuses the selector."""
    picked = hypernodes.node_members(member_selector({"labelMatch": {"matchExpressions": [{"key": key, "operator": "DoesNotExist"}]}}), {"n": {}})
    assert (picked.names == frozenset({"n"})) is valid and bool(picked.problem) is not valid
