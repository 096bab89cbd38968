"""Object metadata and the annotations a Pod gives meaning to."""

import copy

from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.pods import BASE_POD, errors_of


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


_KEYS = [
    "app",
    "a/b",
    "Bad Key",
    "x" * 64,
    "seccomp.security.alpha.kubernetes.io/pod",
    "container.apparmor.security.beta.kubernetes.io/main",
    "container.seccomp.security.alpha.kubernetes.io/main",
    "controller.kubernetes.io/pod-deletion-cost",
    "kubernetes.io/config.mirror",
]
_VALUES = ["v", "-v", "", "12", "runtime/default", "localhost/p", "y" * 70, 3, ["v"]]
_SECCOMP = "seccomp.security.alpha.kubernetes.io/pod"


@settings(max_examples=examples(300), deadline=None)
@example([{"annotations": {_SECCOMP: "runtime/default"}}], True)  # valid alone, not with this spec
@example([{"annotations": {"kubernetes.io/config.mirror": "v"}}], False)
@example([{"annotations": {"container.apparmor.security.beta.kubernetes.io/other": "runtime/default"}}], False)
@example([{"annotations": {"a": "y" * 140000}}, {"annotations": {"b": "y" * 140000}}], False)  # each valid, not together
@example(
    [{"annotations": {f"k{i}": "\U0001d11e" * 1000 for i in range(32)}}, {"annotations": {f"k{i}": "\U0001d11e" * 1000 for i in range(32, 64)}}], False
)  # 4 bytes a character
@example([{"annotations": {f"k{i}": "\U0001d11e" * 1000 for i in range(35)}}, {"annotations": {f"k{i}": "\U0001d11e" * 1000 for i in range(35, 70)}}], False)
@example([{"labels": {"app": "v", "a/b": "12"}, "annotations": {"app": "v"}}, {"labels": {"app": "", "a/b": "v"}}], True)
@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "labels": st.one_of(st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=4), st.sampled_from(["x", None])),
                "annotations": st.one_of(st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=4), st.sampled_from([[], None])),
            },
        ),
        min_size=1,
        max_size=2,
    ),
    st.booleans(),
)
def test_metadata_surely_valid_by_its_sources_is_valid(sources, seccomp):
    """What `surely_valid` lets a caller skip changes no verdict: a pod whose labels and
    annotations merge two sources it finds surely valid (a controller's and a template's, each
    entry of the second over the first) has valid metadata whatever its spec, as has a pod with
    only some of their entries."""
    from webhook.admission.fields import FieldPath
    from webhook.podvalidation import default_pod_spec, validate_pod_template_spec
    from webhook.podvalidation.meta import surely_valid

    spec = copy.deepcopy(BASE_POD["spec"])
    if seccomp:
        spec["securityContext"] = {"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}
    default_pod_spec(spec)
    merged: dict = {"labels": {}, "annotations": {}}
    for source in sources:
        for key in ("labels", "annotations"):
            if isinstance(source.get(key), dict):
                merged[key].update(source[key])
    some = {key: dict(list(entries.items())[::2]) for key, entries in merged.items()}
    path = FieldPath.of("spec", "template")
    if all(surely_valid(source.get("labels"), source.get("annotations")) for source in sources):
        for meta in (merged, some):
            assert validate_pod_template_spec({"metadata": meta, "spec": spec}, path, is_pod=True, spec_errors=[]) == []
