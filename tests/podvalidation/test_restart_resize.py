"""Container restart rules and resize policies by Kubernetes minor: ContainerRestartRules (1.34
alpha, dropped; 1.35 beta, judged), RestartAllContainersOnContainerExits (1.36 beta), and
validateResizePolicy (judged from 1.33, InPlacePodVerticalScaling on), replayed at the minors where
upstream differs.

The checks are validateContainers, validateInitContainers, validateInitContainerRestartPolicy,
validateContainerRestartPolicy, validateResizePolicy and validateFieldAllowList of
pkg/apis/core/validation/validation.go (v1.33.7 to v1.37.2); the cases follow that file's
TestValidateContainers, TestValidateInitContainers and TestValidateResizePolicy, and the messages
are what a v1.37.2 kube-apiserver answered (tests/oracle, topics restart-rules, restart-all and
resize-policy).
"""

from __future__ import annotations

from typing import Any

import pytest
from support.minors import judge, pod

from webhook.admission.fields import FieldPath
from webhook.podvalidation.errors import too_long, too_many

RULE = {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}
NEEDS_POLICY = "Required value: must specify restartPolicy when restart rules are used"
NO_SIDECAR_RULES = "Forbidden: restartPolicyRules are not allowed for init containers with restart policy Always"


def bodies(spec: dict[str, Any], minor: int) -> list[str]:
    errs, _ = judge(spec, minor)
    return [text for _, _, text in errs]


# ---- the error constructors -------------------------------------------------------------------------


def test_too_many_and_too_long_say_what_apimachinery_says():
    """field.TooMany and field.TooLong of apimachinery v0.37.2 (the same from v0.34.4): the count is
    the bad value, `1 item` and `1 byte` are singular, TooLong omits the value."""
    path = FieldPath.of("spec", "x")
    assert str(too_many(path, 21, 20)) == "spec.x: Too many: 21: must have at most 20 items"
    assert str(too_many(path, 2, 1)) == "spec.x: Too many: 2: must have at most 1 item"
    assert str(too_long(path, 20, since_1_32=True)) == "spec.x: Too long: may not be more than 20 bytes"
    assert str(too_long(path, 1, since_1_32=True)) == "spec.x: Too long: may not be more than 1 byte"


# ---- app containers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "minor, expected",
    [
        (33, (["spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"], ["containers.0.restartPolicyRules"])),
        (34, ([], ["containers.0.restartPolicy", "containers.0.restartPolicyRules"])),
        (35, ([], [])),
        (37, ([], [])),
    ],
)
def test_an_app_containers_restart_policy_and_rules_by_minor(minor, expected):
    """TestValidateContainers ("valid restartPolicy and restartPolicyRules"): refused before the
    gate exists, dropped with it off (1.34), admitted from 1.35."""
    errs, dropped = judge(pod({"restartPolicy": "Never", "restartPolicyRules": [RULE]}), minor)
    assert ([text for _, _, text in errs], sorted(dropped)) == expected


@pytest.mark.parametrize("policy", ["Always", "Never", "OnFailure"])
@pytest.mark.parametrize("minor", [35, 36, 37])
def test_every_container_restart_policy_is_admitted_on_an_app_container(minor, policy):
    assert judge(pod({"restartPolicy": policy}), minor) == ([], [])


@pytest.mark.parametrize("minor", [35, 36, 37])
def test_rules_without_a_policy_need_one(minor):
    assert bodies(pod({"restartPolicyRules": [RULE]}), minor) == [f"spec.containers[0].restartPolicy: {NEEDS_POLICY}"]


@pytest.mark.parametrize(
    "minor, action",
    [(35, ['spec.containers[0].restartPolicyRules[0].action: Unsupported value: "RestartAllContainers": supported values: "Restart"']), (36, []), (37, [])],
)
def test_bad_rules_by_minor(minor, action):
    """TestValidateContainers errorCases for rules: an unknown policy, an action (RestartAll-
    ContainersOnContainerExits, on from 1.36, allows `RestartAllContainers`), an operator, and a
    rule without exitCodes."""
    rules = [{"action": "RestartAllContainers", "exitCodes": {"operator": "Equals"}}, {"action": "Restart"}]
    assert bodies(pod({"restartPolicy": "Sometimes", "restartPolicyRules": rules}), minor) == [
        'spec.containers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"',
        *action,
        'spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Equals": supported values: "In", "NotIn"',
        "spec.containers[0].restartPolicyRules[1].exitCodes: Required value: must be specified",
    ]


