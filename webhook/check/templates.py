"""The pods a workload will create, built as its controller builds them, so `check` can show the
mutation (and any refusal) each will get from our pod rules before the workload is applied.

- ModelServing (Kthena): for each role, the entry pod and, with `workerReplicas > 0`, the first
  worker, built by `policies.kthena_pods` as the controller builds them (its labels, PodGroup
  annotations, owner reference, schedulerName and environment variables), the same pods the rule
  `modelservings.pod-templates` judges; without PodGroup annotations when the cluster `check` was
  shown has no PodGroup CRD.
- Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob and OpenKruise CloneSet: a pod
  from `spec.template` (CronJob: `spec.jobTemplate.spec.template`) with the template's labels and
  annotations, named as the controller names it (`<sts>-0`, or a generateName).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..admission.decision import RuleError
from ..admission.outcome import status_of
from ..admission.review import make_request
from ..kthena import MODELSERVING
from ..policies import REGISTRY, Context, LookupFailed, engine
from ..policies.clusterfacts import facts_of
from ..policies.kthena_pods import controller_pods
from ..shapes import as_dict

TEMPLATE_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
    ("apps.kruise.io", "CloneSet"): ("spec", "template"),
}


def _pod(name: str, generate: bool, namespace: str, labels: dict[str, Any], annotations: dict[str, Any], spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"generateName" if generate else "name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    pod_spec = orjson.loads(orjson.dumps(spec)) if isinstance(spec, dict) else {}
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = "default-scheduler"  # the API server's default, before any webhook
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


def podgroup_crd(ctx: Context) -> bool:
    """Whether the cluster `check` was shown has the PodGroup CRD; assumed when it was shown none
    (or its facts cannot be read), as the pod rules assume it (`policies/pods.py`)."""
    try:
        return facts_of(ctx).podgroup_crd()
    except LookupFailed:
        return True


def modelserving_pods(ms: dict[str, Any], podgroup: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """The pods Kthena makes of `ms`; `podgroup`: whether the cluster has the PodGroup CRD."""
    return [(str(cp.path), cp.pod) for cp in controller_pods(ms, podgroup_crd=podgroup)]


def workload_pods(obj: dict[str, Any], group: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
    path = TEMPLATE_PATHS[(group, kind)]
    node: Any = obj
    for part in path:
        node = as_dict(node).get(part)
    template = as_dict(node)
    meta = as_dict(obj.get("metadata"))
    name, namespace = str(meta.get("name") or meta.get("generateName") or ""), str(meta.get("namespace") or "")
    tmeta = as_dict(template.get("metadata"))
    labels, annotations = dict(as_dict(tmeta.get("labels"))), dict(as_dict(tmeta.get("annotations")))
    if kind == "StatefulSet":
        return [(".".join(path), _pod(f"{name}-0", False, namespace, labels, annotations, template.get("spec")))]
    return [(".".join(path), _pod(f"{name}-", True, namespace, labels, annotations, template.get("spec")))]


def pods_of(obj: dict[str, Any], podgroup: bool = True) -> list[tuple[str, dict[str, Any]]]:
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    kind = str(obj.get("kind") or "")
    if (group, kind) == MODELSERVING:
        return modelserving_pods(obj, podgroup)
    if (group, kind) in TEMPLATE_PATHS:
        return workload_pods(obj, group, kind)
    return []


@dataclass(slots=True)
class PodPreview:
    """One pod a workload makes: `summary` is what the report shows of it, `errors` the field
    errors our pod rules would refuse it with (findings of the workload, naming the pod)."""

    summary: dict[str, Any]
    errors: list[RuleError] = field(default_factory=list)


def preview(obj: dict[str, Any], ctx: Context) -> list[PodPreview]:
    """Each pod the workload makes, with what our pod rules would do to it at creation."""
    out: list[PodPreview] = []
    for template, pod in pods_of(obj, podgroup_crd(ctx)):
        req = make_request(pod, operation="CREATE")
        mutation = engine.mutate(req, ctx, REGISTRY)
        edited = mutation.edited if mutation.edited is not None else pod
        validation = engine.validate(make_request(edited, operation="CREATE"), ctx, REGISTRY)
        refusal = next((d for d in (mutation, validation) if not d.allowed), None)
        status = status_of(req, refusal) if refusal is not None else None
        errors = [e for d in (mutation, validation) for e in d.errors]
        meta = pod["metadata"]
        out.append(
            PodPreview(
                {
                    "name": meta.get("name") or meta.get("generateName", "") + "*",
                    "template": template,
                    "rules": list(mutation.rules + validation.rules),
                    "allowed": refusal is None,
                    "message": status.message if status is not None else None,
                    "errors": [{"rule": e.rule, "field": e.error.field, "type": e.error.kind, "message": e.error.body()} for e in errors],
                    "warnings": [w.text for w in mutation.warnings + validation.warnings],
                    "patch": mutation.patch,
                },
                errors,
            )
        )
    return out
