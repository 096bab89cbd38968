"""Kthena's autoscaling objects: AutoscalingPolicy (current API) and AutoscalingPolicyBinding (v0.4).

- `autoscalingpolicies.bounds`: Kthena's AutoscalingPolicy validator (metrics, exactly one
  target, targetRef, behavior windows; reference kthena.md §2.4) plus min <= max per target;
- `autoscalingpolicies.role-floor`: a disaggregated target's roles exist in the target
  ModelServing and their minReplicas respect its gangPolicy.minRoleReplicas (looked up);
- `autoscalingpolicybindings.bounds`: Kthena v0.4's binding validator (§2.5) plus min <= max;
- `autoscalingpolicybindings.references`: the bound policy exists; a role target exists and
  respects the gang floor (looked up).

A target that cannot be read is allowed with a warning: the webhook must not block autoscaler
writes because the API server was slow to answer a lookup.
"""

from __future__ import annotations

from typing import Any

from ..admission.decision import Verdict
from ..admission.fields import FieldError, FieldPath, invalid, required
from ..admission.review import Request
from ..kthena import AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, MODELSERVING_GROUP, MODELSERVING_KIND
from ..quantity import parse_quantity
from ..shapes import as_dict, as_list, as_object, objects
from ..shapes.kthena import DISAGGREGATED, HETEROGENEOUS, HOMOGENEOUS, autoscaling_targets, modelserving
from .common import is_int, lookup_modelserving, parse_duration
from .context import Context, LookupFailed
from .registry import REGISTRY, CelCheck, Target

POLICIES = Target(group=MODELSERVING_GROUP, resource="autoscalingpolicies", versions=("v1alpha1",))
BINDINGS = Target(group=MODELSERVING_GROUP, resource="autoscalingpolicybindings", versions=("v1alpha1",))
SPEC = FieldPath.of("spec")
MIN_LE_MAX = "minReplicas must be <= maxReplicas"


# ---- the CEL fallback (see CelCheck) of min <= max, where the rules below compare them -----------


def _cel_min_max(bounds: str) -> str:
    return f"(!has({bounds}.minReplicas) || !has({bounds}.maxReplicas) || {bounds}.minReplicas <= {bounds}.maxReplicas)"


_S = "object.spec"
_HOMO = f"(!has({_S}.homogeneousTarget) || {_cel_min_max(_S + '.homogeneousTarget')})"
_HETERO = f"(!has({_S}.heterogeneousTarget) || !has({_S}.heterogeneousTarget.params) || {_S}.heterogeneousTarget.params.all(p, {_cel_min_max('p')}))"
_DISAGGREGATED = (
    f"(!has({_S}.disaggregatedTarget) || !has({_S}.disaggregatedTarget.roles) || "
    f"{_S}.disaggregatedTarget.roles.all(n, {_cel_min_max(_S + '.disaggregatedTarget.roles[n]')}))"
)
# A policy is judged per target only when exactly one target is set (else: "exactly one of ...").
_ONE_TARGET = f"[has({_S}.homogeneousTarget), has({_S}.heterogeneousTarget), has({_S}.disaggregatedTarget)].filter(t, t).size() == 1"
POLICY_MIN_MAX_CEL = (CelCheck(f"!({_ONE_TARGET}) || ({_HOMO} && {_HETERO} && {_DISAGGREGATED})", message=MIN_LE_MAX, detail=MIN_LE_MAX),)
BINDING_MIN_MAX_CEL = (CelCheck(f"{_HOMO} && {_HETERO}", message=MIN_LE_MAX, detail=MIN_LE_MAX),)


def _min_max(target: dict[str, Any], path: FieldPath) -> list[FieldError]:
    low, high = target.get("minReplicas"), target.get("maxReplicas")
    if is_int(low) and is_int(high) and low > high:
        return [invalid(path.child("minReplicas"), low, MIN_LE_MAX)]
    return []


# ---- role targets against the target ModelServing's gang minimum --------------------------------


