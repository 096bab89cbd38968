"""Kthena's binpack scale-down, as `plan` can see it from a snapshot: the ServingGroup and Role
states Kthena's ModelServing controller ranks by, and the `partition` that protects the first
groups. Pure: pod views and ModelServing objects in, states and numbers out; ranking.py orders.

A port of kthena (3cc05728, 2026-08-21) `pkg/model-serving-controller/controller/`:
`binpack_scaledown.go` (status priority, summed `strconv.Atoi` costs, higher index first),
`model_serving_controller.go` scaleDownServingGroups and scaleDownRoles (the first `partition`
groups in ordinal order are protected and go last; Deleting roles are skipped; a role's
partition only under `RoleRollingUpdate`), getPartition (`intstr.GetScaledValueFromIntOrPercent`,
rounded up), and how its datastore moves a group to Running and out of it (updatePod:
handleReadyPod, handleErrorPod; checkServingGroupReady, checkRoleReady).

Kthena keeps the state in memory, driven by pod events; a snapshot has only the pods as they are
now, so the state is read back from them:

- **Deleting**: every pod of the group (or role) is being deleted (deleteServingGroup and
  DeleteRole delete them all at once);
- **Running**: every pod is live and was seen running: Running (ready or not: an unready pod
  sends no event that moves the group), Succeeded or Unknown (no event either); none Pending (a
  pod not yet ready, or one recreated, which moved the group out of Running), Failed, deleted by
  Kthena, or restarted and not running-and-ready (handleErrorPod); with the ModelServing known,
  every role of its template has `replicas` role replicas of 1 + `workerReplicas` pods each
  (checkServingGroupReady; a role scaling moves the group to Scaling);
- otherwise not running (Creating, Scaling: the same priority to Kthena). A group whose pods are
  all gone or terminated is not running either.

A pod being deleted beside live pods of its role replica was deleted by someone else (a user, an
eviction, a drain): Kthena deletes a role replica's pods all at once. Kthena has not seen it yet
(updatePod returns at once for a pod with a deletionTimestamp, deletePod acts once the pod is
gone), so it moves nothing: the pod is read by its phase, as Kthena last saw it. Seen on the real
controller (tests/e2e, a worker held terminating by a finalizer: its group stayed Running).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..kthena import LABEL_ROLE, LABEL_ROLE_ID
from ..shapes import as_dict
from .goints import INT64_MAX, INT64_MIN, go_int


class ServingPod(Protocol):
    """What the states are read from (cluster.PodView has it; cluster.py imports this module)."""

    name: str
    phase: str
    ready: bool
    terminating: bool
    restarted: bool
    labels: dict[str, str]


RUNNING, DELETING, NOT_RUNNING = "Running", "Deleting", "not running"


@dataclass(frozen=True, slots=True)
class RoleSpec:
    """One role of a ModelServing's template: what Kthena checks a role replica against."""

    replicas: int
    workers: int
    partition: Any  # the raw IntOrString, or None


