"""The controllers that own pods, and which of them the scale-in scores: a pod's controller
reference, the built-in controller types, and those that sum their pods' costs (Kthena's
ModelServing, per ServingGroup and Role replica; costs.summed lifts their costs above 0). Pure:
cluster.py decides from these which pods it scores, ranking.py how each controller orders them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..kthena import MODELSERVING

REPLICASET = ("apps", "ReplicaSet")
BUILTIN_TYPES = frozenset({REPLICASET, MODELSERVING})
SUMMED_TYPES = frozenset({MODELSERVING})  # controllers that sum their pods' costs per unit


def controller_ref(pod: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(apiVersion, kind, name) of the pod's controller owner."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("apiVersion", ""), ref.get("kind", ""), ref.get("name", "")
    return None


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]
