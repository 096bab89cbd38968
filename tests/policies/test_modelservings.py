"""ModelServing rules on Kthena's gang example (reference kthena.md §1.4) and the recorded reviews."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

from webhook.admission.responses import review_response
from webhook.admission.review import make_request
from webhook.policies import Context, NoLookups, engine

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
ROLE_NAME = "role name must be a valid DNS-1035 label (lowercase alphanumeric characters or '-', must start with a letter): "
PERCENT = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
BOTH_ZERO = "maxUnavailable and maxSurge cannot both resolve to 0"


# ---- recorded requests ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["modelservings-create-gang-example-validating", "modelservings-update-replicas-1-to-2-validating", "modelservings-create-gang-example-mutating"]
)
def test_recorded_modelserving_requests_are_allowed(kit, name):
    out = engine.validate(kit.request(name), kit.ctx())
    assert out.matched and out.allowed and out.code == 200
    assert out.errors == [] and [w.text for w in out.warnings] == []


# ---- 1. generated names ---------------------------------------------------------------------------


def test_generated_name_too_long(kit):
    ms = kit.gang_ms()
    ms["metadata"]["name"] = "m" * 50  # + "-1-prefill-2-1" = 64 characters; "-1-decode-2-1" still fits
    out = kit.validate(ms)
    msg = f'Invalid value: "{"m" * 50}": invalid name: must be no more than 63 characters'
    assert kit.causes(out) == [("FieldValueInvalid", "metadata.name", msg)]
    assert out.code == 422


def test_generated_name_just_fits(kit):
    ms = kit.gang_ms()
    ms["metadata"]["name"] = "m" * 49
    assert kit.validate(ms).allowed


# ---- 2. role names / 3. images -------------------------------------------------------------------


def test_role_name_must_be_dns1035(kit):
    ms = kit.gang_ms()
    ms["spec"]["template"]["roles"][1]["name"] = "Decode"
    ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"] = {"prefill": 2}
    out = kit.validate(ms)
    assert kit.causes(out) == [
        ("FieldValueInvalid", "metadata.name", f'Invalid value: "sample": invalid name: {DNS1035}'),
        ("FieldValueInvalid", "spec.template.roles[1].name", f'Invalid value: "Decode": {ROLE_NAME}{DNS1035}'),
    ]


def test_images_blank_or_with_spaces(kit):
    ms = kit.gang_ms()
    roles = ms["spec"]["template"]["roles"]
    roles[0]["entryTemplate"]["spec"]["containers"][0]["image"] = "   "
    roles[1]["workerTemplate"]["spec"]["containers"][0]["image"] = "nginx latest"
    out = kit.validate(ms)
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.template.roles[0].entryTemplate.spec.containers[0].image",
            'Invalid value: "   ": invalid container image reference: image cannot be empty or whitespace only',
        ),
        (
            "FieldValueInvalid",
            "spec.template.roles[1].workerTemplate.spec.containers[0].image",
            'Invalid value: "nginx latest": invalid container image reference: image cannot contain spaces',
        ),
    ]


# ---- 4. replicas ---------------------------------------------------------------------------------


def test_negative_replicas(kit):
    ms = kit.gang_ms()
    ms["spec"]["replicas"] = -1
    ms["spec"]["template"]["roles"][1]["replicas"] = -2
    ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"] = {"prefill": 2}
    out = kit.validate(ms)
    # "sample--1-decode--2-1" is still a DNS-1035 label: inner hyphens are allowed
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: replicas must be a non-negative integer"),
        ("FieldValueInvalid", "spec.template.roles[1].replicas", "Invalid value: -2: role replicas must be a non-negative integer"),
    ]


def test_missing_replicas_is_required_and_no_roles(kit):
    ms = kit.gang_ms()
    del ms["spec"]["replicas"]
    ms["spec"]["template"]["roles"] = []
    del ms["spec"]["template"]["gangPolicy"]
    out = kit.validate(ms)
    assert kit.causes(out) == [
        ("FieldValueRequired", "spec.replicas", "Required value: replicas must be a non-negative integer"),
        ("FieldValueInvalid", "spec.template.roles", "Invalid value: []: roles must be specified"),
    ]


# ---- 5./6. rolling update configuration -------------------------------------------------------------


def test_group_rolling_config_forbidden_under_role_rolling_update(kit):
    ms = kit.gang_ms()
    ms["spec"]["rolloutStrategy"] = {"type": "RoleRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}}
    out = kit.validate(ms)
    assert kit.causes(out) == [
        (
            "FieldValueForbidden",
            "spec.rolloutStrategy.rollingUpdateConfiguration",
            "Forbidden: rollingUpdateConfiguration is only valid when rolloutStrategy.type is ServingGroupRollingUpdate",
        )
    ]


@pytest.mark.parametrize(
    "value, causes",
    [
        (1, []),
        ("100%", []),
        ("0%", [("FieldValueInvalid", "spec.rolloutStrategy.rollingUpdateConfiguration", f'Invalid value: "": {BOTH_ZERO}')]),
        (
            "150%",
            [
                (
                    "FieldValueInvalid",
                    "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
                    'Invalid value: "150%": must be a valid percent value (0-100)',
                )
            ],
        ),
        (
            "half",
            [
                ("FieldValueInvalid", "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable", f'Invalid value: "half": {PERCENT}'),
                (
                    "FieldValueInvalid",
                    "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
                    'Invalid value: "half": invalid maxUnavailable: invalid value for IntOrString: invalid type: string is not a percentage',
                ),
            ],
        ),
        (-1, [("FieldValueInvalid", "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable", "Invalid value: -1: must be a non-negative integer")]),
    ],
)
def test_group_max_unavailable(kit, value, causes):
    ms = kit.gang_ms()
    ms["spec"]["rolloutStrategy"] = {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": value}}
    assert kit.causes(kit.validate(ms)) == causes


def test_role_partition_only_under_role_rolling_update(kit):
    ms = kit.gang_ms()
    ms["spec"]["template"]["roles"][0]["partition"] = "200%"
    out = kit.validate(ms)
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.template.roles[0].partition", 'Invalid value: "200%": must be a valid percent value (0-100)'),
        ("FieldValueForbidden", "spec.template.roles[0].partition", "Forbidden: partition is only valid when rolloutStrategy.type is RoleRollingUpdate"),
    ]


def test_role_max_unavailable_bounds(kit):
    ms = kit.gang_ms()
    ms["spec"]["rolloutStrategy"] = {"type": "RoleRollingUpdate"}
    ms["spec"]["template"]["roles"][0]["maxUnavailable"] = 3
    ms["spec"]["template"]["roles"][1]["maxUnavailable"] = "10%"
    out = kit.validate(ms)
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.template.roles[0].maxUnavailable", "Invalid value: 3: maxUnavailable cannot be greater than replicas (2)"),
        ("FieldValueInvalid", "spec.template.roles[1]", f'Invalid value: "": {BOTH_ZERO}'),
    ]


def test_role_scaled_to_zero_without_gang_minimum_is_valid(kit):
    """Kthena #1749: the CRD-defaulted maxUnavailable: 1 must not reject replicas: 0."""
    ms = kit.gang_ms()
    ms["spec"]["rolloutStrategy"] = {"type": "RoleRollingUpdate"}
    ms["spec"]["template"]["roles"][1]["replicas"] = 0
    ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"] = {"prefill": 2}
    out = kit.validate(ms)
    assert out.allowed, out.errors


