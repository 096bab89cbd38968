"""CronHPAs (autoscaling.alibabacloud.com/v1beta1, kubernetes-cronhpa-controller).

- `cronhorizontalpodautoscalers.jobs`: a scale target with kind and name; every job named
  uniquely, with a valid schedule (see cron.py) and a non-negative targetSize.
"""

from __future__ import annotations

from typing import Any

from ..admission.fields import FieldError, FieldPath, duplicate, invalid, required
from ..shapes import as_dict, as_list
from .common import is_int
from .cron import cron_problem
from .registry import REGISTRY, Target

SPEC = FieldPath.of("spec")
CRON_HPAS = Target(group="autoscaling.alibabacloud.com", resource="cronhorizontalpodautoscalers", versions=("v1beta1",))


@REGISTRY.validates("cronhorizontalpodautoscalers.jobs", CRON_HPAS)
def cronhpa_errors(cron: dict[str, Any]) -> list[FieldError]:
    """A scale target; every job uniquely named, with a valid schedule and a targetSize >= 0."""
    spec = as_dict(cron.get("spec"))
    errs: list[FieldError] = []
    ref = as_dict(spec.get("scaleTargetRef"))
    if not ref.get("kind") or not ref.get("name"):
        errs.append(required(SPEC.child("scaleTargetRef"), "the workload to scale needs kind and name"))
    seen: set[str] = set()
    for i, job in enumerate(as_list(spec.get("jobs"))):
        job = as_dict(job)
        path = SPEC.child("jobs").index(i)
        name = job.get("name")
        if not isinstance(name, str) or not name:
            errs.append(required(path.child("name"), "each job needs a name"))
        elif name in seen:
            errs.append(duplicate(path.child("name"), name))
        else:
            seen.add(name)
        problem = cron_problem(job.get("schedule"))
        if problem:
            if job.get("schedule") is None:
                errs.append(required(path.child("schedule"), problem))
            else:
                errs.append(invalid(path.child("schedule"), job.get("schedule"), problem))
        size = job.get("targetSize")
        if size is None:
            errs.append(required(path.child("targetSize"), "must be a non-negative integer"))
        elif not is_int(size) or size < 0:
            errs.append(invalid(path.child("targetSize"), size, "must be a non-negative integer"))
    return errs
