"""ModelServing rules (`workload.serving.volcano.sh/v1alpha1`, `modelservings`).

- `modelservings.kthena.*`: the nine check groups of Kthena's own validator
  (`pkg/model-serving-controller/webhook/validator.go` at volcano-sh/kthena 2029995c, main with
  maxSurge merged, kthena#1626), one rule each, in Kthena's order and with its paths and
  messages (reference kthena.md §2.2); never stricter than that validator: `generated-names`,
  `role-names`, `images`, `replicas`, `rolling-update`, `role-rolling-update`, `gang-policy`,
  `worker-replicas`, `recovery-policy`. One rule per group so that a finding names the check
  that made it and each can get its own enforcement action. Deviation: a role with
  `replicas: 0` is not rejected by its CRD-defaulted `maxUnavailable: 1` (Kthena issue #1749).
- `modelservings.gang-immutable`: the CRD's CEL transition rules, enforced from `oldObject`.
- `modelservings.gang-floor`: a role's replicas may not go below its gang minimum.
- `modelservings.reserved-labels`: templates may not set the labels the controller sets (Kthena #1582).
- `modelservings.pod-templates`: the pods the controller makes pass the API server's Pod validation
  (the work is in `modelserving_pods`; registered here, with its family).
- `modelservings.scale`: `modelservings/scale` (kubectl scale, HPA, KEDA) re-runs the rules
  registered with `replica_dependent=True` on the looked-up ModelServing with the new count.
"""

from __future__ import annotations

import re
from typing import Any

from ..admission.decision import Verdict, allowed
from ..admission.fields import FieldError, FieldPath, forbidden, invalid, required
from ..admission.review import Request
from ..kthena import LABEL_PREFIX as MS_LABEL_PREFIX
from ..kthena import MODELSERVING_GROUP
from ..shapes import as_dict
from ..shapes.kthena import ModelServing, modelserving
from .common import DNS1035_LABEL, dns1035_label_errors, int_or, int_or_percent_errors, is_int, lookup_modelserving
from .context import Context
from .kthena_pods import modelserving_name
from .modelserving_pods import judge_pod_templates
from .registry import REGISTRY, CelCheck, Target, Views
from .rollout_budgets import budget_errors

SPEC = FieldPath.of("spec")
TEMPLATE = SPEC.child("template")
ROLES = TEMPLATE.child("roles")
GANG = TEMPLATE.child("gangPolicy")
MIN_ROLE_REPLICAS = GANG.child("minRoleReplicas")
ROLLING = SPEC.child("rolloutStrategy", "rollingUpdateConfiguration")
REPLICAS = SPEC.child("replicas")

ROLE_ROLLING_UPDATE = "RoleRollingUpdate"
GROUP_ROLLING_UPDATE = "ServingGroupRollingUpdate"
GROUP_RECREATE = "ServingGroupRecreate"
ROLE_RECREATE = "RoleRecreate"

_SPACE = re.compile(r"\s")

MODELSERVINGS = Target(group=MODELSERVING_GROUP, resource="modelservings", versions=("v1alpha1",))


# The rules below are registered with `view=shape`: the engine shapes the object once per review
# (its `Views` memo) and hands every rule the same view (webhook/shapes/kthena.py).
Shape = ModelServing
shape = modelserving


# ---- Kthena parity: the nine check groups, in Kthena's order ------------------------------------


@REGISTRY.validates("modelservings.kthena.generated-names", MODELSERVINGS, replica_dependent=True, view=shape)
def check_generated_names(s: Shape) -> list[FieldError]:
    """1. `<ms>-<replicas>-<role>-<roleReplicas>-<workerReplicas>` must be a DNS-1035 label."""
    errs: list[FieldError] = []
    name = modelserving_name(s.ms)
    replicas = int_or(s.spec.get("replicas"), 1)
    for _, role in s.roles:
        role_name = role.get("name")
        generated = f"{name}-{replicas}-{role_name if type(role_name) is str else ''}-{int_or(role.get('replicas'), 1)}-{int_or(role.get('workerReplicas'), 0)}"
        if len(generated) <= 63 and DNS1035_LABEL.fullmatch(generated):
            continue
        problems = dns1035_label_errors(generated)
        errs.append(invalid(FieldPath.of("metadata", "name"), name, "invalid name: " + "; ".join(problems)))
    return errs


