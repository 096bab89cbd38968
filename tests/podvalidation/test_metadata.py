"""Object metadata and the annotations a Pod gives meaning to."""

from support.pods import BASE_POD, errors_of

import copy


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
