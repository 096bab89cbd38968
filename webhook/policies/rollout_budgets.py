"""The rollout budgets of a ModelServing's rolling update, shared by the ServingGroup-level and the
per-role Kthena checks (`modelservings.kthena.rolling-update`, `...role-rolling-update`).

Port of the budget half of Kthena's `validateRollingUpdateConfiguration` and
`validateMaxUnavailableForRoles` (pkg/model-serving-controller/webhook/validator.go at
volcano-sh/kthena 2029995c, after kthena#1626, which added maxSurge).
"""

from __future__ import annotations

from typing import Any

from ..admission.fields import FieldError, FieldPath, invalid
from .common import scaled_int_or_percent


def budget_errors(config: dict[str, Any], replicas: int, path: FieldPath, cap_unavailable: bool) -> list[FieldError]:
    """The rollout budgets of one rolling-update configuration (the ModelServing's, or a role's
    inlined one) resolved against `replicas`: maxUnavailable (default 1, rounded down) and maxSurge
    (default 0, rounded up) must not both be 0 while `replicas` exceeds the partition (rounded up;
    an unreadable partition counts as 0). A budget that cannot be resolved is reported and the
    both-zero check skipped. `cap_unavailable` (roles only): maxUnavailable may not exceed the
    replicas, and a capped value leaves the default in place for the both-zero check."""
    errs: list[FieldError] = []
    budgets_valid = True
    unavailable, surge = 1, 0
    max_unavailable = config.get("maxUnavailable")
    if max_unavailable is not None:
        value, problem = scaled_int_or_percent(max_unavailable, replicas)
        mu_path = path.child("maxUnavailable")
        if problem or value is None:
            budgets_valid = False
            errs.append(invalid(mu_path, max_unavailable, f"invalid maxUnavailable: {problem}"))
        elif cap_unavailable and value > replicas:
            if replicas > 0:  # deviation from Kthena, issue #1749: see modelservings.check_role_rolling_update
                errs.append(invalid(mu_path, max_unavailable, f"maxUnavailable cannot be greater than replicas ({replicas})"))
        else:
            unavailable = value
    max_surge = config.get("maxSurge")
    if max_surge is not None:
        value, problem = scaled_int_or_percent(max_surge, replicas, round_up=True)
        if problem or value is None:
            budgets_valid = False
            errs.append(invalid(path.child("maxSurge"), max_surge, f"invalid maxSurge: {problem}"))
        else:
            surge = value
    partition = 0
    if config.get("partition") is not None:
        resolved, problem = scaled_int_or_percent(config["partition"], replicas, round_up=True)
        partition = resolved if resolved is not None and not problem else 0
    if budgets_valid and replicas > partition and unavailable == 0 and surge == 0:
        errs.append(invalid(path, "", "maxUnavailable and maxSurge cannot both resolve to 0"))
    return errs
