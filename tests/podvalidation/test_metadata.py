"""Object metadata and the annotations a Pod gives meaning to."""

from support.pods import BASE_POD, errors_of

import copy

from hypothesis import example, given, settings, strategies as st


def _pod(**meta):
    pod = copy.deepcopy(BASE_POD)
    pod["metadata"].update(meta)
    return {**pod, "metadata": {k: v for k, v in pod["metadata"].items() if v is not None}}


def test_name_or_generate_name_is_required():
    assert errors_of(_pod(name=None)) == ["metadata.name: Required value: name or generateName is required"]
    assert errors_of(_pod(name=None, generateName="web-")) == []


def test_label_key_and_value_are_reported_at_labels():
    errs = errors_of(_pod(labels={"bad key": "-v"}))
    assert [e.split(":")[0] for e in errs] == ["metadata.labels", "metadata.labels"]
    assert errs[0].startswith('metadata.labels: Invalid value: "bad key": name part must consist of')
    assert errs[1].startswith('metadata.labels: Invalid value: "-v": a valid label must be an empty string')


def test_annotation_keys_are_lowercased_before_the_check_and_the_total_size_is_capped():
    assert errors_of(_pod(annotations={"Example.COM/Note": "x"})) == []
    assert errors_of(_pod(annotations={"big": "x" * 300_000})) == ["metadata.annotations: Too long: must have at most 262144 bytes"]


def test_pod_deletion_cost_must_be_an_int32():
    errs = errors_of(_pod(annotations={"controller.kubernetes.io/pod-deletion-cost": "1e3"}))
    assert errs == ['metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "1e3": must be a 32bit integer']


def test_apparmor_annotation_names_a_container():
    errs = errors_of(_pod(annotations={"container.apparmor.security.beta.kubernetes.io/other": "runtime/default"}))
    assert errs == ['metadata.annotations[container.apparmor.security.beta.kubernetes.io/other]: Invalid value: "other": container not found']


_KEYS = ["app", "a/b", "Bad Key", "x" * 64, "seccomp.security.alpha.kubernetes.io/pod",
         "container.apparmor.security.beta.kubernetes.io/main", "container.seccomp.security.alpha.kubernetes.io/main",
         "controller.kubernetes.io/pod-deletion-cost", "kubernetes.io/config.mirror"]
_VALUES = ["v", "-v", "", "12", "runtime/default", "localhost/p", "y" * 70, 3, ["v"]]
_SECCOMP = "seccomp.security.alpha.kubernetes.io/pod"


@settings(max_examples=300, deadline=None)
@example([{"annotations": {_SECCOMP: "runtime/default"}}], True)  # valid alone, not with this spec
@example([{"annotations": {"kubernetes.io/config.mirror": "v"}}], False)
@example([{"annotations": {"container.apparmor.security.beta.kubernetes.io/other": "runtime/default"}}], False)
@example([{"annotations": {"a": "y" * 140000}}, {"annotations": {"b": "y" * 140000}},
          {"annotations": {"a": "y" * 140000, "b": "y" * 140000}}], False)  # each valid, not together
@example([{"annotations": {f"k{i}": "\U0001d11e" * 1000 for i in range(35)}},
          {"annotations": {f"k{i}": "\U0001d11e" * 1000 for i in range(35, 70)}},
          {"annotations": {f"k{i}": "\U0001d11e" * 1000 for i in range(70)}}], False)  # 4 bytes a character
@given(st.lists(st.fixed_dictionaries({}, optional={
    "labels": st.one_of(st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=4), st.sampled_from(["x", None])),
    "annotations": st.one_of(st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=4), st.sampled_from([[], None])),
}), min_size=1, max_size=5), st.booleans())
def test_metadata_known_valid_gives_the_verdict_of_a_whole_judgement(metas, seccomp):
    """What `KnownMetadata` lets a caller skip changes no verdict, pod after pod of one review."""
    from webhook.admission.fields import FieldPath
    from webhook.podvalidation import default_pod_spec, validate_pod_template_spec
    from webhook.podvalidation.meta import KnownMetadata

    spec = copy.deepcopy(BASE_POD["spec"])
    if seccomp:
        spec["securityContext"] = {"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}
    default_pod_spec(spec)
    known, path = KnownMetadata(), FieldPath.of("spec", "template")
    for meta in metas:
        template = {"metadata": meta, "spec": spec}
        whole = validate_pod_template_spec(template, path, is_pod=True, spec_errors=[])
        assert validate_pod_template_spec(template, path, is_pod=True, spec_errors=[], known=known) == whole
    assert all(type(k) is str and type(v) is str for k, v in known.labels | known.annotations)
