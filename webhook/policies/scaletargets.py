"""One autoscaler per scale target: a second one on a ModelServing fights the first over its replicas.

- `*.one-owner` (HorizontalPodAutoscaler, KEDA ScaledObject, CronHPA, Kthena AutoscalingPolicy):
  creating or updating an autoscaler whose target another autoscaler already scales is refused,
  naming the other one (`kind namespace/name`). The target is a ModelServing, or one role of it
  for a disaggregated AutoscalingPolicy (policies on different roles share nothing; a role
  policy beside a whole-ModelServing one changes other fields, and is allowed too).

Not a conflict: the HPA KEDA makes for a ScaledObject (owned by it: the two are one autoscaler),
a CronHPA whose target is an HPA (it changes that HPA's bounds, the documented way to combine
the two), and the object itself on update. KEDA's own webhook refuses two ScaledObjects or a
ScaledObject beside an HPA on one target; it does not know Kthena's policies, which is what this
adds (kthena#799 plans the same). The autoscalers are read from the cluster facts (every
autoscaler's target, clusterfacts.py); while they are not listed the write is allowed with a
warning. The annotation `servinggate.io/shared-scale-target: "true"` on the newcomer opts out.
"""

from __future__ import annotations

from ..admission.decision import Verdict
from ..admission.fields import invalid
from ..admission.review import Request
from ..shapes import as_dict
from .clusterfacts import ask
from .context import Context
from .cronhpa import CRON_HPAS
from .hpa import HPAS, TARGETS_MODELSERVING
from .kthena_autoscaling import POLICIES
from .projections import SCALEDOBJECT
from .registry import REGISTRY, Target
from .scalers import scale_targets

SCALEDOBJECTS = Target(group=SCALEDOBJECT.group, resource="scaledobjects", versions=(SCALEDOBJECT.version,))
OPT_OUT = "servinggate.io/shared-scale-target"


@REGISTRY.validates_request("horizontalpodautoscalers.one-owner", HPAS, match=(TARGETS_MODELSERVING,), family="hpa")
@REGISTRY.validates_request("scaledobjects.one-owner", SCALEDOBJECTS, family="keda")
@REGISTRY.validates_request("cronhorizontalpodautoscalers.one-owner", CRON_HPAS, family="cronhpa")
@REGISTRY.validates_request("autoscalingpolicies.one-owner", POLICIES, family="kthena_autoscaling")
def check_one_owner(req: Request, ctx: Context) -> Verdict:
    """No other autoscaler already scales this one's ModelServing (or role)."""
    obj = req.object
    if obj is None:
        return Verdict()
    if as_dict(as_dict(obj.get("metadata")).get("annotations")).get(OPT_OUT) == "true":
        return Verdict()
    kind = req.kind.kind
    mine = scale_targets(kind, obj, req.namespace)
    if not mine:
        return Verdict()
    others, warnings = ask(ctx, "one autoscaler per ModelServing", lambda facts: facts.scale_targets(req.namespace))
    if others is None:
        return Verdict(warnings=warnings)
    me = {(kind, req.name)} | {(SCALEDOBJECT.kind, t.owner) for t in mine if t.owner}
    verdict = Verdict()
    for target in mine:
        fighting: dict[tuple[str, str], str] = {}  # the other autoscaler -> how it is named
        for other in others:
            if other.name != target.name or other.role != target.role or (other.by_kind, other.by_name) in me:
                continue
            if other.owner:
                if (SCALEDOBJECT.kind, other.owner) in me:
                    continue  # the HPA KEDA made for this ScaledObject
                fighting.setdefault((SCALEDOBJECT.kind, other.owner), f"{SCALEDOBJECT.kind} {other.namespace}/{other.owner} (through its {other.by})")
            else:
                fighting[(other.by_kind, other.by_name)] = other.by
        what = f"role {target.role} of ModelServing" if target.role else "ModelServing"
        for by in sorted(fighting.values()):
            verdict.errors.append(
                invalid(
                    target.path,
                    target.role or target.name,
                    f"{what} {target.namespace}/{target.name} is already scaled by {by}: two autoscalers would fight over "
                    f'its replicas (annotate {OPT_OUT}: "true" to allow it)',
                )
            )
    return verdict