@REGISTRY.validates("modelservings.kthena.role-names", MODELSERVINGS, view=shape)
def check_role_names(s: Shape) -> list[FieldError]:
    """2. Role names are DNS-1035 labels (the CRD pattern alone allows upper case)."""
    errs: list[FieldError] = []
    for i, role in s.roles:
        name = role.get("name")
        if type(name) is str and len(name) <= 63 and DNS1035_LABEL.fullmatch(name):
            continue
        problems = dns1035_label_errors(name if isinstance(name, str) else "")
        errs.append(
            invalid(
                ROLES.index(i).child("name"),
                name,
                "role name must be a valid DNS-1035 label (lowercase alphanumeric characters or '-', must start with a letter): " + "; ".join(problems),
            )
        )
    return errs


@REGISTRY.validates("modelservings.kthena.images", MODELSERVINGS, view=shape)
def check_images(s: Shape) -> list[FieldError]:
    """3. Entry and worker container images may not be blank or contain whitespace."""
    errs: list[FieldError] = []
    for i, role in s.roles:
        for which in ("entryTemplate", "workerTemplate"):
            template = role.get(which)
            pod_spec = template.get("spec") if type(template) is dict else None
            containers = pod_spec.get("containers") if type(pod_spec) is dict else None
            if type(containers) is not list:
                continue
            for j, container in enumerate(containers):
                image = container.get("image") if type(container) is dict else None
                if type(image) is not str or not image or not _SPACE.search(image):
                    continue
                detail = "image cannot be empty or whitespace only" if not image.strip() else "image cannot contain spaces"
                path = ROLES.index(i).child(which, "spec", "containers").index(j).child("image")
                errs.append(invalid(path, image, "invalid container image reference: " + detail))
    return errs


@REGISTRY.validates("modelservings.kthena.replicas", MODELSERVINGS, view=shape)
def check_replicas(s: Shape) -> list[FieldError]:
    """4. Group and role replicas are non-negative integers; there is at least one role."""
    errs: list[FieldError] = []
    replicas = s.spec.get("replicas")
    if type(replicas) is not int or replicas < 0:
        errs.append(_not_non_negative(replicas, REPLICAS, "replicas must be a non-negative integer"))
    if not s.template.get("roles"):
        errs.append(invalid(ROLES, s.template.get("roles"), "roles must be specified"))
        return errs
    for i, role in s.roles:
        value = role.get("replicas")
        if type(value) is not int or value < 0:
            errs.append(_not_non_negative(value, ROLES.index(i).child("replicas"), "role replicas must be a non-negative integer"))
    return errs


def _not_non_negative(value: Any, path: FieldPath, detail: str) -> FieldError:
    return required(path, detail) if value is None else invalid(path, value, detail)


@REGISTRY.validates("modelservings.kthena.rolling-update", MODELSERVINGS, replica_dependent=True, view=shape)
def check_group_rolling_update(s: Shape) -> list[FieldError]:
    """5. The ServingGroup-level rollingUpdateConfiguration: maxUnavailable, maxSurge and partition
    are ints or percentages, and the two budgets may not both resolve to 0 while replicas exceed
    the partition (Kthena validator.go validateRollingUpdateConfiguration, after kthena#1626)."""
    strategy = s.strategy
    config = strategy.get("rollingUpdateConfiguration") if strategy else None
    if type(config) is not dict:
        return []
    if strategy.get("type") == ROLE_ROLLING_UPDATE:  # type: ignore[union-attr]
        return [forbidden(ROLLING, "rollingUpdateConfiguration is only valid when rolloutStrategy.type is ServingGroupRollingUpdate")]
    errs: list[FieldError] = []
    for name in ("maxUnavailable", "maxSurge"):
        errs += [invalid(ROLLING.child(name), config.get(name), d) for d in int_or_percent_errors(config.get(name))]
    if config.get("partition") is not None:
        partition = config["partition"]
        errs += [invalid(ROLLING.child("partition"), partition, d) for d in int_or_percent_errors(partition)]
    replicas = s.spec.get("replicas")
    if is_int(replicas):
        errs += budget_errors(config, replicas, ROLLING, cap_unavailable=False)
    return errs


