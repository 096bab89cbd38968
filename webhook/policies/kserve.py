"""KServe InferenceServices (serving.kserve.io/v1beta1): the autoscaling fields of each component.

- `inferenceservices.autoscaling`: minReplicas >= 0 (>= 1 in RawDeployment mode, which cannot
  scale to zero), a positive maxReplicas not below minReplicas, a known scaleMetric and a
  positive scaleTarget (a warning above 100% utilisation).
"""

from __future__ import annotations

from typing import Any

from ..admission.decision import Verdict
from ..admission.fields import FieldError, FieldPath, invalid, not_supported
from ..shapes import as_dict, as_object
from .common import is_int, is_number
from .registry import REGISTRY, Target

SPEC = FieldPath.of("spec")
INFERENCE_SERVICES = Target(group="serving.kserve.io", resource="inferenceservices", versions=("v1beta1",))

KSERVE_COMPONENTS = ("predictor", "transformer", "explainer")
KSERVE_METRICS = ["cpu", "memory", "concurrency", "rps"]
KSERVE_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"


@REGISTRY.validates("inferenceservices.autoscaling", INFERENCE_SERVICES)
def inference_service_errors(isvc: dict[str, Any]) -> Verdict:
    """Each component's replica bounds, scaleMetric and scaleTarget (RawDeployment: no scale to zero)."""
    spec = as_dict(isvc.get("spec"))
    notes = as_dict(as_dict(isvc.get("metadata")).get("annotations"))
    raw = notes.get(KSERVE_MODE_ANNOTATION) == "RawDeployment"
    errs: list[FieldError] = []
    warnings: list[str] = []
    for name in KSERVE_COMPONENTS:
        comp = as_object(spec.get(name))
        if comp is None:
            continue
        path = SPEC.child(name)
        low, high = comp.get("minReplicas"), comp.get("maxReplicas")
        if low is not None and (not is_int(low) or low < 0):
            errs.append(invalid(path.child("minReplicas"), low, "must be greater than or equal to 0"))
        elif raw and is_int(low) and low < 1:
            errs.append(invalid(path.child("minReplicas"), low, "must be at least 1 in RawDeployment mode (no scale-to-zero)"))
        # maxReplicas 0 means "no limit" to KServe, so only a positive bound is compared.
        if is_int(high) and high > 0 and is_int(low) and high < low:
            errs.append(invalid(path.child("maxReplicas"), high, f"must be greater than or equal to minReplicas ({low})"))
        metric = comp.get("scaleMetric")
        if metric is not None and metric not in KSERVE_METRICS:
            errs.append(not_supported(path.child("scaleMetric"), metric, KSERVE_METRICS))
        target = comp.get("scaleTarget")
        if target is not None:
            if not is_number(target) or target <= 0:
                errs.append(invalid(path.child("scaleTarget"), target, "must be greater than 0"))
            elif metric in ("cpu", "memory") and target > 100:
                warnings.append(f"servinggate: {path}.scaleTarget {target} is above 100% {metric} utilisation; the autoscaler may never scale up")
    return Verdict(errors=errs, warnings=warnings)