# ---- 7. gangPolicy ---------------------------------------------------------------------------------


def test_gang_policy_parity_messages(kit):
    ms = kit.gang_ms()
    ms["spec"]["template"]["gangPolicy"]["minRoleReplicas"] = {"prefill": 3, "decode": -1, "router": 1}
    out = kit.validate(ms)
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.template.gangPolicy.minRoleReplicas[decode]", "Invalid value: -1: minRoleReplicas for role decode must be non-negative"),
        (
            "FieldValueInvalid",
            "spec.template.gangPolicy.minRoleReplicas[prefill]",
            "Invalid value: 3: minRoleReplicas (3) for role prefill cannot exceed replicas (2)",
        ),
        ("FieldValueInvalid", "spec.template.gangPolicy.minRoleReplicas[router]", 'Invalid value: "router": role router does not exist in template.roles'),
        # our gang-floor rule says the same on the field a scale-down changes
        (
            "FieldValueInvalid",
            "spec.template.roles[0].replicas",
            "Invalid value: 2: role prefill asks for 2 replicas, below its gang minimum gangPolicy.minRoleReplicas[prefill] (3)",
        ),
    ]


# ---- 8. workerReplicas / 9. recovery x rollout ------------------------------------------------------


def test_worker_replicas(kit):
    ms = kit.gang_ms()
    ms["spec"]["template"]["roles"][0]["workerReplicas"] = -1
    del ms["spec"]["template"]["roles"][1]["workerTemplate"]
    out = kit.validate(ms)
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.template.roles[0].workerReplicas", "Invalid value: -1: workerReplicas must be a non-negative integer"),
        ("FieldValueRequired", "spec.template.roles[1].workerTemplate", "Required value: workerTemplate is required when workerReplicas is greater than 0"),
    ]


