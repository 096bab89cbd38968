"""AppArmor profiles, supplementalGroupsPolicy and seLinuxChangePolicy (1.30-1.34).

Cases from upstream's TestValidatePod (pkg/apis/core/validation/validation_test.go at commit
000f2605), replayed with the gate on and off; the policy cases follow
validateSupplementalGroupsPolicy and validateSELinuxChangePolicy of the same commit.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.gated import gated_errors
from support.pods import BASE_POD, container_pod, errors_of, pod_with

APPARMOR = "AppArmorFields"
ANNOTATION = "container.apparmor.security.beta.kubernetes.io/main"


def _pod_profile(profile: dict[str, Any]) -> dict[str, Any]:
    return pod_with(securityContext={"appArmorProfile": profile})


def _container_profile(profile: dict[str, Any]) -> dict[str, Any]:
    return container_pod(securityContext={"appArmorProfile": profile})


def _annotated(pod: dict[str, Any], value: str) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["annotations"] = {ANNOTATION: value}
    return pod


@pytest.mark.parametrize(
    "profile",
    [
        {"type": "RuntimeDefault"},  # runtime default AppArmor profile for a pod / a container
        {"type": "Unconfined"},  # unconfined AppArmor profile for a pod / a container
        {"type": "Localhost", "localhostProfile": "example-org/application-foo"},  # localhost AppArmor profile
    ],
)
def test_valid_profiles_TestValidatePod(profile: dict[str, Any]) -> None:
    assert gated_errors(_pod_profile(profile), APPARMOR) == []
    assert gated_errors(_container_profile(profile), APPARMOR) == []


def test_invalid_profiles_TestValidatePod() -> None:
    at = "spec.securityContext.appArmorProfile"
    assert gated_errors(_pod_profile({"type": "test"}), APPARMOR) == [
        f'{at}.type: Unsupported value: "test": supported values: "Localhost", "RuntimeDefault", "Unconfined"'
    ]
    assert gated_errors(_container_profile({"type": "test"}), APPARMOR) == [
        'spec.containers[0].securityContext.appArmorProfile.type: Unsupported value: "test": supported values: "Localhost", "RuntimeDefault", "Unconfined"'
    ]
    assert gated_errors(_pod_profile({"type": ""}), APPARMOR) == [f"{at}.type: Required value: type is required when appArmorProfile is set"]
    assert gated_errors(_pod_profile({"type": "Localhost"}), APPARMOR) == [
        f"{at}.localhostProfile: Required value: must be set when AppArmor type is Localhost"
    ]
    assert gated_errors(_pod_profile({"type": "Localhost", "localhostProfile": ""}), APPARMOR) == [
        f"{at}.localhostProfile: Required value: must be set when AppArmor type is Localhost"
    ]
    assert gated_errors(_pod_profile({"type": "RuntimeDefault", "localhostProfile": "foo-bar"}), APPARMOR) == [
        f'{at}.localhostProfile: Invalid value: "foo-bar": can only be set when AppArmor type is Localhost'
    ]
    assert gated_errors(_pod_profile({"type": "Localhost", "localhostProfile": "foo-bar "}), APPARMOR) == [
        f'{at}.localhostProfile: Invalid value: "foo-bar ": must not be padded with whitespace'
    ]
    too_long = gated_errors(_pod_profile({"type": "Localhost", "localhostProfile": "a" * 4096}), APPARMOR)
    assert len(too_long) == 1 and too_long[0].startswith(f"{at}.localhostProfile: Too long:") and "4095" in too_long[0]
    assert gated_errors(_pod_profile({"type": "Localhost", "localhostProfile": "a" * 4095}), APPARMOR) == []


def test_profile_not_checked_with_the_gate_off() -> None:
    """With AppArmorFields off the API server has dropped the field before validating."""
    assert gated_errors(_pod_profile({"type": "test"})) == []
    assert errors_of(_container_profile({"type": "Localhost"})) == []


def test_annotation_and_field_agree_TestValidatePod() -> None:
    """matching / mismatched AppArmor fields and annotations, container and pod profiles."""
    local = {"type": "Localhost", "localhostProfile": "foo"}
    assert gated_errors(_annotated(_container_profile(local), "localhost/foo"), APPARMOR) == []
    assert gated_errors(_annotated(_pod_profile(local), "localhost/foo"), APPARMOR) == []
    at = "spec.containers[0].securityContext.appArmorProfile"
    assert gated_errors(_annotated(_container_profile({"type": "Unconfined"}), "runtime/default"), APPARMOR) == [
        f"{at}.type: Forbidden: apparmor type in annotation and field must match"
    ]
    # the pod's profile is inherited by the container, and reported at the container's path
    assert gated_errors(_annotated(_pod_profile({"type": "Unconfined"}), "runtime/default"), APPARMOR) == [
        f"{at}.type: Forbidden: apparmor type in annotation and field must match"
    ]
    assert gated_errors(_annotated(_container_profile({"type": "Localhost", "localhostProfile": "bar"}), "localhost/foo"), APPARMOR) == [
        f"{at}.localhostProfile: Forbidden: apparmor profile in annotation and field must match"
    ]
    # a container's own profile wins over the pod's
    pod = _annotated(_container_profile({"type": "RuntimeDefault"}), "runtime/default")
    pod["spec"]["securityContext"] = {"appArmorProfile": {"type": "Unconfined"}}
    assert gated_errors(pod, APPARMOR) == []


def test_annotation_match_skipped_for_windows_and_with_the_gate_off() -> None:
    pod = _annotated(_container_profile({"type": "Unconfined"}), "runtime/default")
    assert gated_errors(pod) == []
    windows = copy.deepcopy(pod)
    windows["spec"]["os"] = {"name": "windows"}
    assert not any("apparmor type" in e for e in gated_errors(windows, APPARMOR))


def test_annotation_match_in_a_template_judged_as_a_pod() -> None:
    from support.gated import options

    from webhook.admission.fields import FieldPath
    from webhook.podvalidation import apply_template_defaults, validate_pod_template_spec

    template = {
        "metadata": {"annotations": {ANNOTATION: "unconfined"}},
        "spec": copy.deepcopy(BASE_POD["spec"]) | {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}},
    }
    errs = validate_pod_template_spec(
        apply_template_defaults(template, options(APPARMOR)), FieldPath.of("spec", "template"), is_pod=True, opts=options(APPARMOR)
    )
    assert [str(e) for e in errs] == [
        "spec.template.spec.containers[0].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match"
    ]


def test_supplemental_groups_policy() -> None:
    """validateSupplementalGroupsPolicy: Merge or Strict, with the SupplementalGroupsPolicy gate."""
    gate = "SupplementalGroupsPolicy"
    for policy in ("Merge", "Strict"):
        assert gated_errors(pod_with(securityContext={"supplementalGroupsPolicy": policy}), gate) == []
    assert gated_errors(pod_with(securityContext={"supplementalGroupsPolicy": "Lenient"}), gate) == [
        'spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Lenient": supported values: "Merge", "Strict"'
    ]
    assert gated_errors(pod_with(securityContext={"supplementalGroupsPolicy": ""}), gate) == [
        'spec.securityContext.supplementalGroupsPolicy: Unsupported value: "": supported values: "Merge", "Strict"'
    ]
    assert gated_errors(pod_with(securityContext={"supplementalGroupsPolicy": "Lenient"})) == []


def test_selinux_change_policy() -> None:
    """validateSELinuxChangePolicy: only Recursive while SELinuxMount is off (AllowOnlyRecursive...)."""
    gate = "SELinuxChangePolicy"
    at = "spec.securityContext.seLinuxChangePolicy"
    assert gated_errors(pod_with(securityContext={"seLinuxChangePolicy": "Recursive"}), gate) == []
    assert gated_errors(pod_with(securityContext={"seLinuxChangePolicy": "MountOption"}), gate) == [
        f'{at}: Unsupported value: "MountOption": supported values: "Recursive"'
    ]
    assert gated_errors(pod_with(securityContext={"seLinuxChangePolicy": "MountOption"}), gate, "SELinuxMount") == []
    assert gated_errors(pod_with(securityContext={"seLinuxChangePolicy": "Bogus"}), gate, "SELinuxMount") == [
        f'{at}: Unsupported value: "Bogus": supported values: "MountOption", "Recursive"'
    ]
    assert gated_errors(pod_with(securityContext={"seLinuxChangePolicy": "Bogus"})) == []


def test_wrong_types_are_field_errors() -> None:
    errs = gated_errors(
        pod_with(securityContext={"appArmorProfile": "Localhost", "supplementalGroupsPolicy": 3, "seLinuxChangePolicy": ["x"]}),
        APPARMOR,
        "SupplementalGroupsPolicy",
        "SELinuxChangePolicy",
    )
    assert [e.split(":")[0] for e in errs] == [
        "spec.securityContext.appArmorProfile",
        "spec.securityContext.supplementalGroupsPolicy",
        "spec.securityContext.seLinuxChangePolicy",
    ]
    errs = gated_errors(_container_profile({"type": 7, "localhostProfile": False}), APPARMOR)
    assert len(errs) == 3 and all(e.startswith("spec.containers[0].securityContext.appArmorProfile.") for e in errs)


def test_windows_pods_may_not_set_the_newer_linux_fields() -> None:
    """validateWindows (commit 000f2605): appArmorProfile on the pod and containers,
    supplementalGroupsPolicy and seLinuxChangePolicy, each in upstream's order."""
    pod = container_pod(securityContext={"appArmorProfile": {"type": "RuntimeDefault"}})
    pod["spec"]["os"] = {"name": "windows"}
    pod["spec"]["securityContext"] = {"appArmorProfile": {"type": "RuntimeDefault"}, "supplementalGroupsPolicy": "Merge", "seLinuxChangePolicy": "Recursive"}
    assert gated_errors(pod, APPARMOR, "SupplementalGroupsPolicy", "SELinuxChangePolicy") == [
        "spec.securityContext.appArmorProfile: Forbidden: cannot be set for a windows pod",
        "spec.securityContext.supplementalGroupsPolicy: Forbidden: cannot be set for a windows pod",
        "spec.securityContext.seLinuxChangePolicy: Forbidden: cannot be set for a windows pod",
        "spec.containers[0].securityContext.appArmorProfile: Forbidden: cannot be set for a windows pod",
    ]
