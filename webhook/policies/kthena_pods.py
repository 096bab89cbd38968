"""The pods Kthena's ModelServing controller creates from a role's templates, built as it builds
them (reference kthena.md §3; GenerateEntryPod / GenerateWorkerPod), so a rule can judge them as
the API server will and `check` can preview them.

For each role: the entry pod and, with `workerReplicas > 0`, the first worker, of ServingGroup 0 and
role replica 0, named `<ms>-0-<role>-0-<k>`. What the controller adds to the template:

- labels `name`, `group-name`, `role`, `role-id`, `revision`, `role-template-hash` (and `entry` on
  the entry pod), with the template's labels merged over them, so a template's value of one of
  these wins (kthena `pkg/model-serving-controller/utils/utils.go`, createBasePod, then
  addPodLabelAndAnnotation); the two hashes are Go structures spew-dumped and hashed, which cannot
  be reproduced here, so they hold a stand-in of the same kind (a valid label value); no rule
  reads them;
- the template's annotations, then, when Kthena makes a PodGroup (the ModelServing's scheduler is
  literally `volcano` and the PodGroup CRD is installed), `scheduling.k8s.io/group-name` and
  `volcano.sh/task-spec` set over whatever the template had (`controller/model_serving_controller.go`,
  CreatePodsByRole, calls `podgroupmanager/manager.go` AnnotatePodWithPodGroup after the pod is
  built), so the controller's PodGroup annotations win;
- a controller owner reference to the ModelServing (its uid, or a stand-in offline);
- `spec.schedulerName` overwritten with the ModelServing's (the CRD defaults it to `volcano`);
- `GROUP_SIZE`, `ENTRY_ADDRESS` and `WORKER_INDEX` appended to the env of every container and init
  container, after removing the template's variables of those names (addEnvVars), so a template
  that sets one is overridden, never duplicated.

Each template is copied once (a plain walk of the JSON tree, no serialisation); the pod owns
its copy, so a caller may default and edit it in place. Input of the wrong shape is carried into
the pod as it is, for validation to report at its path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ..admission.fields import FieldPath
from ..kthena import (
    ANNOTATION_GROUP,
    ANNOTATION_TASK,
    ENV_ENTRY_ADDRESS,
    ENV_GROUP_SIZE,
    ENV_WORKER_INDEX,
    KTHENA_GANG_SCHEDULER,
    LABEL_ENTRY,
    LABEL_GROUP,
    LABEL_NAME,
    LABEL_REVISION,
    LABEL_ROLE,
    LABEL_ROLE_ID,
    LABEL_ROLE_TEMPLATE_HASH,
    MODELSERVING_API_VERSION,
    MODELSERVING_KIND,
)
from ..shapes import as_dict, objects

ROLES = FieldPath.of("spec", "template", "roles")
TEMPLATES = ("entryTemplate", "workerTemplate")
DEFAULT_SCHEDULER = KTHENA_GANG_SCHEDULER  # the CRD's default for spec.schedulerName
HASH_STAND_IN = "standin"  # for the revision and role-template-hash labels (see the module doc)
UID_STAND_IN = "00000000-0000-0000-0000-000000000000"  # offline, a ModelServing has no uid yet
_ADDED_ENV = frozenset({ENV_GROUP_SIZE, ENV_ENTRY_ADDRESS, ENV_WORKER_INDEX})


class ControllerPod(NamedTuple):
    """One pod the controller makes from `spec.template.roles[role].<which>` (at `path`).

    `kept_env[(list, i)]` is set for a container whose template env had variables the controller
    replaced: the template index of each variable the pod keeps, in order, so an error at the
    pod's `env[k]` can be reported at the template's own entry."""

    role: int
    role_name: str
    which: str
    path: FieldPath
    template: Any
    pod: dict[str, Any]
    kept_env: dict[tuple[str, int], list[int]]


# (role index, role, which) -> build this pod? (a rule's ratcheting on UPDATE)
Select = Callable[[int, dict[str, Any], str], bool]


def copy_tree(value: Any) -> Any:
    """A copy of a decoded JSON (or YAML) tree: new dicts and lists, shared scalars. Each dict or
    list is copied whole at once, then only its dicts and lists are copied again, so a scalar
    costs no call."""
    if type(value) is dict:
        out = dict(value)
        for k, v in out.items():
            if type(v) is dict or type(v) is list:
                out[k] = copy_tree(v)  # replaces a value: the dict keeps its size while walked
        return out
    if type(value) is list:
        return [copy_tree(v) if type(v) is dict or type(v) is list else v for v in value]
    return value


def modelserving_name(ms: dict[str, Any]) -> str:
    """The ModelServing's name; offline, a generateName-only object stands in its 5 random characters."""
    meta = as_dict(ms.get("metadata"))
    name = meta.get("name")
    if type(name) is str and name:
        return name
    prefix = meta.get("generateName")
    return prefix + "xxxxx" if type(prefix) is str and prefix else ""


