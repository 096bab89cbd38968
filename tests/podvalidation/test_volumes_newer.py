"""recursiveReadOnly mounts and image volumes (1.30-1.34).

Mount cases from upstream's TestValidateVolumeMounts (pkg/apis/core/validation/validation_test.go
at commit 000f2605); the image source cases follow validateImageVolumeSource of the same commit.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.gated import gated_errors
from support.pods import BASE_POD

from webhook.kubeversion import KubeVersion
from webhook.podvalidation import apply_pod_defaults, validate_pod_create
from webhook.podvalidation.options import PodOptions

RRO = "RecursiveReadOnlyMounts"
IMAGE = "ImageVolume"
VOLUMES = [
    {"name": "host", "hostPath": {"path": "/foo/baz"}},
    {"name": "image-volume", "image": {"reference": "quay.io/my/artifact:v1", "pullPolicy": "IfNotPresent"}},
]


def _mounts(*mounts: dict[str, Any], volumes: list[dict[str, Any]] | None = None, privileged: bool = False) -> dict[str, Any]:
    pod = copy.deepcopy(BASE_POD)
    pod["spec"]["volumes"] = copy.deepcopy(VOLUMES if volumes is None else volumes)
    pod["spec"]["containers"][0]["volumeMounts"] = list(mounts)
    if privileged:
        pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return pod


@pytest.mark.parametrize(
    "mount",
    [
        {"name": "host", "mountPath": "/rro-nil", "readOnly": True},
        {"name": "host", "mountPath": "/rro-disabled", "readOnly": True, "recursiveReadOnly": "Disabled"},
        {"name": "host", "mountPath": "/rro-disabled-2", "readOnly": False, "recursiveReadOnly": "Disabled"},
        {"name": "host", "mountPath": "/rro-ifpossible", "readOnly": True, "recursiveReadOnly": "IfPossible"},
        {"name": "host", "mountPath": "/rro-enabled", "readOnly": True, "recursiveReadOnly": "Enabled"},
        {"name": "host", "mountPath": "/rro-enabled-2", "readOnly": True, "recursiveReadOnly": "Enabled", "mountPropagation": "None"},
        {"name": "image-volume", "mountPath": "/image-volume"},
    ],
)
def test_valid_mounts_TestValidateVolumeMounts(mount: dict[str, Any]) -> None:
    assert gated_errors(_mounts(mount), RRO, IMAGE) == []


def test_invalid_recursive_read_only_TestValidateVolumeMounts() -> None:
    at = "spec.containers[0].volumeMounts.recursiveReadOnly"  # upstream's path: the list's, not the item's
    assert gated_errors(_mounts({"name": "host", "mountPath": "/rro-bad1", "recursiveReadOnly": "Enabled"}), RRO, IMAGE) == [
        f"{at}: Forbidden: may only be specified when readOnly is true"
    ]
    assert gated_errors(_mounts({"name": "host", "mountPath": "/rro-bad1", "readOnly": False, "recursiveReadOnly": "IfPossible"}), RRO, IMAGE) == [
        f"{at}: Forbidden: may only be specified when readOnly is true"
    ]
    assert gated_errors(
        _mounts({"name": "host", "mountPath": "/rro-bad2", "readOnly": True, "recursiveReadOnly": "Enabled", "mountPropagation": "HostToContainer"}), RRO, IMAGE
    ) == [f"{at}: Forbidden: may only be specified when mountPropagation is None or not specified"]
    assert gated_errors(_mounts({"name": "host", "mountPath": "/rro", "readOnly": True, "recursiveReadOnly": "Always"}), RRO, IMAGE) == [
        f'{at}: Unsupported value: "Always": supported values: "Disabled", "Enabled", "IfPossible"'
    ]
    # both at once, and beside a Bidirectional propagation on a privileged container
    assert gated_errors(
        _mounts({"name": "host", "mountPath": "/rro", "recursiveReadOnly": "Enabled", "mountPropagation": "Bidirectional"}, privileged=True), RRO, IMAGE
    ) == [
        f"{at}: Forbidden: may only be specified when readOnly is true",
        f"{at}: Forbidden: may only be specified when mountPropagation is None or not specified",
    ]


def test_recursive_read_only_not_checked_with_the_gate_off() -> None:
    assert gated_errors(_mounts({"name": "host", "mountPath": "/rro", "recursiveReadOnly": "Always"}), IMAGE) == []


def test_no_sub_path_into_an_image_volume_through_1_32_TestValidateVolumeMounts() -> None:
    """ValidateVolumeMounts of v1.32.11 (ImageVolume turned on); gone from v1.33.7 on."""
    at = "spec.containers[0].volumeMounts[0]"
    at_1_32 = PodOptions(version=KubeVersion(1, 32), gates=frozenset({IMAGE}))

    def errors(pod: dict, opts: PodOptions = at_1_32) -> list[str]:
        return [str(e) for e in validate_pod_create(apply_pod_defaults(copy.deepcopy(pod), opts), opts=opts)]

    assert errors(_mounts({"name": "image-volume", "mountPath": "/image-volume-err-1", "subPath": "foo"})) == [
        f'{at}.subPath: Invalid value: "foo": not allowed in image volume sources'
    ]
    assert errors(_mounts({"name": "image-volume", "mountPath": "/image-volume-err-2", "subPathExpr": "$(POD_NAME)"})) == [
        f'{at}.subPathExpr: Invalid value: "$(POD_NAME)": not allowed in image volume sources'
    ]
    # the same subPath into another volume is fine
    assert errors(_mounts({"name": "host", "mountPath": "/x", "subPath": "foo"})) == []
    # from 1.33 a subPath into an image volume is allowed (kube-apiserver 1.37.2 admits it: tests/oracle)
    assert gated_errors(_mounts({"name": "image-volume", "mountPath": "/i", "subPath": "foo"}), IMAGE) == []


def test_image_volume_source() -> None:
    """validateImageVolumeSource: a Pod needs a reference; the pull policy is one of three."""
    at = "spec.volumes[0].image"
    assert gated_errors(_mounts(volumes=[{"name": "img", "image": {"reference": "quay.io/a:v1"}}]), IMAGE) == []
    assert gated_errors(_mounts(volumes=[{"name": "img", "image": {"reference": ""}}]), IMAGE) == [f"{at}.reference: Required value"]
    assert gated_errors(_mounts(volumes=[{"name": "img", "image": {"reference": "a", "pullPolicy": "Sometimes"}}]), IMAGE) == [
        f'{at}.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'
    ]
    # a second source is reported at the image
    assert gated_errors(_mounts(volumes=[{"name": "img", "emptyDir": {}, "image": {"reference": "a"}}]), IMAGE) == [
        "spec.volumes[0].image: Forbidden: may not specify more than 1 volume type"
    ]


def test_image_reference_not_required_of_a_bare_template() -> None:
    from support.gated import options

    from webhook.admission.fields import FieldPath
    from webhook.podvalidation import apply_template_defaults, validate_pod_template_spec

    template = {"metadata": {}, "spec": copy.deepcopy(BASE_POD["spec"]) | {"volumes": [{"name": "img", "image": {}}]}}
    path = FieldPath.of("spec", "template")
    assert validate_pod_template_spec(apply_template_defaults(template, options(IMAGE)), path, opts=options(IMAGE)) == []
    as_pod = validate_pod_template_spec(apply_template_defaults(template, options(IMAGE)), path, is_pod=True, opts=options(IMAGE))
    assert [str(e) for e in as_pod] == ["spec.template.spec.volumes[0].image.reference: Required value"]


def test_image_is_no_source_with_the_gate_off() -> None:
    """With ImageVolume off the field is dropped upstream before validation; here the key alone is
    not a source, so the volume has none (what that server says once the field is gone)."""
    errs = gated_errors(_mounts(volumes=[{"name": "img", "image": {"reference": "a"}}]))
    assert errs == ["spec.volumes[0]: Required value: must specify a volume type"]