@dataclass(frozen=True, slots=True)
class ServingSpec:
    """What Kthena's scale-down reads from a ModelServing."""

    replicas: int
    partition: Any  # spec.rolloutStrategy.rollingUpdateConfiguration.partition, raw
    role_rolling: bool  # spec.rolloutStrategy.type == RoleRollingUpdate
    roles: dict[str, RoleSpec] = field(default_factory=dict)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def serving_spec(obj: Mapping[str, Any]) -> tuple[str, ServingSpec] | None:
    """("namespace/name", the spec) of a ModelServing object; None without a name."""
    meta = as_dict(obj.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    spec = as_dict(obj.get("spec"))
    rollout = as_dict(spec.get("rolloutStrategy"))
    config = as_dict(rollout.get("rollingUpdateConfiguration"))
    listed = as_dict(spec.get("template")).get("roles")
    roles: dict[str, RoleSpec] = {}
    for role in listed if isinstance(listed, list) else ():
        if isinstance(role, dict) and isinstance(role.get("name"), str):
            roles[role["name"]] = RoleSpec(_int(role.get("replicas"), 1), _int(role.get("workerReplicas"), 0), role.get("partition"))
    replicas = _int(spec.get("replicas"), 0)  # modelServingReplicas: nil is 0 (the API server defaults it to 1)
    key = f"{meta.get('namespace') or ''}/{name}"
    return key, ServingSpec(replicas, config.get("partition"), rollout.get("type") == "RoleRollingUpdate", roles)


def scaled_partition(raw: Any, replicas: int) -> int:
    """getPartition: an int as it is, "N%" of `replicas` rounded up
    (intstr.GetScaledValueFromIntOrPercent); absent or malformed is 0, as Kthena leaves it."""
    if raw is None or isinstance(raw, bool):
        return 0
    if isinstance(raw, int):
        return raw if INT64_MIN <= raw <= INT64_MAX else 0
    if not isinstance(raw, str) or not raw.endswith("%"):
        return 0
    value = go_int(raw[:-1])
    if value is None or not INT64_MIN <= value <= INT64_MAX:
        return 0
    return math.ceil(value * replicas / 100)


def group_partition(spec: ServingSpec | None) -> int:
    return scaled_partition(spec.partition, spec.replicas) if spec is not None else 0


def role_partition(spec: ServingSpec | None, role: str) -> int:
    """rolePartition: a role's own partition, only under RoleRollingUpdate."""
    if spec is None or not spec.role_rolling or role not in spec.roles:
        return 0
    r = spec.roles[role]
    return scaled_partition(r.partition, r.replicas)


def _live(p: ServingPod) -> bool:
    return not p.terminating and p.phase not in ("Failed", "Succeeded")


def _deleted_by_kthena(pods: list[ServingPod]) -> set[str]:
    """The terminating pods Kthena is deleting, as far as a snapshot tells: those of a role replica
    whose pods are all being deleted (DeleteRole and deleteServingGroup delete them at once). One
    deleted beside live pods of its role replica Kthena has not seen (see the module doc)."""
    replicas: dict[tuple[str, str], list[ServingPod]] = {}
    for p in pods:
        replicas.setdefault((p.labels.get(LABEL_ROLE, ""), p.labels.get(LABEL_ROLE_ID, "")), []).append(p)
    return {p.name for rs in replicas.values() if all(q.terminating for q in rs) for p in rs}


def _keeps_running(p: ServingPod, deleting: bool) -> bool:
    """Whether this pod leaves its role Running as Kthena tracks it (see the module doc);
    `deleting`: Kthena is deleting it."""
    if deleting or p.phase in ("Failed", "Pending"):
        return False
    if p.restarted and p.phase == "Running" and not p.ready:
        return False  # ContainerRestarted and not running-and-ready: handleErrorPod
    return True


def _state(pods: list[ServingPod], complete: bool) -> tuple[str, str]:
    if pods and all(p.terminating for p in pods):
        return DELETING, "every pod is being deleted"
    if not any(_live(p) for p in pods):
        return NOT_RUNNING, "no live pod"
    deleting = _deleted_by_kthena(pods)
    bad = next((p for p in pods if not _keeps_running(p, p.name in deleting)), None)
    if bad is not None:
        what = "being deleted" if bad.name in deleting else "restarted and not ready" if bad.phase == "Running" else bad.phase
        return NOT_RUNNING, f"pod {bad.name} {what}"
    if not complete:
        return NOT_RUNNING, "role replicas or pods missing"
    return RUNNING, ""


def role_state(pods: list[ServingPod], role: str, spec: ServingSpec | None) -> tuple[str, str]:
    """(RoleStatus, why not Running) of one role replica's pods."""
    want = spec.roles.get(role) if spec is not None else None
    return _state(pods, want is None or len(pods) == 1 + want.workers)


def group_state(pods: list[ServingPod], spec: ServingSpec | None) -> tuple[str, str]:
    """(ServingGroupStatus, why not Running) of one ServingGroup's pods."""
    complete = True
    if spec is not None:
        by_role: dict[str, dict[str, int]] = {}
        for p in pods:
            role, rid = p.labels.get(LABEL_ROLE, ""), p.labels.get(LABEL_ROLE_ID, "")
            if role and rid:
                by_role.setdefault(role, {})[rid] = by_role.get(role, {}).get(rid, 0) + 1
        for name, want in spec.roles.items():
            counts = by_role.get(name, {})
            if len(counts) != want.replicas or any(n != 1 + want.workers for n in counts.values()):
                complete = False
    return _state(pods, complete)
