"""Pod rules (CREATE): make gang members schedulable as Volcano gangs.

Scope: pods of a ModelServing (label `modelserving.volcano.sh/name`) and pods that opt in with
`servinggate.io/gang`; never pods labelled `servinggate.io/skip: "true"` or in a skipped namespace.

- `pods.default-scheduler`: an empty or `default-scheduler` schedulerName becomes the configured
  gang scheduler; another explicit scheduler is kept, with a warning.
- `pods.gang-labels`: the subgroup labels and PodGroup annotations Volcano's `subGroupPolicy`
  and PodGroup matching need, derived from the pod name `<ms>-<g>-<role>-<r>-<k>` (or, without a
  name, from the labels); a value contradicting the name is repaired. The PodGroup annotations
  only for a PodGroup that will exist (`podgroup_will_exist`: Kthena's own condition). Opt-in pods
  get only the annotations (`servinggate.io/gang` / `servinggate.io/subgroup`), none of Kthena's
  labels: its controller selects and deletes pods by them.

Both are minimal (no change, no patch) and idempotent. Every change is recorded in the review's
audit annotations (`changes`) and log line; a warning is only for a problem the client should
fix (an explicit non-gang scheduler on a gang pod, an owner that could not be read, an opt-in gang
on a cluster without the PodGroup CRD). Pods of a ModelServing whose scheduler is not the gang
scheduler, an explicit empty one included, are left alone (`owner_choice`).
"""

from __future__ import annotations

import re
from typing import Any

from ..admission.decision import Changes
from ..admission.review import Request
from ..kthena import ANNOTATION_GROUP, ANNOTATION_TASK, KTHENA_GANG_SCHEDULER, LABEL_ENTRY, LABEL_GROUP, LABEL_NAME, LABEL_ROLE, LABEL_ROLE_ID
from ..shapes import as_dict, as_object, metadata
from .clusterfacts import ClusterFacts, ask
from .common import lookup_modelserving
from .context import Context
from .registry import REGISTRY, LabelScope, Target

MODELSERVING_NAME_LABEL = LABEL_NAME
GANG_LABEL = "servinggate.io/gang"
SUBGROUP_LABEL = "servinggate.io/subgroup"
SKIP_LABEL = "servinggate.io/skip"
# The opt-in gang's mutation also runs in the API server, as a MutatingAdmissionPolicy of this name
# (webhook/deploy/mutationpolicy.py builds it; `smoke` looks for its binding), at these versions
# of admissionregistration.k8s.io, the preferred first.
MUTATING_POLICY_GROUP = "admissionregistration.k8s.io"
MUTATING_POLICY_NAME = "pods-opt-in-gang.servinggate.io"
MUTATING_POLICY_VERSIONS = ("v1", "v1beta1")

UNKNOWN = object()  # an owner's scheduler we could not read

_POD_SUFFIX = re.compile(r"([0-9]+)-(.+)-([0-9]+)-([0-9]+)")

PODS = Target(group="", resource="pods", versions=("v1",), operations=("CREATE",))
# Pods of a ModelServing, and pods that opt in; `servinggate.io/skip: "true"` opts out. The
# webhook configuration's objectSelectors are derived from this (see deploy/configurations.py).
GANG_PODS = LabelScope(any_of=(("modelserving", MODELSERVING_NAME_LABEL), ("gang", GANG_LABEL)), opt_out=(SKIP_LABEL, "true"))