def _add_env(containers: Any, key: str, added: list[dict[str, str]], kept_env: dict[tuple[str, int], list[int]]) -> None:
    for i, c in objects(containers):
        env = c.get("env")
        if env is None:
            c["env"] = [dict(v) for v in added]
            continue
        if type(env) is not list:
            continue  # validation reports the template's env as it is
        kept = [j for j, v in enumerate(env) if not (type(v) is dict and type(v.get("name")) is str and v["name"] in _ADDED_ENV)]
        if len(kept) != len(env):
            kept_env[(key, i)] = kept
            env[:] = [env[j] for j in kept]
        env.extend(dict(v) for v in added)


def pod_name(name: str, role_name: str, entry: bool) -> str:
    """`<ms>-0-<role>-0-<k>`: the entry pod (k = 0) or the first worker (k = 1) of group 0, replica 0."""
    return f"{name}-0-{role_name}-0-{0 if entry else 1}"


def _added(name: str, role_name: str, entry: bool, scheduler: Any, podgroup_crd: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """The labels the controller gives a pod before merging the template's, and the PodGroup
    annotations it sets after (none unless it makes a PodGroup)."""
    group, role_id = f"{name}-0", f"{role_name}-0"
    labels: dict[str, Any] = {
        LABEL_NAME: name,
        LABEL_GROUP: group,
        LABEL_ROLE: role_name,
        LABEL_ROLE_ID: role_id,
        LABEL_REVISION: HASH_STAND_IN,
        LABEL_ROLE_TEMPLATE_HASH: HASH_STAND_IN,
    }
    if entry:
        labels[LABEL_ENTRY] = "true"
    podgroup = scheduler == KTHENA_GANG_SCHEDULER and podgroup_crd
    annotations: dict[str, Any] = {ANNOTATION_GROUP: group, ANNOTATION_TASK: role_id} if podgroup else {}
    return labels, annotations


def added_metadata(ms: dict[str, Any], role: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The labels the controller gives the entry pod of `role` before merging its template's, and
    the PodGroup annotations it sets after; its worker pods get the same but the `entry` label.
    (A rule judging every pod of a ModelServing judges these once per role: they repeat from pod
    to pod.)"""
    scheduler = as_dict(ms.get("spec")).get("schedulerName", DEFAULT_SCHEDULER)
    return _added(modelserving_name(ms), role_name(role), True, scheduler)


def _metadata(
    ms: dict[str, Any], template: Any, name: str, role_name: str, entry: bool, scheduler: Any, owned: bool = True, podgroup_crd: bool = True
) -> dict[str, Any]:
    """The pod's metadata; without its namespace and owner reference unless `owned`."""
    ms_meta = as_dict(ms.get("metadata"))
    labels, annotations = _added(name, role_name, entry, scheduler, podgroup_crd)
    meta: dict[str, Any] = {"name": pod_name(name, role_name, entry)}
    namespace = ms_meta.get("namespace") if owned else None
    if type(namespace) is str and namespace:
        meta["namespace"] = namespace
    template_meta = template.get("metadata") if type(template) is dict else None
    # labels: the template's over the controller's; annotations: the PodGroup ones over the template's
    for key, own, template_wins in (("labels", labels, True), ("annotations", annotations, False)):
        theirs = template_meta.get(key) if type(template_meta) is dict else None
        if theirs is None:
            pass
        elif type(theirs) is not dict:
            own = theirs  # not a map: carried as it is, for validation to report
        elif template_wins:
            own.update(theirs)
        else:
            own = {**theirs, **own}
        if own:
            meta[key] = own
    if not owned:
        return meta
    uid = ms_meta.get("uid")
    meta["ownerReferences"] = [
        {
            "apiVersion": MODELSERVING_API_VERSION,
            "kind": MODELSERVING_KIND,
            "name": name,
            "uid": uid if type(uid) is str and uid else UID_STAND_IN,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return meta


def pod_metadata(ms: dict[str, Any], role: dict[str, Any], which: str, *, owned: bool = True, podgroup_crd: bool = True) -> dict[str, Any]:
    """The metadata of the pod the controller makes from `role.<which>` (a new dict; the
    template's label and annotation maps are merged into new ones, never changed). Without
    `owned`, only its name, labels and annotations: what Pod validation reads of it. Without
    `podgroup_crd` (the cluster has no PodGroup CRD), no PodGroup annotations."""
    scheduler = as_dict(ms.get("spec")).get("schedulerName", DEFAULT_SCHEDULER)
    return _metadata(ms, role.get(which), modelserving_name(ms), role_name(role), which == "entryTemplate", scheduler, owned, podgroup_crd)


def pod_spec(ms: dict[str, Any], role: dict[str, Any], which: str) -> tuple[Any, dict[tuple[str, int], list[int]]]:
    """The spec of the pod the controller makes from `role.<which>`: the template's own copy with
    the scheduler and the controller's env vars; and `kept_env` (see `ControllerPod`)."""
    template = role.get(which)
    pod_spec = copy_tree(template.get("spec")) if type(template) is dict else None
    if pod_spec is None:
        pod_spec = {}  # Go's zero PodSpec, which validation then finds without containers
    kept_env: dict[tuple[str, int], list[int]] = {}
    if type(pod_spec) is dict:
        scheduler = as_dict(ms.get("spec")).get("schedulerName", DEFAULT_SCHEDULER)
        if type(scheduler) is str:
            pod_spec["schedulerName"] = scheduler
        name, namespace = modelserving_name(ms), as_dict(ms.get("metadata")).get("namespace")
        workers = role.get("workerReplicas")
        workers = workers if type(workers) is int else 0
        k = 0 if which == "entryTemplate" else 1
        entry_name = pod_name(name, role_name(role), True)
        added = [
            {"name": ENV_GROUP_SIZE, "value": str(workers + 1)},
            {"name": ENV_ENTRY_ADDRESS, "value": f"{entry_name}.{namespace if type(namespace) is str else ''}"},
            {"name": ENV_WORKER_INDEX, "value": str(k)},
        ]
        for key in ("containers", "initContainers"):
            _add_env(pod_spec.get(key), key, added, kept_env)
    return pod_spec, kept_env


def role_name(role: dict[str, Any]) -> str:
    name = role.get("name")
    return name if type(name) is str else ""


def template_path(i: int, which: str) -> FieldPath:
    """`spec.template.roles[i].<which>`."""
    return ROLES.child(i, which)  # one path built, not two


def controller_pod(ms: dict[str, Any], i: int, role: dict[str, Any], which: str, podgroup_crd: bool = True) -> ControllerPod:
    """The pod the controller makes from `roles[i].<which>`: the entry pod, or the first worker."""
    spec, kept_env = pod_spec(ms, role, which)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata(ms, role, which, podgroup_crd=podgroup_crd), "spec": spec}
    return ControllerPod(i, role_name(role), which, template_path(i, which), role.get(which), pod, kept_env)


def templates_in_use(ms: dict[str, Any], select: Select | None = None) -> Iterator[tuple[int, dict[str, Any], str]]:
    """(role index, role, which) of every role's entry template and, when it has workers, its
    worker template (those `select` keeps): the templates the controller makes pods from."""
    for i, role in objects(as_dict(as_dict(ms.get("spec")).get("template")).get("roles")):
        workers = role.get("workerReplicas")
        for which in TEMPLATES:
            if which == "workerTemplate" and (type(workers) is not int or workers <= 0 or role.get(which) is None):
                continue
            if select is None or select(i, role, which):
                yield i, role, which


def controller_pods(ms: dict[str, Any], select: Select | None = None, *, podgroup_crd: bool = True) -> Iterator[ControllerPod]:
    """Every role's entry pod and, when it has workers, its first worker (those `select` keeps);
    `podgroup_crd`: whether the cluster has the PodGroup CRD (assumed when not known)."""
    for i, role, which in templates_in_use(ms, select):
        yield controller_pod(ms, i, role, which, podgroup_crd)