def test_recovery_policy_and_rollout_strategy(kit):
    ms = kit.gang_ms()
    ms["spec"]["recoveryPolicy"] = "ServingGroupRecreate"
    ms["spec"]["rolloutStrategy"] = {"type": "RoleRollingUpdate"}
    out = kit.validate(ms)
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.rolloutStrategy.type",
            'Invalid value: "RoleRollingUpdate": incompatible recoveryPolicy and rolloutStrategy.type after applying defaults: '
            "recoveryPolicy=ServingGroupRecreate, rolloutStrategy.type=RoleRollingUpdate; valid pairs: "
            "(ServingGroupRecreate,ServingGroupRollingUpdate) or (RoleRecreate,RoleRollingUpdate)",
        )
    ]
    ms["spec"]["recoveryPolicy"] = "None"
    assert kit.validate(ms).allowed


def test_all_errors_reported_at_once_with_kthena_style_message(kit):
    ms = kit.gang_ms()
    ms["spec"]["replicas"] = -1
    ms["spec"]["template"]["roles"][0]["workerReplicas"] = -1
    out = kit.validate(ms)
    message = review_response(make_request(ms), out)["response"]["status"]["message"]
    assert message.startswith('ModelServing.workload.serving.volcano.sh "sample" is invalid: [')
    assert "spec.replicas: Invalid value: -1: replicas must be a non-negative integer" in message
    assert "spec.template.roles[0].workerReplicas: Invalid value: -1: workerReplicas must be a non-negative integer" in message


# ---- immutability from oldObject -------------------------------------------------------------------


def test_min_role_replicas_immutable(kit):
    old = kit.gang_ms()
    new = copy.deepcopy(old)
    new["spec"]["template"]["gangPolicy"]["minRoleReplicas"]["decode"] = 2
    out = kit.validate(new, old=old)
    assert kit.causes(out) == [
        ("FieldValueInvalid", "spec.template.gangPolicy.minRoleReplicas", 'Invalid value: {"decode":2,"prefill":2}: minRoleReplicas is immutable')
    ]


def test_gang_policy_cannot_be_removed(kit):
    old = kit.gang_ms()
    new = copy.deepcopy(old)
    del new["spec"]["template"]["gangPolicy"]
    out = kit.validate(new, old=old)
    assert kit.causes(out) == [("FieldValueRequired", "spec.template.gangPolicy", "Required value: gangPolicy is required once set")]


def test_min_role_replicas_added_or_dropped_is_allowed(kit):
    """As the CEL transition rule: compared only when present in both objects."""
    with_gang = kit.gang_ms()
    without = copy.deepcopy(with_gang)
    without["spec"]["template"]["gangPolicy"] = {}
    assert kit.validate(with_gang, old=without).allowed
    assert kit.validate(without, old=with_gang).allowed