@REGISTRY.validates("modelservings.kthena.role-rolling-update", MODELSERVINGS, view=shape)
def check_role_rolling_update(s: Shape) -> list[FieldError]:
    """6. Per-role partition, maxSurge and maxUnavailable: partition and maxSurge are allowed only
    under RoleRollingUpdate, and under it the role's budgets are resolved against the role's
    replicas (Kthena validator.go validateMaxUnavailableForRoles, after kthena#1626).

    Deviation from Kthena (issue #1749): a role scaled to 0 is not refused for its maxUnavailable
    exceeding its replicas, since the CRD defaults maxUnavailable to 1 on every role.
    """
    role_rolling = s.strategy is not None and s.strategy.get("type") == ROLE_ROLLING_UPDATE
    errs: list[FieldError] = []
    for i, role in s.roles:
        path = ROLES.index(i)
        for name in ("maxSurge", "partition"):
            value = role.get(name)
            if value is None:
                continue
            errs += [invalid(path.child(name), value, d) for d in int_or_percent_errors(value)]
            if not role_rolling:
                errs.append(forbidden(path.child(name), f"{name} is only valid when rolloutStrategy.type is RoleRollingUpdate"))
        if not role_rolling or all(role.get(k) is None for k in ("maxUnavailable", "maxSurge", "partition")):
            continue
        max_unavailable = role.get("maxUnavailable")
        errs += [invalid(path.child("maxUnavailable"), max_unavailable, d) for d in int_or_percent_errors(max_unavailable)]
        errs += budget_errors(role, int_or(role.get("replicas"), 1), path, cap_unavailable=True)
    return errs


@REGISTRY.validates("modelservings.kthena.gang-policy", MODELSERVINGS, view=shape)
def check_gang_policy(s: Shape) -> list[FieldError]:
    """7. Each minRoleReplicas key names a role, is non-negative and does not exceed the role's replicas."""
    mins = s.mins
    if not mins:
        return []
    roles = {r["name"]: r for _, r in s.roles if isinstance(r.get("name"), str)}
    errs: list[FieldError] = []
    for name in sorted(mins):  # Kthena walks a Go map; we keep a stable order
        minimum = mins[name]
        role = roles.get(name)
        if role is not None and type(minimum) is int:
            replicas = int_or(role.get("replicas"), 1)
            if 0 <= minimum <= replicas:
                continue
        path = MIN_ROLE_REPLICAS.key(name)
        if role is None:
            errs.append(invalid(path, name, f"role {name} does not exist in template.roles"))
            continue
        if not is_int(minimum):
            errs.append(invalid(path, minimum, "must be an integer"))
            continue
        if minimum > replicas:
            errs.append(invalid(path, minimum, f"minRoleReplicas ({minimum}) for role {name} cannot exceed replicas ({replicas})"))
        if minimum < 0:
            errs.append(invalid(path, minimum, f"minRoleReplicas for role {name} must be non-negative"))
    return errs


@REGISTRY.validates("modelservings.kthena.worker-replicas", MODELSERVINGS, view=shape)
def check_worker_replicas(s: Shape) -> list[FieldError]:
    """8. workerReplicas is non-negative; a positive count needs a workerTemplate."""
    errs: list[FieldError] = []
    for i, role in s.roles:
        workers = role.get("workerReplicas")
        if type(workers) is int and (workers == 0 or (workers > 0 and role.get("workerTemplate") is not None)):
            continue
        if workers is not None and (not is_int(workers) or workers < 0):
            errs.append(invalid(ROLES.index(i).child("workerReplicas"), workers, "workerReplicas must be a non-negative integer"))
        if is_int(workers) and workers > 0 and role.get("workerTemplate") is None:
            errs.append(required(ROLES.index(i).child("workerTemplate"), "workerTemplate is required when workerReplicas is greater than 0"))
    return errs