@pytest.mark.parametrize("minor, supported", [(35, '"Restart"'), (36, '"Restart", "RestartAllContainers"'), (37, '"Restart", "RestartAllContainers"')])
def test_the_supported_actions_listed_by_minor(minor, supported):
    """v1.35.4 lists `Restart` alone; v1.36.3 on list what is allowed."""
    spec = pod({"restartPolicy": "Never", "restartPolicyRules": [{**RULE, "action": "Stop"}]})
    assert bodies(spec, minor) == [f'spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Stop": supported values: {supported}']


@pytest.mark.parametrize(
    "minor, rules, codes",
    [
        (35, "Too long: may not be more than 20 bytes", "Too long: may not be more than 255 bytes"),
        (36, "Too many: 21: must have at most 20 items", "Too many: 256: must have at most 255 items"),
        (37, "Too many: 21: must have at most 20 items", "Too many: 256: must have at most 255 items"),
    ],
)
def test_too_many_rules_or_exit_codes_by_minor(minor, rules, codes):
    """field.TooLong in v1.35.4, field.TooMany from v1.36.3 (no gate)."""
    many = pod({"restartPolicy": "Never", "restartPolicyRules": [RULE] * 21})
    assert bodies(many, minor) == [f"spec.containers[0].restartPolicyRules: {rules}"]
    assert judge(pod({"restartPolicy": "Never", "restartPolicyRules": [RULE] * 20}), minor) == ([], [])
    long = pod({"restartPolicy": "Never", "restartPolicyRules": [{**RULE, "exitCodes": {"operator": "NotIn", "values": list(range(256))}}]})
    assert bodies(long, minor) == [f"spec.containers[0].restartPolicyRules[0].exitCodes.values: {codes}"]


# ---- init containers and sidecars ----------------------------------------------------------------


@pytest.mark.parametrize(
    "minor, expected",
    [
        (33, (['spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"'], ["initContainers.0.restartPolicyRules"])),
        (34, ([], ["initContainers.0.restartPolicy", "initContainers.0.restartPolicyRules"])),
        (35, ([], [])),
        (37, ([], [])),
    ],
)
def test_an_init_containers_restart_policy_and_rules_by_minor(minor, expected):
    """TestValidateInitContainers: `Never` with rules is refused (1.29 to 1.33), dropped (1.34),
    judged as an app container's and admitted (1.35 on)."""
    errs, dropped = judge(pod(inits=({"restartPolicy": "Never", "restartPolicyRules": [RULE]},)), minor)
    assert ([text for _, _, text in errs], sorted(dropped)) == expected


@pytest.mark.parametrize(
    "minor, expected",
    [(34, []), (35, [f"spec.initContainers[0].restartPolicy: {NEEDS_POLICY}"]), (37, [f"spec.initContainers[0].restartPolicy: {NEEDS_POLICY}"])],
)
def test_init_rules_without_a_policy(minor, expected):
    """validateInitContainerRestartPolicy is called without a policy from v1.35.4 (at 1.34 the
    rules are dropped first)."""
    assert bodies(pod(inits=({"restartPolicyRules": [RULE]},)), minor) == expected


@pytest.mark.parametrize(
    "minor, action, expected",
    [
        (34, "Restart", []),  # the rules are dropped, the sidecar kept
        (35, "Restart", [f"spec.initContainers[0].restartPolicyRules: {NO_SIDECAR_RULES}"]),
        (35, "RestartAllContainers", [f"spec.initContainers[0].restartPolicyRules: {NO_SIDECAR_RULES}"]),
        (36, "Restart", []),
        (36, "RestartAllContainers", []),
        (37, "RestartAllContainers", []),
        (37, "Stop", ['spec.initContainers[0].restartPolicyRules[0].action: Unsupported value: "Stop": supported values: "Restart", "RestartAllContainers"']),
    ],
)
def test_a_sidecars_rules_by_minor(minor, action, expected):
    """A sidecar may have rules once RestartAllContainersOnContainerExits is on (1.36), judged by
    validateContainerRestartPolicy; at 1.35 they are Forbidden."""
    spec = pod(inits=({"restartPolicy": "Always", "restartPolicyRules": [{**RULE, "action": action}]},))
    assert bodies(spec, minor) == expected


