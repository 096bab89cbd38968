"""CronHPAs (autoscaling.alibabacloud.com/v1beta1, kubernetes-cronhpa-controller).

- `cronhorizontalpodautoscalers.jobs`: a scale target with kind and name; every job named
  uniquely (the controller matches a job's status by name), with a schedule its parser reads
  (cron.py) and a targetSize it can scale to (an int32, not below zero).
- `cronhorizontalpodautoscalers.modelserving-sizes`: a job on a ModelServing scales it through
  `modelservings/scale`, which `modelservings.scale` judges when the job runs; a size that scale
  would be refused at (its rollout budgets, its generated names) is refused at apply instead.
"""

from __future__ import annotations

from typing import Any

from ..admission.decision import Verdict
from ..admission.fields import FieldError, FieldPath, duplicate, invalid, required
from ..admission.review import Request
from ..shapes import as_dict, as_list
from .common import is_int, lookup_modelserving
from .context import Context
from .cron import cron_problem, target_size_problem
from .modelservings import check_scale
from .projections import CRONHPA
from .registry import REGISTRY, Target
from .scalers import scale_targets

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


@REGISTRY.validates_request("cronhorizontalpodautoscalers.modelserving-sizes", CRON_HPAS)
def cronhpa_modelserving_sizes(req: Request, ctx: Context) -> Verdict:
    """Each job's targetSize, on a ModelServing target, as `modelservings.scale` will judge the
    scale the job makes (the ModelServing as it is now; unreadable: allowed with a warning)."""
    cron = as_dict(req.subject)
    targets = scale_targets(CRONHPA.kind, cron, req.namespace)
    if not targets:
        return Verdict()
    name = targets[0].name
    ms, failure = lookup_modelserving(ctx, req.namespace, name)
    if failure is not None:
        return Verdict(warnings=[f"servinggate: job sizes not checked, ModelServing {req.namespace}/{name} unreadable: {failure}"])
    if ms is None:
        return Verdict()  # made later, or never: its scale is judged when the job runs
    errs: list[FieldError] = []
    judged: dict[int, list[str]] = {}
    for i, job in enumerate(as_list(as_dict(cron.get("spec")).get("jobs"))):
        size = as_dict(job).get("targetSize")
        if not is_int(size) or target_size_problem(size) is not None:
            continue  # cronhorizontalpodautoscalers.jobs says what is wrong with it
        if size not in judged:
            judged[size] = check_scale(req, ms, size, ctx)
        errs += [invalid(SPEC.child("jobs").index(i).child("targetSize"), size, f"ModelServing {name} would refuse this scale: {p}") for p in judged[size]]
    return Verdict(errors=errs)