def test_recorded_update_keeps_gang_policy(kit):
    req = kit.request("modelservings-update-replicas-1-to-2-validating")
    assert req.old_object["spec"]["template"]["gangPolicy"] == req.object["spec"]["template"]["gangPolicy"]
    assert engine.validate(req, kit.ctx()).allowed


# ---- gang floor ------------------------------------------------------------------------------------


def test_role_scaled_below_gang_floor(kit):
    old = kit.gang_ms()
    new = copy.deepcopy(old)
    new["spec"]["template"]["roles"][0]["replicas"] = 1
    out = kit.validate(new, old=old)
    assert kit.causes(out) == [
        (
            "FieldValueInvalid",
            "spec.template.gangPolicy.minRoleReplicas[prefill]",
            "Invalid value: 2: minRoleReplicas (2) for role prefill cannot exceed replicas (1)",
        ),
        (
            "FieldValueInvalid",
            "spec.template.roles[0].replicas",
            "Invalid value: 1: role prefill asks for 1 replicas, below its gang minimum gangPolicy.minRoleReplicas[prefill] (2)",
        ),
    ]


def test_role_scaled_down_to_floor_is_allowed(kit):
    old = kit.gang_ms()
    new = copy.deepcopy(old)
    new["spec"]["template"]["roles"][1]["replicas"] = 1  # decode floor is 1
    assert kit.validate(new, old=old).allowed


# ---- reserved labels -------------------------------------------------------------------------------


def test_reserved_template_labels(kit):
    ms = kit.gang_ms()
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["metadata"] = {
        "labels": {
            "team": "llm",
            "modelserving.volcano.sh/role-id": "x",
            "modelserving.volcano.sh/entry": "false",
            "modelserving.volcano.sh/revision": "r",
            "modelserving.volcano.sh/role-template-hash": "h",
        }
    }
    ms["spec"]["template"]["roles"][1]["workerTemplate"]["metadata"] = {
        "labels": {"modelserving.volcano.sh/group-name": "g", "modelserving.volcano.sh/name": "n", "modelserving.volcano.sh/role": "r"}
    }
    out = kit.validate(ms)
    detail = (
        "Forbidden: the ModelServing controller sets this label on every pod it creates; a template value "
        "would replace it and detach the pod from its ServingGroup and role (Kthena issue #1582)"
    )
    entry = "spec.template.roles[0].entryTemplate.metadata.labels"
    worker = "spec.template.roles[1].workerTemplate.metadata.labels"
    assert kit.causes(out) == [
        ("FieldValueForbidden", f"{entry}[modelserving.volcano.sh/entry]", detail),
        ("FieldValueForbidden", f"{entry}[modelserving.volcano.sh/revision]", detail),
        ("FieldValueForbidden", f"{entry}[modelserving.volcano.sh/role-id]", detail),
        ("FieldValueForbidden", f"{entry}[modelserving.volcano.sh/role-template-hash]", detail),
        ("FieldValueForbidden", f"{worker}[modelserving.volcano.sh/group-name]", detail),
        ("FieldValueForbidden", f"{worker}[modelserving.volcano.sh/name]", detail),
        ("FieldValueForbidden", f"{worker}[modelserving.volcano.sh/role]", detail),
    ]


def test_labels_the_controller_never_sets_are_allowed_under_its_prefix(kit):
    """Kthena's router PD-disaggregation example labels its templates modelserving.volcano.sh/rolename."""
    ms = kit.gang_ms()
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["metadata"] = {"labels": {"modelserving.volcano.sh/rolename": "prefill"}}
    assert kit.validate(ms).allowed


def test_other_template_labels_are_fine(kit):
    ms = kit.gang_ms()
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["metadata"] = {"labels": {"team": "llm", "volcano.sh/queue": "q"}}
    assert kit.validate(ms).allowed


# ---- the scale subresource ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["modelservings-scale-update-kubectl-scale-to-3-validating", "modelservings-scale-update-by-hpa-controller-6-to-4-validating"])
def test_recorded_scale_allowed_with_the_modelserving(kit, name):
    out = engine.validate(kit.request(name), kit.ctx(kit.gang_ms()))
    assert out.matched and out.allowed and [w.text for w in out.warnings] == []


