"""One field-error model for our rules and for `check`'s copy of the API server: paths rendered as
apimachinery's field.Path, bodies as its ErrorBody, the bad value printed by origin."""

from __future__ import annotations

from webhook.admission.fields import (
    BUILTIN,
    CEL,
    OMIT,
    RULE,
    SCHEMA,
    FieldError,
    FieldPath,
    Key,
    duplicate,
    internal,
    invalid,
    invalid_message,
    not_found,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)

ROLES = FieldPath.of("spec", "template", "roles")


def test_paths_render_names_indices_and_map_keys_as_the_api_server():
    assert str(ROLES.index(0).child("name")) == "spec.template.roles[0].name"
    assert str(FieldPath.of("metadata", "labels").key("foo")) == "metadata.labels[foo]"
    assert str(FieldPath.of("metadata", "labels").child("foo")) == "metadata.labels.foo"
    assert str(FieldPath()) == ""
    assert str(FieldPath.of("", "spec", "replicas")) == ".spec.replicas"  # a CRD's scale path keeps its dot


def test_a_map_key_is_not_the_child_of_the_same_name():
    labels = FieldPath.of("metadata", "labels")
    assert labels.key("foo") != labels.child("foo")
    assert labels.key("foo") == labels.key("foo") and hash(labels.key("foo")) == hash(labels.key("foo"))
    assert labels.key("foo").parts == ("metadata", "labels", Key("foo"))
    assert str(Key("foo")) == "foo" and type(str(Key("foo"))) is str  # YAML lookups see the text
    assert ROLES.index(2).parts == ("spec", "template", "roles", 2)


def test_an_error_knows_its_kind_path_value_and_origin():
    e = invalid(ROLES.index(1).child("replicas"), -1, "must be non-negative", origin="a-rule")
    assert (e.kind, e.field, e.detail, e.value, e.origin) == ("FieldValueInvalid", "spec.template.roles[1].replicas", "must be non-negative", -1, "a-rule")
    assert e.body() == "Invalid value: -1: must be non-negative"
    assert required(ROLES).value is OMIT and required(ROLES).origin == RULE


def test_our_rules_print_values_as_json_the_api_server_as_go():
    value = {"b": [1, None], "a": "x"}
    assert invalid(ROLES, value, "bad").body() == 'Invalid value: {"a":"x","b":[1,null]}: bad'
    assert (
        invalid(ROLES, value, "bad", origin=SCHEMA).body() == 'Invalid value: map[string]interface {}{"a":"x", "b":[]interface {}{1, interface {}(nil)}}: bad'
    )
    assert invalid(ROLES, None, "bad").body() == "Invalid value: null: bad"
    assert invalid(ROLES, None, "bad", origin=CEL).body() == 'Invalid value: "null": bad'
    assert invalid(ROLES, 1e6, "big", origin=BUILTIN).body() == "Invalid value: 1e+06: big"
    assert invalid(ROLES, 1e6, "big").body() == "Invalid value: 1000000.0: big"


def test_an_empty_path_is_gos_nil_path():
    e = invalid(FieldPath(), None, "some rules were not checked", origin=CEL)
    assert str(e) == '<nil>: Invalid value: "null": some rules were not checked'


def test_not_found_too_many_too_long_for_both_origins():
    containers = FieldPath.of("spec", "containers")
    assert str(not_found(containers.index(0).child("name"), "app")) == 'spec.containers[0].name: Not found: "app"'
    assert str(not_found(containers.index(0).child("name"), "app", origin=BUILTIN)) == 'spec.containers[0].name: Not found: "app"'
    assert str(not_found(ROLES, {"a": 1}, origin=SCHEMA)) == 'spec.template.roles: Not found: map[string]interface {}{"a":1}'
    assert str(too_many(containers, 3, 2)) == "spec.containers: Too many: 3: must have at most 2 items"
    assert str(too_many(containers, 3, 2, origin=SCHEMA)) == "spec.containers: Too many: 3: must have at most 2 items"
    assert str(too_many(containers, -1, -1, origin=BUILTIN)) == "spec.containers: Too many: has too many items"
    name = FieldPath.of("metadata", "name")
    assert str(too_long(name, 63)) == "metadata.name: Too long: may not be more than 63 bytes"  # ours, as always
    assert str(too_long(name, 63, origin=SCHEMA)) == "metadata.name: Too long: may not be longer than 63"  # TooLongMaxLength
    assert str(too_long(name, 63, origin=BUILTIN)) == "metadata.name: Too long: must have at most 63 bytes"  # TooLong, 1.28
    assert too_long(name, 63).kind == "FieldValueTooLong" and too_many(name, 3, 2).kind == "FieldValueTooMany"
    assert not_found(name, "x").kind == "FieldValueNotFound"


def test_the_other_kinds_render_as_apimachinery():
    where = FieldPath.of("spec", "x")
    assert (
        str(type_invalid(where, "string", 'spec.x in body must be of type integer: "string"', origin=SCHEMA))
        == 'spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"'
    )
    assert str(internal(where, "boom", origin=BUILTIN)) == "spec.x: Internal error: boom"
    assert str(duplicate(where, "a")) == 'spec.x: Duplicate value: "a"'
    assert str(duplicate(where, 1.5, origin=SCHEMA)) == "spec.x: Duplicate value: 1.5"
    assert str(not_supported(where, "a", ['b"c'])) == 'spec.x: Unsupported value: "a": supported values: "b\\"c"'
    assert str(not_supported(where, "a", [], origin=SCHEMA)) == 'spec.x: Unsupported value: "a"'


def test_one_invalid_message_for_one_or_many_errors():
    one = invalid(FieldPath.of("spec", "replicas"), -1, "must be non-negative")
    two = required(ROLES)
    assert invalid_message("Pod", "", "p", [one]) == 'Pod "p" is invalid: spec.replicas: Invalid value: -1: must be non-negative'
    assert invalid_message("ModelServing", "workload.serving.volcano.sh", "m", [one, two]) == (
        'ModelServing.workload.serving.volcano.sh "m" is invalid: [spec.replicas: Invalid value: -1: must be non-negative, spec.template.roles: Required value]'
    )
    assert isinstance(one, FieldError)


def test_copies_keep_the_omitted_value_and_the_map_keys():
    import copy
    import pickle

    e = required(FieldPath.of("metadata", "labels").key("foo"))
    for twin in (copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
        assert twin == e and twin.value is OMIT and str(twin) == "metadata.labels[foo]: Required value"
