"""`modelservings.pod-templates`: refuse a ModelServing whose pods the API server would refuse.
(Registered in `modelservings`, the module of its family, which the webhook configurations follow.)

Kubernetes never validates the pod templates inside a custom resource, and Kthena's controller
only logs the refusal when it creates a pod (volcano-sh/kthena#1789), so a template with
`containerPort: 0` or an uppercase container name is accepted and its pods never appear. This
rule builds each pod as the controller will (`kthena_pods`), prepares it as the cluster's API
server does (drops the fields its minor does not know, applies the v1 Pod defaults, drops the
fields whose feature gate is off there) and runs that minor's Pod validation (`podvalidation`,
1.28 to 1.37; a newer cluster is judged as 1.37) on it. Each dropped field is a review warning at
its template path: the controller's pods are created with the server's default field validation,
which drops such fields too, so a dropped field is never a refusal.

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
from typing import Any, NamedTuple

import orjson

from ..admission.decision import Verdict
from ..admission.fields import FieldError, FieldPath
from ..admission.review import Request
from ..kthena import MODELSERVING_GROUP
from ..names import is_dns1123_label, name_is_dns_subdomain
from ..podvalidation import default_pod_spec, validate_pod_template_spec
from ..podvalidation.drops import Dropped
from ..podvalidation.errors import invalid
from ..podvalidation.meta import surely_valid
from ..podvalidation.options import PodOptions, options_for
from ..podvalidation.podspec import pod_spec_errors
from ..podvalidation.scheduling import merged_label_key_errors
from .context import Context
from .kthena_pods import ROLES, Select, added_metadata, modelserving_name, pod_metadata, pod_name, pod_spec, role_name, template_path, templates_in_use
from .registry import REGISTRY, Views

RULE = "modelservings.pod-templates"
MS_NAME = FieldPath.of("metadata", "name")


class _Spec(NamedTuple):
    """One distinct template spec of a review: the pod spec the controller builds from it (copied,
    its env extended, prepared) and that spec's verdict, found at `path` (its first template),
    and what preparing it dropped (paths under the spec)."""

    written: Any
    shown: bytes | str
    spec: Any
    kept_env: dict[tuple[str, int], list[int]]
    path: FieldPath
    errors: list[FieldError]
    dropped: list[Dropped]


def _shown(written: Any) -> bytes | str:
    """How a spec is written: its JSON text, which tells `1`, `1.0` and `true` apart (`==` does
    not, and validation does) and keeps the order of the keys (errors follow it); `repr` for a
    tree JSON cannot encode (YAML's non-string keys, integers past 64 bits), which does the same.
    (orjson writes a spec of the gang example in under a microsecond, `repr` in about five.)"""
    try:
        return orjson.dumps(written)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return repr(written)


def _same(spec: _Spec, written: Any) -> bool:
    """Written alike: equal, and shown alike (see `_shown`)."""
    return spec.written == written and spec.shown == _shown(written)


def _spec_for(ms: dict[str, Any], role: dict[str, Any], which: str, path: FieldPath, specs: list[_Spec], opts: PodOptions) -> tuple[_Spec, list[FieldError]]:
    """The template's pod spec and its spec errors at `path`: judged once per distinct spec in a
    review. The pods made from equal specs differ only in the values of the controller's env
    vars, which no check reads, so they share the verdict, moved to each template's own path."""
    template = role[which]
    written = template.get("spec")
    for known in specs:
        if _same(known, written):
            if known.path == path or not known.errors:
                return known, known.errors
            base = len(known.path.parts)
            return known, [replace(e, path=FieldPath(path.parts + e.path.parts[base:])) for e in known.errors]
    spec, kept_env = pod_spec(ms, role, which)
    dropped = default_pod_spec(spec, opts)
    errors = pod_spec_errors(spec, path.child("spec"), is_pod=True, opts=opts) if type(spec) is dict else []
    known = _Spec(written, _shown(written), spec, kept_env, path, errors, dropped)
    specs.append(known)
    return known, errors


class _Review:
    """What one review has judged so far: its distinct template specs, and whether the metadata
    the controller adds to the pods of each role (by role name) is surely valid. Lives as long as
    the review; nothing is kept across reviews."""

    __slots__ = ("specs", "added_fine", "opts", "warnings")

    def __init__(self, opts: PodOptions) -> None:
        self.specs: list[_Spec] = []
        self.added_fine: dict[str, bool] = {}
        self.opts = opts
        self.warnings: list[str] = []

    def metadata_fine(self, ms: dict[str, Any], role: dict[str, Any], template: dict[str, Any]) -> bool:
        """True when the metadata of the pod made from `template` is surely valid (`surely_valid`
        of both its sources: what the controller adds for the role, judged once per role, and
        the template's own labels and annotations)."""
        key = role_name(role)
        fine = self.added_fine.get(key)
        if fine is None:
            fine = self.added_fine[key] = surely_valid(*added_metadata(ms, role))
        if not fine:
            return False
        meta = template.get("metadata")
        if meta is None:
            return True
        return type(meta) is dict and surely_valid(meta.get("labels"), meta.get("annotations"))


def judge(ms: dict[str, Any], i: int, role: dict[str, Any], which: str, review: _Review) -> list[FieldError]:
    """The API server's verdict on the pod the controller makes from `roles[i].<which>`, at the
    ModelServing's paths. The pod's metadata is built and judged whole only when it is not
    surely valid (`_Review.metadata_fine`): its verdict is then that of its spec alone."""
    path = template_path(i, which)
    template = role.get(which)
    if type(template) is not dict:
        return validate_pod_template_spec(template, path, is_pod=True)  # its type error
    known, spec_errors = _spec_for(ms, role, which, path, review.specs, review.opts)
    if known.dropped:
        spec_path = path.child("spec")
        review.warnings += [d.warning(_env_path(spec_path, known.kept_env, d.path)) for d in known.dropped]
    if type(known.spec) is dict and review.metadata_fine(ms, role, template):
        errs = list(spec_errors)
        affinity = known.spec.get("affinity")
        if known.spec.get("topologySpreadConstraints") or (type(affinity) is dict and (affinity.get("podAffinity") or affinity.get("podAntiAffinity"))):
            # what the pod's labels append to its selectors (the other path's validation does it)
            labels = pod_metadata(ms, role, which, owned=False).get("labels")
            errs += merged_label_key_errors(known.spec, labels, path.child("spec"), opts=review.opts)
        name = pod_name(modelserving_name(ms), role_name(role), which == "entryTemplate")
    else:
        meta = pod_metadata(ms, role, which, owned=False)  # validation reads its name, labels and annotations
        errs = validate_pod_template_spec(
            {"metadata": meta, "spec": known.spec}, path, is_pod=True, opts=review.opts, spec_errors=spec_errors if type(known.spec) is dict else None
        )
        name = meta["name"]
    problems = name_is_dns_subdomain(name)
    if problems:
        at = path.parts[:-1] + ("name",) if is_dns1123_label(role_name(role)) else MS_NAME.parts
        errs += [invalid(FieldPath(at), name, m) for m in problems]
    return [_at_template(path, template, known.kept_env, e) for e in errs] if errs else errs


def _at_template(path: FieldPath, template: dict[str, Any], kept_env: dict[tuple[str, int], list[int]], e: FieldError) -> FieldError:
    parts, base = e.path.parts, len(path.parts)
    if parts[:base] != path.parts:
        return e
    rel = parts[base:]
    if rel[:2] == ("metadata", "labels") and not _from_template_labels(template, e.value):
        return replace(e, path=MS_NAME)  # a controller label: the ModelServing's name made it
    if len(rel) >= 5 and rel[0] == "spec" and rel[3] == "env" and type(rel[4]) is int:
        return replace(e, path=_env_path(path.child("spec"), kept_env, rel[1:]))
    return e


def _env_path(spec_path: FieldPath, kept_env: dict[tuple[str, int], list[int]], rel: tuple[Any, ...]) -> FieldPath:
    """`spec_path` + `rel` (a path under the built pod's spec), its env index turned back into the
    template's own (the controller replaces some variables and appends its own)."""
    if len(rel) >= 4 and rel[2] == "env" and type(rel[3]) is int:
        kept = kept_env.get((str(rel[0]), int(rel[1])))
        if kept is not None:
            k = rel[3]
            tail = (kept[k],) + rel[4:] if k < len(kept) else ()
            return FieldPath(spec_path.parts + rel[:3] + tail)
    return FieldPath(spec_path.parts + tuple(rel))


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


def judge_pod_templates(req: Request, ctx: Context) -> list[FieldError] | Verdict:
    """The rule `modelservings.pod-templates` (registered in `modelservings`, its family's module),
    judged as the cluster's Kubernetes minor (`ctx.kubernetes_version`)."""
    ms = req.object
    if type(ms) is not dict:
        return []
    old = req.old_object if req.operation == "UPDATE" and type(req.old_object) is dict else None
    errs: list[FieldError] = []
    review = _Review(options_for(ctx.kubernetes_version, ctx.feature_gates))
    for i, role, which in templates_in_use(ms, _ratchet(old) if old is not None else None):
        errs += judge(ms, i, role, which, review)
    if not errs:
        return Verdict(warnings=review.warnings) if review.warnings else errs
    elsewhere = _reported_elsewhere(req, ctx, ms)
    out: list[FieldError] = []
    for e in errs:
        if e.path in elsewhere:
            continue
        if e.path.parts[:3] != ROLES.parts and e in out:
            continue  # a ModelServing-level finding, made by the entry and the worker pod alike
        out.append(e)
    return Verdict(errors=out, warnings=review.warnings) if review.warnings else out