def _role_bounds(ctx: Context, namespace: str, ms_name: str, roles: list[tuple[FieldPath, str, FieldPath, Any]]) -> tuple[list[FieldError], list[str]]:
    """Each (role path, role, minReplicas path, minReplicas) must name a role of the ModelServing and respect its gang floor."""
    if not ms_name or not roles:
        return [], []
    ms, failure = lookup_modelserving(ctx, namespace, ms_name)
    if failure is not None:
        return [], [f"servinggate: role bounds not checked, ModelServing {namespace}/{ms_name} unreadable: {failure}"]
    if ms is None:
        return [], [f"servinggate: role bounds not checked, ModelServing {namespace}/{ms_name} does not exist yet"]
    view = modelserving(ms)
    by_name, floors = view.role_index(), view.mins
    errs: list[FieldError] = []
    for path, role, min_path, minimum in roles:
        if role not in by_name:
            known = ", ".join(sorted(by_name)) or "none"
            errs.append(invalid(path, role, f"role {role} does not exist in ModelServing {ms_name} (roles: {known})"))
            continue
        floor = floors.get(role)
        if is_int(floor) and is_int(minimum) and minimum < floor:
            errs.append(
                invalid(
                    min_path,
                    minimum,
                    f"must not be below minRoleReplicas ({floor}) of role {role} in ModelServing {ms_name}: the ModelServing would refuse that scale-down",
                )
            )
    return errs, []


# ---- AutoscalingPolicy (Kthena >= v1.0) ---------------------------------------------------------