@pytest.mark.parametrize("minor", [35, 36, 37])
def test_an_init_container_policy_other_than_the_three(minor):
    assert bodies(pod(inits=({"restartPolicy": ""},)), minor) == [
        'spec.initContainers[0].restartPolicy: Unsupported value: "": supported values: "Always", "Never", "OnFailure"'
    ]


# ---- ephemeral containers ---------------------------------------------------------------------------


@pytest.mark.parametrize("minor, judged", [(34, False), (35, True), (37, True)])
def test_an_ephemeral_container_may_not_have_restart_rules(minor, judged):
    """validateFieldAllowList: RestartPolicyRules is not in allowedEphemeralContainerFields; with
    the gate off (1.34) the field is dropped first."""
    spec = {**pod(), "ephemeralContainers": [{"name": "debug", "image": "busybox:1", "restartPolicyRules": [RULE]}]}
    errs, dropped = judge(spec, minor)
    forbidden = "spec.ephemeralContainers[0].restartPolicyRules: Forbidden: cannot be set for an Ephemeral Container"
    assert (forbidden in [text for _, _, text in errs]) is judged
    assert dropped == ([] if judged else ["ephemeralContainers.0.restartPolicyRules"])


# ---- resizePolicy -------------------------------------------------------------------------------


@pytest.mark.parametrize("minor, dropped", [(32, ["containers.0.resizePolicy"]), (33, []), (37, [])])
def test_a_valid_resize_policy(minor, dropped):
    """TestValidateResizePolicy successCases; dropped while InPlacePodVerticalScaling is off."""
    policy = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}, {"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    assert judge(pod({"resizePolicy": policy}), minor) == ([], dropped)


@pytest.mark.parametrize("minor", [33, 35, 37])
def test_a_bad_resize_policy(minor):
    """TestValidateResizePolicy errorCases: an unknown resource and policy, a duplicate, an empty
    policy; each but the duplicate reported at the list."""
    policy = [{"resourceName": "gpu", "restartPolicy": "x"}, {"resourceName": "gpu"}]
    assert bodies(pod({"resizePolicy": policy}), minor) == [
        'spec.containers[0].resizePolicy: Unsupported value: "gpu": supported values: "cpu", "memory"',
        'spec.containers[0].resizePolicy: Unsupported value: "x": supported values: "NotRequired", "RestartContainer"',
        'spec.containers[0].resizePolicy[1]: Duplicate value: "gpu"',
        'spec.containers[0].resizePolicy: Unsupported value: "gpu": supported values: "cpu", "memory"',
        "spec.containers[0].resizePolicy: Required value",
    ]


@pytest.mark.parametrize(
    "minor, message",
    [
        (33, "must be 'NotRequired' when `restartPolicy` is 'Never'"),
        (35, "must be 'NotRequired' when `restartPolicy` is 'Never'"),
        (36, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"),
        (37, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"),
    ],
)
def test_a_resize_restart_in_a_pod_that_never_restarts(minor, message):
    """validateResizePolicy: the message names the pod's policy from v1.36.3."""
    spec = pod({"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]}, restartPolicy="Never")
    assert bodies(spec, minor) == [f'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": {message}']
    assert judge(pod({"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}, restartPolicy="Never"), minor) == ([], [])


@pytest.mark.parametrize("minor, refused", [(33, False), (35, False), (36, True), (37, True)])
def test_restart_container_in_a_plain_init_containers_resize_policy(minor, refused):
    """validateInitContainers from v1.36.3 (no gate): only a sidecar may restart on resize."""
    policy = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}, {"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    expected = [
        "spec.initContainers[0].resizePolicy[1].restartPolicy: Invalid value: \"RestartContainer\": must not be set to 'RestartContainer' for non-sidecar initContainers"
    ]
    assert bodies(pod(inits=({"resizePolicy": policy},)), minor) == (expected if refused else [])
    assert bodies(pod(inits=({"restartPolicy": "Always", "resizePolicy": policy},)), minor) == []