def _labels(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's labels, or None when metadata/labels have a shape we must not touch."""
    meta = as_object(pod.get("metadata"))
    if meta is None:
        return None
    labels = meta.get("labels")
    return {} if labels is None else as_object(labels)


def _arrived_annotated(req: Request) -> bool:
    """Whether the pod reached us with a PodGroup annotation (before any rule of ours ran)."""
    notes = as_dict(as_dict(as_dict(req.object).get("metadata")).get("annotations"))
    return isinstance(notes.get(ANNOTATION_GROUP), str)


def owner_choice(req: Request, pod: dict[str, Any], ctx: Context) -> tuple[bool, Any, list[str]]:
    """(leave the pod alone?, the owner ModelServing's spec.schedulerName or UNKNOWN, warnings).

    A ModelServing whose spec.schedulerName is not the gang scheduler (an explicit empty one
    included: the CRD's `volcano` default fills only an absent field, and Kthena then makes the
    pods with no scheduler) keeps its pods as Kthena makes them: not switched to Volcano, no
    PodGroup annotations. The owner is read through the lookups; when it cannot be read the pod is
    mutated as usual, with a warning; when it is not found (or `check` was not shown it), UNKNOWN."""
    labels = _labels(pod) or {}
    ms_name = labels.get(MODELSERVING_NAME_LABEL)
    if not isinstance(ms_name, str) or not ms_name:
        return False, UNKNOWN, []  # opted in with servinggate.io/gang: no owner to ask
    namespace = req.namespace or str(metadata(pod).get("namespace") or "")
    ms, failure = lookup_modelserving(ctx, namespace, ms_name)
    if failure is not None:
        return False, UNKNOWN, [f"servinggate: ModelServing {namespace}/{ms_name} unreadable ({failure}); its scheduler choice was not checked"]
    if ms is None:
        return False, UNKNOWN, []
    chosen = as_dict(ms.get("spec")).get("schedulerName", KTHENA_GANG_SCHEDULER)  # absent: the CRD's default
    if not isinstance(chosen, str):
        return False, UNKNOWN, []
    return chosen != ctx.settings.scheduler_name, chosen, []


def podgroup_will_exist(req: Request, pod: dict[str, Any], owner_scheduler: Any, ctx: Context) -> tuple[bool, list[str]]:
    """(will the PodGroup the pod's annotations would name exist?, warnings).

    A pod of a ModelServing: only if Kthena makes it, which it does when the owner's
    spec.schedulerName is literally `volcano` and the PodGroup CRD is installed (kthena
    `podgroupmanager/manager.go`, shouldCreatePodGroup, whatever `--scheduler-name` says). For an
    owner not read, the pod as it arrived stands in: Kthena annotates exactly the pods whose
    PodGroup it makes (AnnotatePodWithPodGroup), so one that came without the annotation gets
    none from us (its values may still be repaired); the pod's scheduler cannot stand in, since
    pods.default-scheduler changes it and a second pass would then decide otherwise. An opt-in
    pod: its own PodGroup, which can exist only where the CRD is installed. The CRD comes from
    the cluster facts; facts not listed yet (or none: `check` on files) count as installed, with
    their "not checked" warning: a pod Volcano schedules implies a Volcano whose scheduler could
    not start without that CRD, so saying "installed" is never stricter than the cluster."""
    labels = _labels(pod) or {}
    kthena = isinstance(labels.get(MODELSERVING_NAME_LABEL), str) and bool(labels.get(MODELSERVING_NAME_LABEL))
    if kthena and owner_scheduler is UNKNOWN and not _arrived_annotated(req):
        return False, []
    if kthena and owner_scheduler is not UNKNOWN and owner_scheduler != KTHENA_GANG_SCHEDULER:
        return False, []
    installed, warnings = ask(ctx, "PodGroup CRD", ClusterFacts.podgroup_crd)
    if installed is False and not kthena:
        warnings.append(f"servinggate: no PodGroup CRD is installed, so gang {labels[GANG_LABEL]!r} can have no PodGroup: not annotated")
    return installed is not False, warnings


@REGISTRY.mutates("pods.default-scheduler", PODS, scope=GANG_PODS, edits=(("spec",),))
def default_scheduler(req: Request, pod: dict[str, Any], ctx: Context) -> Changes:
    """An empty or `default-scheduler` schedulerName becomes the gang scheduler; another is kept, with a warning."""
    leave, _, warnings = owner_choice(req, pod, ctx)
    if leave:
        return Changes()
    spec = pod.get("spec")
    if spec is None:
        spec = pod["spec"] = {}
    if not isinstance(spec, dict):
        return Changes(warnings=warnings)
    current = spec.get("schedulerName") or ""
    wanted = ctx.settings.scheduler_name
    if current in ("", "default-scheduler"):
        spec["schedulerName"] = wanted
        return Changes([f"set spec.schedulerName to {wanted!r} for gang scheduling"], warnings)
    if current != wanted:
        warnings.append(f"servinggate: spec.schedulerName {current!r} kept; gang scheduling needs {wanted!r}")
    return Changes(warnings=warnings)


def parse_pod_name(name: str, ms_name: str) -> tuple[str, str, str, bool] | None:
    """`<ms>-<g>-<role>-<r>-<k>` -> (group name, role, role id, is entry); None if it doesn't fit."""
    prefix = ms_name + "-"
    if not ms_name or not name.startswith(prefix):
        return None
    m = _POD_SUFFIX.fullmatch(name, len(prefix))
    if not m:
        return None
    group, role, replica, index = m.groups()
    return f"{ms_name}-{group}", role, f"{role}-{replica}", index == "0"


def _wanted(pod: dict[str, Any], labels: dict[str, Any]) -> tuple[dict[str, str | None], dict[str, str], bool]:
    """(labels to hold: value or None = absent, annotations to hold, derived from the name?).

    An opt-in gang gets only the annotations Volcano matches a PodGroup by: none of Kthena's
    labels, which its controller owns (its pod informer selects on `group-name`, and
    deleteServingGroup deletes every pod with a ServingGroup's `group-name`, kthena
    `controller/model_serving_controller.go`), so a gang named like a ServingGroup is never
    taken for one."""
    if GANG_LABEL in labels and MODELSERVING_NAME_LABEL not in labels:
        gang = labels.get(GANG_LABEL)
        subgroup = labels.get(SUBGROUP_LABEL)
        notes: dict[str, str] = {}
        if isinstance(gang, str) and gang:
            notes[ANNOTATION_GROUP] = gang
        if isinstance(subgroup, str) and subgroup:
            notes[ANNOTATION_TASK] = subgroup
        return {}, notes, False
    ms_name = labels.get(MODELSERVING_NAME_LABEL)
    name = (pod.get("metadata") or {}).get("name")
    parsed = parse_pod_name(name, ms_name) if isinstance(name, str) and isinstance(ms_name, str) else None
    if parsed is not None:
        group, role, role_id, entry = parsed
        want: dict[str, str | None] = {LABEL_GROUP: group, LABEL_ROLE: role, LABEL_ROLE_ID: role_id, LABEL_ENTRY: "true" if entry else None}
        return want, {ANNOTATION_GROUP: group, ANNOTATION_TASK: role_id}, True
    # generateName (or a name we cannot read): the labels the pod carries are all we know.
    notes = {}
    label_group, label_role_id = labels.get(LABEL_GROUP), labels.get(LABEL_ROLE_ID)
    if isinstance(label_group, str) and label_group:
        notes[ANNOTATION_GROUP] = label_group
    if isinstance(label_role_id, str) and label_role_id:
        notes[ANNOTATION_TASK] = label_role_id
    return {}, notes, False


@REGISTRY.mutates("pods.gang-labels", PODS, scope=GANG_PODS, edits=(("metadata", "labels"), ("metadata", "annotations")))
def gang_labels(req: Request, pod: dict[str, Any], ctx: Context) -> Changes:
    """The subgroup labels and PodGroup annotations Volcano needs, from the pod name (or the opt-in labels)."""
    leave, owner_scheduler, _ = owner_choice(req, pod, ctx)  # its warning comes from pods.default-scheduler
    if leave:
        return Changes()
    meta = pod["metadata"]
    labels = _labels(pod)
    if labels is None:
        return Changes()
    want_labels, want_notes, from_name = _wanted(pod, labels)
    made: list[str] = []  # what changed: recorded in the audit annotations and the log, not warned
    why = " (it contradicted the pod name)" if from_name else ""
    for key, value in want_labels.items():
        current = labels.get(key)
        if value is None:
            if key in labels:
                made.append(f"removed label {key}={current}{why}")
                del labels[key]
            continue
        if current == value:
            continue
        if "labels" not in meta or meta["labels"] is None:
            meta["labels"] = labels
        if key in labels:
            made.append(f"repaired label {key}: {current} -> {value}{why}")
        else:
            made.append(f"added label {key}={value}")
        labels[key] = value
    # PodGroup annotations only help a pod Volcano schedules, and only for a PodGroup that will exist.
    scheduler = as_dict(pod.get("spec")).get("schedulerName")
    if scheduler != ctx.settings.scheduler_name or not want_notes:
        return Changes(made)
    exists, warnings = podgroup_will_exist(req, pod, owner_scheduler, ctx)
    if not exists:
        return Changes(made, warnings)
    notes = meta.get("annotations")
    if notes is not None and not isinstance(notes, dict):
        return Changes(made)
    for key, value in want_notes.items():
        current = (notes or {}).get(key)
        if current == value:
            continue
        if notes is None:
            notes = meta["annotations"] = {}
        if key in notes:
            made.append(f"repaired annotation {key}: {current} -> {value}{why}")
        else:
            made.append(f"added annotation {key}={value}")
        notes[key] = value
    return Changes(made, warnings)
