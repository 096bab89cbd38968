"""`modelservings.pod-templates`: refuse a ModelServing whose pods the API server would refuse.
(Registered in `modelservings`, the module of its family, which the webhook configurations follow.)

Kubernetes never validates the pod templates inside a custom resource, and Kthena's controller
only logs the refusal when it creates a pod (volcano-sh/kthena#1789), so a template with
`containerPort: 0` or an uppercase container name is accepted and its pods never appear. This
rule builds each pod as the controller will (`kthena_pods`), applies the v1 Pod defaults and runs
the API server's own Pod validation (`podvalidation`, kube-apiserver 1.28) on it.

Where an error is reported: at the template's own path (`spec.template.roles[0].entryTemplate.
spec.containers[0].ports[0].containerPort`, `...entryTemplate.metadata.labels`), with the API
server's message. An error that only the controller's additions cause is reported at the field
of the ModelServing that leads to it: a controller label that is not a valid value (the
ModelServing's name in `name`/`group-name`) at `metadata.name`, a bad pod name at the role's
`name` (or `metadata.name`). The controller replaces the template's own GROUP_SIZE, ENTRY_ADDRESS
and WORKER_INDEX variables, so they cannot clash; errors in later variables keep their template
index. A finding another denying rule already reports at the same path (an image of spaces,
`modelservings.kthena.images`) is left to that rule, so it is reported once.

On UPDATE only a template that changed, or a worker template that comes into use, is judged, so
an object stored before this rule (or before a stricter Kubernetes) can still be scaled and
relabelled: our own ratcheting, as the API server's for CRDs is alpha and off in 1.28.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..admission.fields import FieldError, FieldPath
from ..admission.review import Request
from ..podvalidation import default_pod_spec, validate_pod_template_spec
from ..podvalidation.names import is_dns1123_label, name_is_dns_subdomain
from ..podvalidation.errors import invalid
from .context import Context
from ..kthena import MODELSERVING_GROUP
from .kthena_pods import ROLES, ControllerPod, Select, controller_pods
from .registry import REGISTRY, Views

RULE = "modelservings.pod-templates"
MS_NAME = FieldPath.of("metadata", "name")


def judge(cp: ControllerPod) -> list[FieldError]:
    """The API server's verdict on one controller pod, at the ModelServing's paths."""
    if type(cp.template) is not dict:
        return validate_pod_template_spec(cp.template, cp.path, is_pod=True)  # its type error
    meta, spec = cp.pod["metadata"], cp.pod["spec"]
    default_pod_spec(spec)
    errs = validate_pod_template_spec({"metadata": meta, "spec": spec}, cp.path, is_pod=True)
    name = meta["name"]
    problems = name_is_dns_subdomain(name)
    if problems:
        at = cp.path.parts[:-1] + ("name",) if is_dns1123_label(cp.role_name) else MS_NAME.parts
        errs += [invalid(FieldPath(at), name, m) for m in problems]
    return [_at_template(cp, e) for e in errs] if errs else errs


def _at_template(cp: ControllerPod, e: FieldError) -> FieldError:
    parts, base = e.path.parts, len(cp.path.parts)
    if parts[:base] != cp.path.parts:
        return e
    rel = parts[base:]
    if rel[:2] == ("metadata", "labels") and not _from_template_labels(cp.template, e.value):
        return replace(e, path=MS_NAME)  # a controller label: the ModelServing's name made it
    if len(rel) >= 5 and rel[0] == "spec" and rel[3] == "env" and type(rel[4]) is int:
        kept = cp.kept_env.get((str(rel[1]), int(rel[2])))
        if kept is not None:
            k = rel[4]
            tail = (kept[k],) + rel[5:] if k < len(kept) else ()
            return replace(e, path=FieldPath(parts[:base] + rel[:4] + tail))
    return e


def _from_template_labels(template: dict[str, Any], value: Any) -> bool:
    meta = template.get("metadata")
    labels = meta.get("labels") if type(meta) is dict else None
    if labels is None:
        return False
    if type(labels) is not dict:
        return True  # its type error is the template's
    return value in labels or value in labels.values()


def _ratchet(old: dict[str, Any]) -> Select:
    """On UPDATE: judge a template only if the role is new, the template changed, or its workers start."""
    spec = old.get("spec")
    template = spec.get("template") if type(spec) is dict else None
    roles = template.get("roles") if type(template) is dict else None
    before = {r["name"]: r for r in roles if type(r) is dict and type(r.get("name")) is str} if type(roles) is list else {}

    def select(i: int, role: dict[str, Any], which: str) -> bool:
        name = role.get("name")
        was = before.get(name) if type(name) is str else None
        if was is None or was.get(which) != role.get(which):
            return True
        if which == "workerTemplate":
            workers = was.get("workerReplicas")
            return not (type(workers) is int and workers > 0)
        return False

    return select


def _reported_elsewhere(req: Request, ctx: Context, ms: dict[str, Any]) -> set[FieldPath]:
    """The paths the other denying ModelServing rules find fault with (computed only when this
    rule found something, so the common case pays nothing)."""
    paths: set[FieldPath] = set()
    views = Views(req)  # the other rules share one shaping of the object, as in the engine
    for rule in REGISTRY.match("validate", MODELSERVING_GROUP, "modelservings", "", req.operation):
        if rule.name == RULE or rule.kind != "object" or ctx.actions.get(rule.name, "deny") != "deny":
            continue
        paths.update(e.path for e in rule.judge(req, ctx, views).errors)
    return paths


def judge_pod_templates(req: Request, ctx: Context) -> list[FieldError]:
    """The rule `modelservings.pod-templates` (registered in `modelservings`, its family's module)."""
    ms = req.object
    if type(ms) is not dict:
        return []
    old = req.old_object if req.operation == "UPDATE" and type(req.old_object) is dict else None
    errs: list[FieldError] = []
    for cp in controller_pods(ms, _ratchet(old) if old is not None else None):
        errs += judge(cp)
    if not errs:
        return errs
    elsewhere = _reported_elsewhere(req, ctx, ms)
    out: list[FieldError] = []
    for e in errs:
        if e.path in elsewhere:
            continue
        if e.path.parts[:3] != ROLES.parts and e in out:
            continue  # a ModelServing-level finding, made by the entry and the worker pod alike
        out.append(e)
    return out