@REGISTRY.validates("modelservings.kthena.recovery-policy", MODELSERVINGS, view=shape)
def check_recovery_and_rollout(s: Shape) -> list[FieldError]:
    """9. recoveryPolicy ServingGroupRecreate cannot go with rolloutStrategy.type RoleRollingUpdate."""
    recovery = s.spec.get("recoveryPolicy") or ROLE_RECREATE
    strategy = s.strategy
    rollout = (strategy.get("type") if strategy else None) or GROUP_ROLLING_UPDATE
    if not (recovery == GROUP_RECREATE and rollout == ROLE_ROLLING_UPDATE):
        return []
    detail = (
        f"incompatible recoveryPolicy and rolloutStrategy.type after applying defaults: recoveryPolicy={recovery}, "
        f"rolloutStrategy.type={rollout}; valid pairs: ({GROUP_RECREATE},{GROUP_ROLLING_UPDATE}) or ({ROLE_RECREATE},{ROLE_ROLLING_UPDATE})"
    )
    if strategy is None:
        return [invalid(SPEC.child("recoveryPolicy"), recovery, detail)]
    return [invalid(SPEC.child("rolloutStrategy", "type"), rollout, detail)]


# ---- beyond Kthena ------------------------------------------------------------------------------


# The CEL fallback (see CelCheck) of the two gang rules below, on the object as the API server sees it.
_NEW, _OLD = "object.spec.template", "oldObject.spec.template"
_MINS = f"{_NEW}.gangPolicy.minRoleReplicas"
GANG_REQUIRED = "gangPolicy is required once set"
MINS_IMMUTABLE = "minRoleReplicas is immutable"
GANG_IMMUTABLE_CEL = (
    CelCheck(f"!has({_OLD}.gangPolicy) || has({_NEW}.gangPolicy)", message=GANG_REQUIRED),
    CelCheck(
        f"!has({_OLD}.gangPolicy) || !has({_OLD}.gangPolicy.minRoleReplicas) || !has({_NEW}.gangPolicy) || "
        f"!has({_MINS}) || {_MINS} == {_OLD}.gangPolicy.minRoleReplicas",
        message=MINS_IMMUTABLE,
    ),
)
_BELOW_FLOOR = f"has(r.replicas) && r.name in {_MINS} && r.replicas >= 0 && r.replicas < {_MINS}[r.name]"
GANG_FLOOR_CEL = (
    CelCheck(
        f"!has({_NEW}.gangPolicy) || !has({_MINS}) || !{_NEW}.roles.exists(r, {_BELOW_FLOOR})",
        # The first role below its floor (the rule names each one).
        message_expression=(
            f"{_NEW}.roles.filter(r, {_BELOW_FLOOR}).map(r, 'role ' + r.name + ' asks for ' + string(r.replicas) + "
            f"' replicas, below its gang minimum gangPolicy.minRoleReplicas[' + r.name + '] (' + string({_MINS}[r.name]) + ')')[0]"
        ),
    ),
)


@REGISTRY.validates_update("modelservings.gang-immutable", MODELSERVINGS, cel=GANG_IMMUTABLE_CEL, view=shape)
def check_gang_immutable(new: Shape, old: Shape) -> list[FieldError]:
    """The CRD's CEL rules: gangPolicy cannot be removed; minRoleReplicas cannot change once set."""
    new_template = new.template
    old_template = old.template
    if "gangPolicy" in old_template and old_template["gangPolicy"] is not None:
        if new_template.get("gangPolicy") is None:
            return [required(GANG, GANG_REQUIRED)]
    old_mins = as_dict(old_template.get("gangPolicy")).get("minRoleReplicas")
    new_mins = as_dict(new_template.get("gangPolicy")).get("minRoleReplicas")
    if old_mins is not None and new_mins is not None and old_mins != new_mins:
        return [invalid(MIN_ROLE_REPLICAS, new_mins, MINS_IMMUTABLE)]
    return []


@REGISTRY.validates("modelservings.gang-floor", MODELSERVINGS, cel=GANG_FLOOR_CEL, view=shape)
def check_gang_floor(s: Shape) -> list[FieldError]:
    """A role's replicas may not be set below its gangPolicy.minRoleReplicas."""
    mins = s.mins
    errs: list[FieldError] = []
    if not mins:
        return errs
    for i, role in s.roles:
        name = role.get("name")
        floor = mins.get(name) if isinstance(name, str) else None
        replicas = role.get("replicas")
        if is_int(floor) and is_int(replicas) and 0 <= replicas < floor:
            errs.append(
                invalid(
                    ROLES.index(i).child("replicas"),
                    replicas,
                    f"role {name} asks for {replicas} replicas, below its gang minimum gangPolicy.minRoleReplicas[{name}] ({floor})",
                )
            )
    return errs