def test_scale_that_breaks_generated_names(kit):
    ms = kit.gang_ms()
    ms["metadata"]["name"] = "m" * 48  # stored with replicas 1: "-1-prefill-2-1" makes 62 characters
    req = kit.request("modelservings-scale-update-kubectl-scale-to-3-validating")
    scale = copy.deepcopy(req.object)
    scale["metadata"]["name"] = ms["metadata"]["name"]
    scale["spec"]["replicas"] = 1000  # "-1000-prefill-2-1": 65, "-1000-decode-2-1": 64
    out = engine.validate(replace(req, name=ms["metadata"]["name"], object=scale), kit.ctx(ms))
    cause = (
        "FieldValueInvalid",
        "spec.replicas",
        f'Invalid value: 1000: ModelServing {"m" * 48} would become invalid: metadata.name: Invalid value: "{"m" * 48}": '
        "invalid name: must be no more than 63 characters",
    )
    assert kit.causes(out) == [cause, cause]
    assert review_response(req, out)["response"]["status"]["details"]["kind"] == "Scale"
    scale["spec"]["replicas"] = 99  # "-99-prefill-2-1": 63 characters, still fine
    assert engine.validate(replace(req, name=ms["metadata"]["name"], object=scale), kit.ctx(ms)).allowed


def test_a_scale_to_zero_arrives_without_replicas_and_is_allowed(kit):
    """`kubectl scale --replicas=0`: autoscaling/v1 ScaleSpec drops a zero (omitempty), so the API
    server's review holds `spec: {}`; seen on kube-apiserver 1.28.7 (tests/e2e), refused until then."""
    req = kit.request("modelservings-scale-update-kubectl-scale-to-3-validating")
    scale = copy.deepcopy(req.object)
    scale["spec"].pop("replicas")
    out = engine.validate(replace(req, object=scale), kit.ctx(kit.gang_ms()))
    assert out.allowed and [w.text for w in out.warnings] == []


def test_scale_allows_with_warning_when_lookup_fails(kit):
    out = engine.validate(kit.request("modelservings-scale-update-kubectl-scale-to-3-validating"), Context(lookups=NoLookups()))
    assert out.allowed
    assert [w.text for w in out.warnings] == [
        "servinggate: scale to 3 not checked, ModelServing default/sample unreadable: no Kubernetes API access configured"
    ]


def test_scale_allows_with_warning_when_not_found(kit):
    out = engine.validate(kit.request("modelservings-scale-update-kubectl-scale-to-3-validating"), kit.ctx())
    assert out.allowed
    assert [w.text for w in out.warnings] == ["servinggate: scale to 3 not checked, ModelServing default/sample not found"]


# ---- never a crash on odd input ------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4) | st.sampled_from(["RoleRollingUpdate", "ServingGroupRecreate", "50%"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "replicas",
                    "roles",
                    "gangPolicy",
                    "minRoleReplicas",
                    "workerReplicas",
                    "workerTemplate",
                    "entryTemplate",
                    "spec",
                    "containers",
                    "image",
                    "metadata",
                    "labels",
                    "rolloutStrategy",
                    "type",
                    "rollingUpdateConfiguration",
                    "maxUnavailable",
                    "maxSurge",
                    "partition",
                    "template",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(spec=json_values, old_spec=json_values)
def test_odd_shapes_never_crash(kit, spec, old_spec):
    base = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "metadata": {"name": "x", "namespace": "d"}}
    new, old = {**base, "spec": spec}, {**base, "spec": old_spec}
    out = kit.validate(new, old=old)
    assert out.code in (200, 422)
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "x", "namespace": "d"}, "spec": {"replicas": 3}}
    req = make_request(scale, operation="UPDATE", old=scale, resource=("workload.serving.volcano.sh", "v1alpha1", "modelservings"), sub_resource="scale")
    assert engine.validate(req, kit.ctx(new)).code in (200, 422)
