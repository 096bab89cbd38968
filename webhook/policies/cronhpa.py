"""CronHPAs (autoscaling.alibabacloud.com/v1beta1, kubernetes-cronhpa-controller).

- `cronhorizontalpodautoscalers.jobs`: a scale target with kind and name; every job named
  uniquely (the controller matches a job's status by name), with a schedule its parser reads
  (cron.py) and a targetSize it can scale to (an int32, not below zero).
"""

from __future__ import annotations

from typing import Any

from ..admission.fields import FieldError, FieldPath, duplicate, invalid, required
from ..shapes import as_dict, as_list
from .cron import cron_problem, target_size_problem
from .registry import REGISTRY, Target

SPEC = FieldPath.of("spec")
CRON_HPAS = Target(group="autoscaling.alibabacloud.com", resource="cronhorizontalpodautoscalers", versions=("v1beta1",))


@REGISTRY.validates("cronhorizontalpodautoscalers.jobs", CRON_HPAS)
def cronhpa_errors(cron: dict[str, Any]) -> list[FieldError]:
    """A scale target; every job uniquely named, with a schedule and a targetSize the controller takes."""
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
        schedule = job.get("schedule")
        if schedule is None:
            errs.append(required(path.child("schedule"), "a cron schedule, seconds first (0 30 10 * * *), or a descriptor (@daily, @every 1h)"))
        elif problem := cron_problem(schedule):
            errs.append(invalid(path.child("schedule"), schedule, f"the CronHPA controller cannot parse it: {problem}"))
        size = job.get("targetSize")
        if size is None:
            errs.append(required(path.child("targetSize"), "the replicas the job scales to"))
        elif problem := target_size_problem(size):
            errs.append(invalid(path.child("targetSize"), size, problem))
    return errs
