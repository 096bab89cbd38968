"""Pod rules: default the gang scheduler so Volcano, not kube-scheduler, places gang members."""

from __future__ import annotations

from typing import Any

from ..admission.review import Request
from .context import Context
from .registry import REGISTRY

MODELSERVING_NAME_LABEL = "modelserving.volcano.sh/name"
GANG_LABEL = "servinggate.io/gang"
SKIP_LABEL = "servinggate.io/skip"


def in_scope(req: Request, pod: dict[str, Any], ctx: Context) -> bool:
    """Pods of a ModelServing or opted in with servinggate.io/gang, outside skipped namespaces."""
    if req.namespace in ctx.settings.skip_namespaces:
        return False
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(SKIP_LABEL) == "true":
        return False
    return MODELSERVING_NAME_LABEL in labels or GANG_LABEL in labels


@REGISTRY.mutator("pods.default-scheduler", group="", resource="pods", operations=["CREATE"], versions=["v1"])
def default_scheduler(req: Request, pod: dict[str, Any], ctx: Context) -> list[str]:
    if not in_scope(req, pod, ctx):
        return []
    spec = pod.setdefault("spec", {})
    current = spec.get("schedulerName") or ""
    wanted = ctx.settings.scheduler_name
    if current in ("", "default-scheduler"):
        spec["schedulerName"] = wanted
        return [f"servinggate: set spec.schedulerName to {wanted!r} for gang scheduling"]
    if current != wanted:
        return [f"servinggate: spec.schedulerName {current!r} kept; gang scheduling needs {wanted!r}"]
    return []
