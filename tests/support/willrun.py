"""Cluster facts for the will-it-run tests: a ProjectionStore filled from plain dicts, as the
webhook's watcher, `audit` and `check --cluster` fill theirs."""

from __future__ import annotations

import copy
from typing import Any

from webhook.admission.review import make_request
from webhook.policies import Context, DictLookups, engine
from webhook.policies.clusterfacts import ClusterFacts
from webhook.policies.projections import KEPT
from webhook.policies.settings import PolicySettings
from webhook.policies.store import ProjectionStore


def store_of(*objects: dict[str, Any], missing: tuple[str, ...] = (), unlisted: tuple[str, ...] = ()) -> ProjectionStore:
    """Every kept kind listed with the objects of it given; kinds named in `missing` not
    installed, in `unlisted` not listed yet."""
    store = ProjectionStore()
    for entry in KEPT:
        if entry.kind in unlisted:
            continue
        if entry.kind in missing:
            store.mark_missing(entry)
            continue
        group = entry.group
        store.replace(entry, [o for o in objects if o.get("kind") == entry.kind and str(o.get("apiVersion") or "").rpartition("/")[0] == group])
    return store


def ctx_of(*objects: dict[str, Any], rule_actions: tuple[tuple[str, str], ...] = (), settings: dict[str, Any] | None = None, **kw: Any) -> Context:
    """A context whose lookups and facts hold `objects`; `settings`: other PolicySettings fields."""
    store = store_of(*objects, **kw)
    return Context(settings=PolicySettings(rule_actions=rule_actions, **(settings or {})), lookups=DictLookups(objects), facts=ClusterFacts(store))


def judge(obj: dict[str, Any], ctx: Context, *, old: dict[str, Any] | None = None):
    req = make_request(copy.deepcopy(obj), operation="UPDATE" if old is not None else "CREATE", old=old)
    return engine.validate(req, ctx)


def found(decision, rule: str) -> list[tuple[str, str]]:
    """(field, detail) of every finding of `rule`, denied or softened to a warning."""
    out = [(str(e.error.field), e.error.detail) for e in decision.errors if e.rule == rule]
    out += [(str(n.error.field) if n.error else "", n.error.detail if n.error else n.text) for n in decision.warnings if n.rule == rule]
    return out


def texts(decision, rule: str) -> list[str]:
    return [n.text for n in decision.warnings if n.rule == rule]


def node(name: str, allocatable: dict[str, str], labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": allocatable},
    }


def queue(name: str, state: str = "Open", parent: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"parent": parent} if parent else {},
        "status": {"state": state},
    }


def hypernode(name: str, tier: int, tier_name: str = "", members: list[dict] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"tier": tier, "members": members or []}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name}, "spec": spec}


def podgroup_crd(sub_group_policy: bool) -> dict[str, Any]:
    props: dict[str, Any] = {"queue": {"type": "string"}}
    if sub_group_policy:
        props["subGroupPolicy"] = {"type": "array"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "podgroups.scheduling.volcano.sh"},
        "spec": {"versions": [{"name": "v1beta1", "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": props}}}}}]},
    }


def hpa(name: str, target: str, *, namespace: str = "default", kind: str = "ModelServing", owner: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": owner, "uid": "u"}]
    api = "workload.serving.volcano.sh/v1alpha1" if kind == "ModelServing" else "autoscaling/v2"
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
        "spec": {
            "scaleTargetRef": {"apiVersion": api, "kind": kind, "name": target},
            "minReplicas": 1,
            "maxReplicas": 4,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
        },
    }


def scaled_object(name: str, target: str, *, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "name": target},
            "triggers": [{"type": "cpu", "metadata": {"value": "50"}}],
        },
    }


def cron_hpa(name: str, target: str, kind: str = "ModelServing", *, namespace: str = "default") -> dict[str, Any]:
    api = "workload.serving.volcano.sh/v1alpha1" if kind == "ModelServing" else "autoscaling/v2"
    return {
        "apiVersion": "autoscaling.alibabacloud.com/v1beta1",
        "kind": "CronHorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"scaleTargetRef": {"apiVersion": api, "kind": kind, "name": target}, "jobs": [{"name": "up", "schedule": "0 0 8 * * *", "targetSize": 3}]},
    }


def policy(name: str, target: str, *, roles: tuple[str, ...] = (), namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"metrics": [{"name": "load", "targetValue": "10"}]}
    ref = {"kind": "ModelServing", "name": target}
    if roles:
        spec["disaggregatedTarget"] = {"targetRef": ref, "roles": {r: {"minReplicas": 1, "maxReplicas": 3, "metricSources": {"load": {}}} for r in roles}}
    else:
        spec["homogeneousTarget"] = {"target": {"targetRef": ref}, "minReplicas": 1, "maxReplicas": 3}
    return {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "AutoscalingPolicy", "metadata": {"name": name, "namespace": namespace}, "spec": spec}
