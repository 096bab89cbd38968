"""Parity with Kthena's own validator tests for the rollout rules.

Every row below is a case of `pkg/model-serving-controller/webhook/validator_test.go` at
volcano-sh/kthena 2029995c (`refs/pull/1626/merge`: maxSurge merged onto main of 2026-08-20),
named as Kthena names it and checked against the one function its Go test calls:
`TestValidateRollingUpdateConfiguration` -> `check_group_rolling_update` (errors compared in full:
kind, path, value, detail), `TestValidateMaxUnavailableForRoles` -> `check_role_rolling_update`
(Kthena only asserts empty / not empty; we also pin the path and message its validator gives).
The ModelServings are written as the JSON the Go structs serialize to.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhook.admission.fields import OMIT
from webhook.policies.modelservings import check_group_rolling_update, check_role_rolling_update, shape

ROLLING = "spec.rolloutStrategy.rollingUpdateConfiguration"
PERCENT = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
BOTH_ZERO = "maxUnavailable and maxSurge cannot both resolve to 0"
PREDICTOR = {"roles": [{"name": "predictor", "replicas": 1, "entryTemplate": {"metadata": {}}, "workerReplicas": 0}]}


def group_ms(config: dict[str, Any], rollout_type: str | None = None, template: dict[str, Any] | None = None) -> dict[str, Any]:
    strategy: dict[str, Any] = {"rollingUpdateConfiguration": config}
    if rollout_type:
        strategy["type"] = rollout_type
    return {"spec": {"replicas": 3, "rolloutStrategy": strategy, "template": template or {}}}


def found(errors) -> list[tuple[str, str, Any, str]]:
    """(kind, path, value, detail) per error; a Forbidden error has no value (None here)."""
    return [(e.kind.removeprefix("FieldValue").upper(), str(e.path), None if e.value is OMIT else e.value, e.detail) for e in errors]


# TestValidateRollingUpdateConfiguration (replicas := 3 in every row)
GROUP_ROWS = [
    ("normal rolling update configuration", group_ms({"maxUnavailable": 1}, "ServingGroupRollingUpdate"), []),
    (
        "rejects configuration for role rolling update",
        group_ms({"maxUnavailable": 1}, "RoleRollingUpdate"),
        [("FORBIDDEN", ROLLING, None, "rollingUpdateConfiguration is only valid when rolloutStrategy.type is ServingGroupRollingUpdate")],
    ),
    (
        "invalid maxUnavailable format",
        group_ms({"maxUnavailable": "invalid"}),
        [
            ("INVALID", ROLLING + ".maxUnavailable", "invalid", PERCENT),
            (
                "INVALID",
                ROLLING + ".maxUnavailable",
                "invalid",
                "invalid maxUnavailable: invalid value for IntOrString: invalid type: string is not a percentage",
            ),
        ],
    ),
    ("both maxUnavailable and maxSurge are zero", group_ms({"maxUnavailable": 0}), [("INVALID", ROLLING, "", BOTH_ZERO)]),
    ("allows zero maxUnavailable with positive maxSurge", group_ms({"maxUnavailable": 0, "maxSurge": "25%"}, "ServingGroupRollingUpdate"), []),
    ("maxUnavailable greater than replicas is allowed for scale down", group_ms({"maxUnavailable": 4}), []),
    ("valid partition - within range", group_ms({"maxUnavailable": 1, "partition": 1}), []),
    (
        "invalid partition - negative value",
        group_ms({"maxUnavailable": 1, "partition": -1}),
        [("INVALID", ROLLING + ".partition", -1, "must be a non-negative integer")],
    ),
    ("valid partition - equal to replicas", group_ms({"maxUnavailable": 1, "partition": 3}, template=PREDICTOR), []),
    ("valid partition - greater than replicas", group_ms({"maxUnavailable": 1, "partition": 5}, template=PREDICTOR), []),
    ("valid partition - zero value", group_ms({"maxUnavailable": 1, "partition": 0}), []),
    ("valid partition - percentage value", group_ms({"maxUnavailable": 1, "partition": "50%"}), []),
    (
        "invalid partition - percentage over 100",
        group_ms({"maxUnavailable": 1, "partition": "110%"}),
        [("INVALID", ROLLING + ".partition", "110%", "must be a valid percent value (0-100)")],
    ),
]


@pytest.mark.parametrize("ms, want", [pytest.param(ms, want, id=name) for name, ms, want in GROUP_ROWS])
def test_validate_rolling_update_configuration(ms, want):
    assert found(check_group_rolling_update(shape(ms))) == want


def role_ms(rollout_type: str, **role: Any) -> dict[str, Any]:
    return {"spec": {"rolloutStrategy": {"type": rollout_type}, "template": {"roles": [{"name": "decode", **role}]}}}


ROLE = "spec.template.roles[0]"
SURGE_FORBIDDEN = "maxSurge is only valid when rolloutStrategy.type is RoleRollingUpdate"

# TestValidateMaxUnavailableForRoles
ROLE_ROWS = [
    ("valid with role rolling update", role_ms("RoleRollingUpdate", replicas=4, maxUnavailable=2), []),
    ("rejects zero maxUnavailable without maxSurge", role_ms("RoleRollingUpdate", replicas=4, maxUnavailable="0%"), [("INVALID", ROLE, "", BOTH_ZERO)]),
    ("allows CRD default maxUnavailable with serving group rolling update", role_ms("ServingGroupRollingUpdate", replicas=4, maxUnavailable=1), []),
    (
        "requires role rolling update for partition",
        role_ms("ServingGroupRollingUpdate", replicas=4, partition=1),
        [("FORBIDDEN", ROLE + ".partition", None, "partition is only valid when rolloutStrategy.type is RoleRollingUpdate")],
    ),
    ("allows role maxSurge", role_ms("RoleRollingUpdate", replicas=4, maxUnavailable=1, maxSurge=1), []),
    ("allows zero maxUnavailable with positive maxSurge", role_ms("RoleRollingUpdate", replicas=4, maxUnavailable=0, maxSurge="25%"), []),
    (
        "rejects role maxSurge for serving group rolling update",
        role_ms("ServingGroupRollingUpdate", replicas=4, maxSurge=1),
        [("FORBIDDEN", ROLE + ".maxSurge", None, SURGE_FORBIDDEN)],
    ),
    (
        "rejects maxUnavailable greater than role replicas",
        role_ms("RoleRollingUpdate", replicas=3, maxUnavailable=4),
        [("INVALID", ROLE + ".maxUnavailable", 4, "maxUnavailable cannot be greater than replicas (3)")],
    ),
    ("allows maxUnavailable equal to role replicas", role_ms("RoleRollingUpdate", replicas=3, maxUnavailable=3), []),
]


@pytest.mark.parametrize("ms, want", [pytest.param(ms, want, id=name) for name, ms, want in ROLE_ROWS])
def test_validate_max_unavailable_for_roles(ms, want):
    assert found(check_role_rolling_update(shape(ms))) == want


# ---- beyond Kthena's rows: the same validator's branches its tests leave out -----------------------


@pytest.mark.parametrize(
    "config, want",
    [
        # maxSurge rounds up: 1% of 3 replicas is 1, so a zero maxUnavailable is fine ...
        ({"maxUnavailable": 0, "maxSurge": "1%"}, []),
        # ... while maxUnavailable rounds down: 33% of 3 is 0, and a 0% surge is 0.
        ({"maxUnavailable": "33%", "maxSurge": "0%"}, [("INVALID", ROLLING, "", BOTH_ZERO)]),
        # both budgets zero, but every replica is behind the partition (3 >= 3): nothing to roll.
        ({"maxUnavailable": 0, "partition": 3}, []),
        # a partition of 50% of 3 rounds up to 2 < 3: still checked.
        ({"maxUnavailable": 0, "partition": "50%"}, [("INVALID", ROLLING, "", BOTH_ZERO)]),
        # an unresolvable maxSurge is reported once per check and the both-zero check skipped.
        (
            {"maxUnavailable": 0, "maxSurge": "x"},
            [
                ("INVALID", ROLLING + ".maxSurge", "x", PERCENT),
                ("INVALID", ROLLING + ".maxSurge", "x", "invalid maxSurge: invalid value for IntOrString: invalid type: string is not a percentage"),
            ],
        ),
        ({"maxSurge": -1}, [("INVALID", ROLLING + ".maxSurge", -1, "must be a non-negative integer")]),
        ({"maxSurge": "101%"}, [("INVALID", ROLLING + ".maxSurge", "101%", "must be a valid percent value (0-100)")]),
    ],
)
def test_group_budgets(config, want):
    assert found(check_group_rolling_update(shape(group_ms(config)))) == want


def test_group_without_replicas_skips_the_budgets():
    ms = group_ms({"maxUnavailable": 0})
    del ms["spec"]["replicas"]
    assert check_group_rolling_update(shape(ms)) == []


@pytest.mark.parametrize(
    "role, want",
    [
        ({"replicas": 4, "maxUnavailable": 0, "maxSurge": 0}, [("INVALID", ROLE, "", BOTH_ZERO)]),
        ({"replicas": 4, "maxUnavailable": 0, "partition": 4}, []),
        ({"replicas": 4, "maxUnavailable": 0, "partition": 3}, [("INVALID", ROLE, "", BOTH_ZERO)]),
        # a capped maxUnavailable keeps the default 1 for the both-zero check.
        ({"replicas": 2, "maxUnavailable": 3, "maxSurge": 0}, [("INVALID", ROLE + ".maxUnavailable", 3, "maxUnavailable cannot be greater than replicas (2)")]),
        # role replicas default to 1.
        ({"maxUnavailable": 0}, [("INVALID", ROLE, "", BOTH_ZERO)]),
        # Kthena #1749 deviation: the defaulted maxUnavailable 1 of a role scaled to 0 is not refused.
        ({"replicas": 0, "maxUnavailable": 1}, []),
    ],
)
def test_role_budgets(role, want):
    assert found(check_role_rolling_update(shape(role_ms("RoleRollingUpdate", **role)))) == want


def test_role_max_surge_is_checked_as_int_or_percent_under_any_rollout():
    ms = role_ms("ServingGroupRollingUpdate", replicas=2, maxSurge="many")
    assert found(check_role_rolling_update(shape(ms))) == [
        ("INVALID", ROLE + ".maxSurge", "many", PERCENT),
        ("FORBIDDEN", ROLE + ".maxSurge", None, SURGE_FORBIDDEN),
    ]
