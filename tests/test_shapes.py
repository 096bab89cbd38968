"""webhook/shapes: decoded JSON read without trusting its type, and the autoscaling targets view.

Every helper answers a malformed value with an empty one or None, never with an exception: the
rules built on them report a malformed field at its path instead of crashing the review."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.policies.kthena_autoscaling import binding_errors
from webhook.shapes import as_dict, as_list, as_object, labels_of, metadata, namespace_of, objects, only_objects
from webhook.shapes.kthena import DISAGGREGATED, HETEROGENEOUS, HOMOGENEOUS, autoscaling_targets, modelserving

ODD: list[Any] = [None, "text", 3, 1.5, True, ["a"], []]


@pytest.mark.parametrize("value", ODD)
def test_a_value_of_the_wrong_type_reads_as_empty(value: Any) -> None:
    assert as_dict(value) == {} and as_object(value) is None
    assert list(objects(value)) == [] and list(only_objects(as_list(value))) == []
    assert metadata(value) == {} and labels_of(value) == {} and namespace_of(value) == ""
    assert labels_of({"metadata": {"labels": value}}) == {}
    assert namespace_of({"metadata": {"namespace": value}}) == ("text" if value == "text" else "")


def test_values_of_the_right_type_are_handed_back_as_they_are() -> None:
    found = {"a": 1}
    assert as_dict(found) is found and as_object(found) is found
    listed = [found]
    assert as_list(listed) is listed and as_list(found) == []
    assert list(objects(["x", found, None, {"b": 2}])) == [(1, found), (3, {"b": 2})]
    assert list(only_objects(["x", found, 3])) == [found]
    obj = {"metadata": {"namespace": "ns", "labels": {"app": "x"}}}
    assert namespace_of(obj) == "ns" and labels_of(obj) == {"app": "x"}


def test_a_target_is_present_whatever_its_type_but_read_only_as_an_object() -> None:
    view = autoscaling_targets({"spec": {HOMOGENEOUS: "oops", HETEROGENEOUS: None, DISAGGREGATED: {"roles": {}}}})
    assert view.present == (HOMOGENEOUS, DISAGGREGATED)
    assert view.homogeneous is None and view.heterogeneous is None and view.disaggregated == {"roles": {}}
    assert autoscaling_targets({"spec": ["not", "a", "map"]}).present == ()
    assert autoscaling_targets("not an object").spec == {}


def test_a_binding_with_a_malformed_target_is_not_told_to_set_one() -> None:
    """Kthena v0.4 counts a target that is set to anything but null; the view keeps that count."""
    errs = binding_errors({"spec": {HOMOGENEOUS: "oops"}})
    assert not any(str(e.path) == "spec.homogeneousTarget" for e in errs)
    assert any(str(e.path) == "spec.homogeneousTarget" for e in binding_errors({"spec": {}}))


def test_a_modelserving_view_keeps_the_roles_that_are_objects_and_indexes_them_by_name() -> None:
    first, later = {"name": "prefill", "replicas": 1}, {"name": "prefill", "replicas": 2}
    ms = {"spec": {"template": {"roles": ["odd", first, {"name": 7}, later], "gangPolicy": {"minRoleReplicas": {"prefill": 1}}}}}
    view = modelserving(ms)
    assert [i for i, _ in view.roles] == [1, 2, 3]
    assert view.role_index() == {"prefill": later}  # later duplicates win, as in Kthena's map
    assert view.mins == {"prefill": 1} and view.strategy is None
    broken = modelserving({"spec": {"template": {"roles": "odd", "gangPolicy": []}, "rolloutStrategy": "x"}})
    assert broken.roles == [] and broken.mins == {} and broken.strategy is None and broken.role_index() == {}