def _metric_errors(metrics: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[Any] = set()
    for i, metric in enumerate(as_list(metrics)):
        metric = as_dict(metric)
        value = parse_quantity(metric.get("targetValue"))
        if value is None or value <= 0 or not value.is_finite():
            errs.append(
                invalid(path.index(i).child("targetValue"), metric.get("targetValue"), "metric target value must be greater than 0 and not equal to infinity")
            )
        name = metric.get("name")
        if not isinstance(name, str):  # the CRD's schema makes it a string; never hash anything else
            if name is not None:
                errs.append(invalid(path.index(i).child("name"), name, "metric name must be a string"))
            continue
        if name in seen:
            errs.append(invalid(path.index(i).child("name"), name, f"duplicate metric name {name} is not allowed"))
        seen.add(name)
    return errs


def _target_ref_errors(ref: Any, path: FieldPath) -> list[FieldError]:
    ref = as_dict(ref)
    errs: list[FieldError] = []
    kind = ref.get("kind") or ""
    if kind != MODELSERVING_KIND:
        if kind:
            errs.append(invalid(path.child("kind"), kind, f"targetRef.kind must be ModelServing, but got {kind}"))
    if not ref.get("name"):
        errs.append(invalid(path.child("name"), ref.get("name") or "", "targetRef.name must be set, but got empty"))
    return errs


_BEHAVIOR_LIMIT = 30 * 60


def _duration_errors(value: Any, path: FieldPath, detail: str) -> list[FieldError]:
    if value is None:
        return []
    seconds = parse_duration(value)
    if seconds is None or seconds < 0 or seconds > _BEHAVIOR_LIMIT:
        return [invalid(path, value, detail)]
    return []


def _behavior_errors(behavior: Any) -> list[FieldError]:
    base = SPEC.child("behavior")
    down, up = as_dict(as_dict(behavior).get("scaleDown")), as_dict(as_dict(behavior).get("scaleUp"))
    stable, panic = as_dict(up.get("stablePolicy")), as_dict(up.get("panicPolicy"))
    p_down, p_stable, p_panic = base.child("scaleDown"), base.child("scaleUp", "stablePolicy"), base.child("scaleUp", "panicPolicy")
    errs: list[FieldError] = []
    errs += _duration_errors(down.get("period"), p_down.child("period"), "stable policy period must be between 0 and 30 minutes")
    errs += _duration_errors(
        down.get("stabilizationWindow"), p_down.child("stabilizationWindow"), "stable policy stabilization window must be between 0 and 30 minutes"
    )
    errs += _duration_errors(stable.get("period"), p_stable.child("period"), "stable policy period must be between 0 and 30 minutes")
    errs += _duration_errors(
        stable.get("stabilizationWindow"), p_stable.child("stabilizationWindow"), "stable policy stabilization window must be between 0 and 30 minutes"
    )
    errs += _duration_errors(panic.get("period"), p_panic.child("period"), "panic policy period must be between 0 and 30 minutes")
    errs += _duration_errors(panic.get("panicModeHold"), p_panic.child("panicModeHold"), "panic policy panic mode hold must be between 0 and 30 minutes")
    return errs


def _metric_names(metrics: Any) -> set[str]:
    return {name for _, m in objects(metrics) if isinstance(name := m.get("name"), str)}


def _disaggregated_errors(target: dict[str, Any], spec_metrics: Any) -> list[FieldError]:
    base = SPEC.child("disaggregatedTarget")
    roles = as_dict(target.get("roles"))
    errs: list[FieldError] = []
    for name in sorted(roles, key=str):
        param = as_dict(roles[name])
        path = base.child("roles").key(str(name))
        if not name:
            errs.append(invalid(path, name, "role name must refer to a ModelServing.spec.template.roles[].name and must not be empty"))
        errs += _min_max(param, path)
        low, high = param.get("minReplicas"), param.get("maxReplicas")
        fixed = is_int(low) and low == high and low > 0
        errs += _metric_errors(param.get("metrics"), path.child("metrics"))
        if fixed:
            continue
        effective = param.get("metrics") or spec_metrics
        if not as_list(effective):
            errs.append(required(path.child("metrics"), "metrics must be set on every non-fixed role when spec.metrics is empty"))
            continue
        sources = param.get("metricSources")
        if not sources:
            errs.append(required(path.child("metricSources"), "metricSources must be set on every non-fixed role when metrics are configured"))
            continue
        names = _metric_names(effective)
        for key in sorted(as_dict(sources), key=str):
            if key not in names:
                errs.append(invalid(path.child("metricSources").key(str(key)), key, "metricSources key must match an effective metric name"))
    ratio = as_object(target.get("ratioConstraint"))
    if ratio is not None:
        errs += _ratio_errors(ratio, roles, base.child("ratioConstraint"))
    return errs


def _ratio_errors(ratio: dict[str, Any], roles: dict[str, Any], path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    num, den = ratio.get("numeratorRole"), ratio.get("denominatorRole")
    if num == den:
        errs.append(invalid(path.child("denominatorRole"), den, "numeratorRole and denominatorRole must differ"))
    if not isinstance(num, str) or num not in roles:
        errs.append(invalid(path.child("numeratorRole"), num, "numeratorRole must exist in roles"))
    if not isinstance(den, str) or den not in roles:
        errs.append(invalid(path.child("denominatorRole"), den, "denominatorRole must exist in roles"))
    low, high = parse_quantity(ratio.get("minRatio")), parse_quantity(ratio.get("maxRatio"))
    if low is None or high is None or not low.is_finite() or not high.is_finite():
        errs.append(invalid(path, {"minRatio": ratio.get("minRatio"), "maxRatio": ratio.get("maxRatio")}, "ratio values must be finite"))
        return errs
    if low < 0 or high <= 0:
        errs.append(invalid(path.child("minRatio"), ratio.get("minRatio"), "minRatio must be >= 0 and maxRatio must be > 0"))
        return errs
    if low > high:
        errs.append(invalid(path.child("minRatio"), ratio.get("minRatio"), "minRatio must be <= maxRatio"))
        return errs
    if errs:
        return errs
    n = as_dict(roles.get(num)) if isinstance(num, str) else {}
    d = as_dict(roles.get(den)) if isinstance(den, str) else {}
    n_min, n_max, d_min, d_max = n.get("minReplicas", 0), n.get("maxReplicas"), d.get("minReplicas", 0), d.get("maxReplicas")
    if not (is_int(n_min) and is_int(n_max) and is_int(d_min) and is_int(d_max)):
        return errs
    if (n_min == 0) != (d_min == 0):
        errs.append(invalid(path, {"numeratorRole": num, "denominatorRole": den}, "ratio roles must be scalable-to-zero together"))
        return errs
    too_high = d_max > 0 and n_min / d_max > high
    too_low = d_min > 0 and n_max / d_min < low
    if too_high or too_low:
        errs.append(
            invalid(
                path, {"minRatio": ratio.get("minRatio"), "maxRatio": ratio.get("maxRatio")}, "ratioConstraint is not achievable within role replica bounds"
            )
        )
    return errs


@REGISTRY.validates("autoscalingpolicies.bounds", POLICIES, cel=POLICY_MIN_MAX_CEL)
def autoscaling_policy_errors(policy: dict[str, Any]) -> list[FieldError]:
    """Kthena's AutoscalingPolicy validator plus min <= max for homogeneous and heterogeneous targets."""
    view = autoscaling_targets(policy)
    spec, targets = view.spec, view.present
    errs = _metric_errors(spec.get("metrics"), SPEC.child("metrics"))
    if len(targets) != 1:
        errs.append(invalid(SPEC, len(targets), "exactly one of homogeneousTarget, heterogeneousTarget, or disaggregatedTarget must be set"))
    elif targets[0] == "homogeneousTarget":
        homo = as_dict(spec["homogeneousTarget"])
        path = SPEC.child("homogeneousTarget")
        errs += _target_ref_errors(as_dict(homo.get("target")).get("targetRef"), path.child("target", "targetRef"))
        errs += _min_max(homo, path)
    elif targets[0] == "heterogeneousTarget":
        for i, param in enumerate(as_list(as_dict(spec["heterogeneousTarget"]).get("params"))):
            path = SPEC.child("heterogeneousTarget", "params").index(i)
            errs += _target_ref_errors(as_dict(as_dict(param).get("target")).get("targetRef"), path.child("target", "targetRef"))
            errs += _min_max(as_dict(param), path)
    else:
        dis = as_dict(spec["disaggregatedTarget"])
        errs += _target_ref_errors(dis.get("targetRef"), SPEC.child("disaggregatedTarget", "targetRef"))
    if (spec.get("homogeneousTarget") is not None or spec.get("heterogeneousTarget") is not None) and not as_list(spec.get("metrics")):
        errs.append(required(SPEC.child("metrics"), "at least one metric must be set"))
    if len(targets) == 1 and targets[0] == "disaggregatedTarget":
        errs += _disaggregated_errors(as_dict(spec["disaggregatedTarget"]), spec.get("metrics"))
    errs += _behavior_errors(spec.get("behavior"))
    return errs


@REGISTRY.validates_request("autoscalingpolicies.role-floor", POLICIES)
def check_policy_role_floor(req: Request, ctx: Context) -> Verdict:
    """A disaggregated target's roles exist in the target ModelServing and respect its gang floor."""
    verdict = Verdict()
    view = autoscaling_targets(req.object)
    dis = view.disaggregated
    if dis is not None and view.present == (DISAGGREGATED,):
        ref = as_dict(dis.get("targetRef"))
        if (ref.get("kind") or MODELSERVING_KIND) == MODELSERVING_KIND and isinstance(ref.get("name"), str):
            base = SPEC.child("disaggregatedTarget", "roles")
            roles = [
                (base.key(str(n)), n, base.key(str(n)).child("minReplicas"), as_dict(p).get("minReplicas"))
                for n, p in sorted(as_dict(dis.get("roles")).items(), key=lambda kv: str(kv[0]))
                if n
            ]
            errs, warnings = _role_bounds(ctx, str(ref.get("namespace") or req.namespace), ref["name"], roles)
            verdict.errors += errs
            verdict.warnings += warnings
    return verdict


# ---- AutoscalingPolicyBinding (Kthena <= v0.4) --------------------------------------------------


@REGISTRY.validates("autoscalingpolicybindings.bounds", BINDINGS, cel=BINDING_MIN_MAX_CEL)
def binding_errors(binding: dict[str, Any]) -> list[FieldError]:
    """Kthena v0.4's AutoscalingPolicyBinding validator (target shape) plus min <= max."""
    view = autoscaling_targets(binding)
    homo, hetero = view.homogeneous, view.heterogeneous
    errs: list[FieldError] = []
    if HOMOGENEOUS not in view.present and HETEROGENEOUS not in view.present:
        errs.append(required(SPEC.child("homogeneousTarget"), "spec.homogeneousTarget should be set if spec.heterogeneousTarget does not exist"))
    elif HOMOGENEOUS in view.present and HETEROGENEOUS in view.present:
        errs.append(invalid(SPEC, "", "both spec.heterogeneousTarget and spec.homogeneousTarget can not be set at the same time"))
    if hetero is not None:
        for i, param in enumerate(as_list(hetero.get("params"))):
            path = SPEC.child("heterogeneousTarget", "params").index(i)
            target = as_dict(as_dict(param).get("target"))
            kind = as_dict(target.get("targetRef")).get("kind") or ""
            if kind != MODELSERVING_KIND:
                errs.append(
                    invalid(
                        path.child("target", "targetRef", "kind"), kind, f"heterogeneousTarget.params[].targetRef.kind must be ModelServing, but got {kind}"
                    )
                )
            if target.get("subTargets"):
                errs.append(invalid(path.child("target", "subTargets"), target["subTargets"], "heterogeneousTarget.params[].subTarget must be empty"))
            errs += _min_max(as_dict(param), path)
    if homo is not None:
        path = SPEC.child("homogeneousTarget")
        target = as_dict(homo.get("target"))
        ref = as_dict(target.get("targetRef"))
        kind = ref.get("kind") or ""
        ref_path = path.child("target", "targetRef")
        if kind in ("", MODELSERVING_KIND):
            if not ref.get("name"):
                errs.append(invalid(ref_path.child("name"), ref.get("name") or "", "homogeneousTarget.targetRef.name must be set, but got empty"))
            sub = as_object(target.get("subTargets"))
            if sub is not None:
                sub_path = path.child("target", "subTargets")
                if not sub.get("name"):
                    errs.append(invalid(sub_path.child("name"), sub.get("name") or "", "homogeneousTarget.targetRef.subTarget.name must be set, but got empty"))
                if sub.get("kind") != "Role":
                    errs.append(
                        invalid(
                            sub_path.child("kind"),
                            sub.get("kind") or "",
                            f"homogeneousTarget.targetRef.subTarget.kind must be `Role`, but got {sub.get('kind') or ''}",
                        )
                    )
        else:
            errs.append(invalid(ref_path.child("kind"), kind, f"homogeneousTarget.targetRef.kind must be ModelServing, but got {kind}"))
        errs += _min_max(homo, path)
    return errs


@REGISTRY.validates_request("autoscalingpolicybindings.references", BINDINGS)
def check_binding_references(req: Request, ctx: Context) -> Verdict:
    """The bound AutoscalingPolicy exists; a role target exists and respects the gang floor."""
    verdict = Verdict()
    view = autoscaling_targets(req.object)
    spec = view.spec
    policy_name = as_dict(spec.get("policyRef")).get("name")
    path = SPEC.child("policyRef", "name")
    if not isinstance(policy_name, str) or not policy_name:
        verdict.errors.append(required(path, "the AutoscalingPolicy to bind must be named"))
    else:
        try:
            found = ctx.lookups.get(AUTOSCALINGPOLICY_API_VERSION, AUTOSCALINGPOLICY_KIND, req.namespace, policy_name)
        except LookupFailed as exc:
            verdict.warnings.append(f"servinggate: policyRef not checked, AutoscalingPolicy {req.namespace}/{policy_name} unreadable: {exc}")
        else:
            if found is None:
                verdict.errors.append(invalid(path, policy_name, f"autoscaling policy resource {policy_name} does not exist"))
    homo = view.homogeneous
    if homo is not None:
        target = as_dict(homo.get("target"))
        ref, sub = as_dict(target.get("targetRef")), as_dict(target.get("subTargets"))
        if sub.get("kind") == "Role" and isinstance(sub.get("name"), str) and sub["name"] and isinstance(ref.get("name"), str):
            role_path = SPEC.child("homogeneousTarget", "target", "subTargets", "name")
            min_path = SPEC.child("homogeneousTarget", "minReplicas")
            ns = str(ref.get("namespace") or req.namespace)
            errs, warnings = _role_bounds(ctx, ns, ref["name"], [(role_path, sub["name"], min_path, homo.get("minReplicas"))])
            verdict.errors += errs
            verdict.warnings += warnings
    return verdict