# The labels Kthena's controller sets on every pod it creates (kthena.md 3.2), then merges the
# template's over: other keys under the prefix (the router example's `rolename`) are left alone.
CONTROLLER_LABELS = tuple(MS_LABEL_PREFIX + k for k in ("name", "group-name", "role", "role-id", "entry", "revision", "role-template-hash"))
RESERVED = (
    "the ModelServing controller sets this label on every pod it creates; a template value "
    "would replace it and detach the pod from its ServingGroup and role (Kthena issue #1582)"
)


@REGISTRY.validates("modelservings.reserved-labels", MODELSERVINGS, view=shape)
def check_reserved_labels(s: Shape) -> list[FieldError]:
    """Entry/worker template labels may not set a key the ModelServing controller sets."""
    errs: list[FieldError] = []
    for i, role in s.roles:
        for which in ("entryTemplate", "workerTemplate"):
            template = role.get(which)
            meta = template.get("metadata") if type(template) is dict else None
            labels = meta.get("labels") if type(meta) is dict else None
            if type(labels) is dict:
                errs += [forbidden(ROLES.index(i).child(which, "metadata", "labels").key(k), RESERVED) for k in sorted(labels) if k in CONTROLLER_LABELS]
    return errs


@REGISTRY.validates_request("modelservings.pod-templates", MODELSERVINGS)
def check_pod_templates(req: Request, ctx: Context) -> list[FieldError] | Verdict:
    """Each role's entry pod and first worker pod, as the controller builds them, pass the Pod
    validation of the cluster's Kubernetes minor (1.28 to 1.37); what that minor drops is warned of."""
    return judge_pod_templates(req, ctx)


# ---- the scale subresource ----------------------------------------------------------------------


def check_scale(scale: Request, ms: dict[str, Any], replicas: int, ctx: Context) -> list[str]:
    """The problems the ModelServing would have with `replicas` groups: the rules registered as
    replica-dependent, judged on a copy with the new count (the update the scale amounts to)."""
    spec = ms.get("spec")
    scaled = {**ms, "spec": {**(spec if type(spec) is dict else {}), "replicas": replicas}}
    views = Views.instead(scale, scaled, ms)
    problems: list[str] = []
    for rule in REGISTRY.match("validate", MODELSERVING_GROUP, "modelservings", "", "UPDATE"):
        if rule.replica_dependent:
            problems += [str(e) for e in rule.judge(scale, ctx, views).errors]
    return problems


@REGISTRY.validates_request("modelservings.scale", MODELSERVINGS.sub("scale", "UPDATE"))
def validate_scale(req: Request, ctx: Context) -> Verdict:
    """A scale to N re-runs the replica-dependent rules on the looked-up ModelServing with N groups."""
    scale = req.object or {}
    # autoscaling/v1 ScaleSpec.replicas is `json:"replicas,omitempty"`: the API server sends a scale
    # to 0 (`kubectl scale --replicas=0`) with no replicas at all, so absent means 0, never "required".
    replicas = as_dict(scale.get("spec")).get("replicas", 0)
    path = REPLICAS
    if not is_int(replicas):
        return Verdict(errors=[invalid(path, replicas, "replicas must be a non-negative integer")])
    name = req.name or str(as_dict(scale.get("metadata")).get("name") or "")
    ms, failure = lookup_modelserving(ctx, req.namespace, name)
    if failure is not None:
        return allowed(f"servinggate: scale to {replicas} not checked, ModelServing {req.namespace}/{name} unreadable: {failure}")
    if ms is None:
        return allowed(f"servinggate: scale to {replicas} not checked, ModelServing {req.namespace}/{name} not found")
    problems = check_scale(req, ms, replicas, ctx)
    return Verdict(errors=[invalid(path, replicas, f"ModelServing {name} would become invalid: {p}") for p in problems])
