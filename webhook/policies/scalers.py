"""What each autoscaler scales, read from an HPA, KEDA ScaledObject, CronHPA or Kthena
AutoscalingPolicy (the whole object in a review, its projection in the store): the one-owner
rule (scaletargets.py) compares a newcomer's targets with everyone else's (clusterfacts.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..admission.fields import FieldPath
from ..kthena import MODELSERVING_GROUP, MODELSERVING_KIND
from ..shapes import as_dict, as_list
from ..shapes.kthena import autoscaling_targets
from .projections import AUTOSCALINGPOLICY, CRONHPA, HPA, SCALEDOBJECT, LookedUp

KEDA_GROUP = SCALEDOBJECT.group


# ---- scale targets -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScaleTarget:
    """What one autoscaler scales: a ModelServing (`role` "" for the whole of it, else one role of
    a disaggregated policy), named by the autoscaler `kind namespace/name`. `owner` is the
    ScaledObject that owns a KEDA-made HPA ("" otherwise): the two are one autoscaler."""

    namespace: str
    name: str  # the ModelServing
    role: str
    by_kind: str
    by_name: str
    owner: str = ""
    path: FieldPath = FieldPath.of("spec")  # where the autoscaler names the target

    @property
    def by(self) -> str:
        return f"{self.by_kind} {self.namespace}/{self.by_name}"


def _modelserving_ref(ref: Any) -> str:
    """The name a scaleTargetRef or targetRef gives when it names a ModelServing, else ""."""
    ref = as_dict(ref)
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    name = ref.get("name")
    if (ref.get("kind") or MODELSERVING_KIND) != MODELSERVING_KIND or group not in ("", MODELSERVING_GROUP):
        return ""
    return name if isinstance(name, str) else ""


def _keda_owner(meta: dict[str, Any]) -> str:
    for ref in as_list(meta.get("ownerReferences")):
        ref = as_dict(ref)
        if ref.get("kind") == SCALEDOBJECT.kind and str(ref.get("apiVersion") or "").startswith(KEDA_GROUP + "/"):
            return str(ref.get("name") or "")
    return ""


def scale_targets(kind: str, obj: dict[str, Any], namespace: str = "") -> list[ScaleTarget]:
    """The ModelServing targets of an HPA, ScaledObject, CronHPA or AutoscalingPolicy (whole
    object or projection). A CronHPA whose target is an HPA scales that HPA's bounds, not a
    ModelServing: it has none. A ModelServing reference with a kind other than ModelServing or
    without a name has none either (the object's own rules say what is wrong with it)."""
    meta = as_dict(obj.get("metadata"))
    ns = namespace or str(meta.get("namespace") or "")
    me = str(meta.get("name") or "")
    spec = as_dict(obj.get("spec"))
    found: list[ScaleTarget] = []
    if kind in (HPA.kind, SCALEDOBJECT.kind, CRONHPA.kind):
        ref = as_dict(spec.get("scaleTargetRef"))
        if ref.get("kind") == MODELSERVING_KIND and (name := _modelserving_ref(ref)):
            owner = _keda_owner(meta) if kind == HPA.kind else ""
            found.append(ScaleTarget(ns, name, "", kind, me, owner, _SPEC.child("scaleTargetRef", "name")))
    elif kind == AUTOSCALINGPOLICY.kind:
        targets = autoscaling_targets(obj)
        homo, hetero, dis = targets.homogeneous, targets.heterogeneous, targets.disaggregated
        if homo is not None and (name := _modelserving_ref(as_dict(homo.get("target")).get("targetRef"))):
            found.append(ScaleTarget(ns, name, "", kind, me, "", _SPEC.child("homogeneousTarget", "target", "targetRef", "name")))
        if hetero is not None:
            for i, param in enumerate(as_list(hetero.get("params"))):
                if name := _modelserving_ref(as_dict(as_dict(param).get("target")).get("targetRef")):
                    path = _SPEC.child("heterogeneousTarget", "params").index(i).child("target", "targetRef", "name")
                    found.append(ScaleTarget(ns, name, "", kind, me, "", path))
        if dis is not None and (name := _modelserving_ref(dis.get("targetRef"))):
            for role in sorted(str(r) for r in as_dict(dis.get("roles")) if r):
                found.append(ScaleTarget(ns, name, role, kind, me, "", _SPEC.child("disaggregatedTarget", "roles").key(role)))
    return found


_SPEC = FieldPath.of("spec")
SCALERS: tuple[LookedUp, ...] = (HPA, SCALEDOBJECT, CRONHPA, AUTOSCALINGPOLICY)
