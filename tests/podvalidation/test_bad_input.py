"""Input of any shape gives field errors, never an exception."""

from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.pods import pod_with

from webhook.admission.fields import FieldPath
from webhook.podvalidation import apply_pod_defaults, apply_template_defaults, validate_pod_create, validate_pod_template_spec

_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=True) | st.text(max_size=12)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
_KEYS = [
    "containers",
    "initContainers",
    "ephemeralContainers",
    "volumes",
    "tolerations",
    "affinity",
    "dnsConfig",
    "topologySpreadConstraints",
    "securityContext",
    "nodeSelector",
    "hostAliases",
    "os",
    "overhead",
    "readinessGates",
]
_CONTAINER_KEYS = [
    "name",
    "image",
    "ports",
    "env",
    "envFrom",
    "resources",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "lifecycle",
    "securityContext",
    "imagePullPolicy",
]


def test_a_template_that_is_not_an_object_is_a_field_error():
    errs = validate_pod_template_spec("nope", FieldPath.of("spec", "template"))
    assert [str(e) for e in errs] == ['spec.template: Invalid value: "nope": must be of type object']


def test_a_container_list_of_the_wrong_type_is_reported_at_its_path():
    errs = [str(e) for e in validate_pod_create(apply_pod_defaults(pod_with(containers={"a": 1})))]
    assert errs == ['spec.containers: Invalid value: "object": must be of type array', "spec.containers: Required value"]


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(_KEYS), _json)
def test_any_value_in_any_spec_field_never_raises(key, value):
    pod = pod_with(**{key: value})
    validate_pod_create(apply_pod_defaults(pod))
    validate_pod_template_spec(apply_template_defaults({"spec": pod["spec"]}), FieldPath.of("t"), is_pod=True)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(_CONTAINER_KEYS), _json, st.sampled_from(["containers", "initContainers", "ephemeralContainers"]))
def test_any_value_in_any_container_field_never_raises(key, value, where):
    pod = pod_with(**{where: [{"name": "m", "image": "x:1", key: value}]})
    validate_pod_create(apply_pod_defaults(pod))


@settings(max_examples=examples(200), deadline=None)
@given(_json)
def test_any_document_never_raises(value):
    validate_pod_create(apply_pod_defaults(value))
    validate_pod_template_spec(apply_template_defaults(value), FieldPath.of("t"))
