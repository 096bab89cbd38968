"""What the API server removes from a Pod before it validates it, minor by minor.

Two removals, both silent on the server and both told here as `Dropped` records:

- unknown fields: JSON decoding drops a field the minor's schema does not have (`FIELDS` of
  versions.py). Kthena's controller creates pods with client-go's default field validation, so
  the server drops such a field with a warning and judges the rest: a 1.28 server given a
  `preStop` whose only handler is `sleep` sees an empty hook (`must specify a handler type`).
- disabled fields: `dropDisabledFields` (pkg/api/pod/util.go, kubernetes/kubernetes 1.28 to 1.37)
  drops on create each field whose feature gate is off (`GATED_FIELDS`), with upstream's few
  special cases: a `sleep` handler takes its hook along when no other handler is left
  (dropPodLifecycleSleepAction), a `stopSignal` its emptied `lifecycle` (dropContainerStopSignals),
  ContainerRestartRules keeps an init container's `restartPolicy: Always`
  (dropContainerRestartRules), and an image volume goes with the mounts naming it
  (dropImageVolumes). The `...InUse(oldPodSpec)` exceptions never apply: a pod is always new.
  (Removing an image volume shifts the volumes after it: an error in one of those is reported at
  its index in the list the server validates, as the server itself would.)

On a cluster newer than the newest minor we mirror (`opts.cluster`), a field that cluster's
schema has and the judged minor's lacks is neither: the cluster keeps it and judges it, our port
cannot, so it is left in place and told as `kept` ("not validated"), never as dropped.

On the server decoding comes before the v1 defaults and the gate drops after them; the defaults
neither add nor read a field either removal takes, so `drop_all` makes both in one walk before
them (the fields simply removed, from one trie per minor, then the special cases, each of which
first looks whether the spec has its field at all). Paths are relative to the PodSpec; each
function changes the spec in place.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

from ..kubeversion import NEWEST
from .errors import FieldPath
from .options import PodOptions
from .versions import FIELDS, GATED_FIELDS, has_field

_HANDLERS = ("exec", "httpGet", "tcpSocket")
Path = tuple[str | int, ...]
Found = list[tuple[Path, str]]  # (where, why)


class Dropped(NamedTuple):
    """A field the API server removes, or with `kept` one it keeps that our port cannot judge (a
    field of a cluster newer than the newest minor we mirror)."""

    path: Path
    reason: str
    kept: bool = False

    def warning(self, at: FieldPath) -> str:
        """The review warning for the field found at `at` (the caller's path of `self.path`)."""
        return f"{at}: {'not validated' if self.kept else 'dropped'}: {self.reason}"


class _Node:
    """A trie of field paths: `children` by key, `each` for every item of a list, `why` (the
    reason it is removed) where a path ends."""

    __slots__ = ("children", "each", "why")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.each: _Node | None = None
        self.why: str | None = None

    def add(self, path: str, why: str) -> None:
        node = self
        for piece in path.split("."):
            listed = piece.endswith("[]")
            key = piece[:-2] if listed else piece
            node = node.children.setdefault(key, _Node())
            if listed:
                node.each = node.each or _Node()
                node = node.each
        node.why = why

    def freeze(self) -> tuple[tuple[str, _Node], ...]:
        return tuple(self.children.items())


def _remove(node: Any, trie: _Node, at: list[str | int], found: Found, *, keep: bool = False) -> None:
    """Remove from `node` every field `trie` names (with `keep`, leave it), noting each (its path,
    why). The path is built only for what is found (a spec with none of the fields costs a lookup
    per key)."""
    if type(node) is not dict:
        return  # a type error validation reports
    for key, sub in trie.children.items():
        value = node.get(key)
        if value is None:
            continue
        if sub.why is not None:
            if not keep:
                del node[key]
            found.append((tuple(at) + (key,), sub.why))
            continue
        at.append(key)
        if sub.children:
            _remove(value, sub, at, found, keep=keep)
        each = sub.each
        if each is not None and type(value) is list:
            only = next(iter(each.children)) if len(each.children) == 1 else None
            for i, item in enumerate(value):
                if only is not None and (type(item) is not dict or only not in item):
                    continue  # the one key that matters is absent (most env vars: no valueFrom)
                at.append(i)
                _remove(item, each, at, found, keep=keep)
                at.pop()
        at.pop()


def _newer(opts: PodOptions) -> str:
    return (
        ""
        if opts.cluster is None
        else (f" (the cluster runs Kubernetes {opts.cluster}, newer than {NEWEST}, the newest whose Pod validation we mirror: judged as {NEWEST})")
    )


def _kept_why(pattern: str, opts: PodOptions) -> str:
    added = FIELDS[pattern][0]
    return (
        f"Kubernetes {opts.cluster} has this Pod field (added in 1.{added}) and {opts.version}, the newest whose Pod validation we mirror,"
        " has not: the API server keeps it and judges it; we judge the rest of the Pod"
    )


def _unknown_why(pattern: str, opts: PodOptions) -> str:
    added, removed = FIELDS[pattern]
    when = f"removed in 1.{removed}" if removed is not None and opts.version.minor >= removed else f"added in 1.{added}"
    return f"Kubernetes {opts.version} has no such Pod field ({when}){_newer(opts)}"


def _gate_why(gate: str, opts: PodOptions) -> str:
    return f"the feature gate {gate} is off by default in Kubernetes {opts.version}, so the API server drops it{_newer(opts)}"


_KINDS = ("containers", "initContainers", "ephemeralContainers")
ContainerDrop = Callable[[Path, dict[str, Any], str, Found], None]


def _sleep(at: Path, c: dict[str, Any], why: str, found: Found) -> None:
    """dropPodLifecycleSleepAction: the hook goes too when `sleep` was its only handler."""
    lifecycle = c.get("lifecycle")
    if type(lifecycle) is not dict:
        return
    for hook in ("preStop", "postStart"):
        handler = lifecycle.get(hook)
        if type(handler) is not dict or "sleep" not in handler:
            continue
        del handler["sleep"]
        if all(handler.get(kind) is None for kind in _HANDLERS):
            del lifecycle[hook]
            found.append((at + ("lifecycle", hook), why))
        else:
            found.append((at + ("lifecycle", hook, "sleep"), why))


def _stop_signal(at: Path, c: dict[str, Any], why: str, found: Found) -> None:
    """dropContainerStopSignals: an emptied `lifecycle` goes too."""
    lifecycle = c.get("lifecycle")
    if type(lifecycle) is dict and "stopSignal" in lifecycle:
        del lifecycle["stopSignal"]
        found.append((at + ("lifecycle", "stopSignal"), why))
        if not any(v is not None for v in lifecycle.values()):
            del c["lifecycle"]


def _restart_rules(at: Path, c: dict[str, Any], why: str, found: Found) -> None:
    """dropContainerRestartRules: an init container keeps `restartPolicy: Always` (a sidecar)."""
    sidecar = at[0] == "initContainers" and c.get("restartPolicy") == "Always"
    keys: tuple[str, ...] = ("restartPolicyRules",) if sidecar else ("restartPolicy", "restartPolicyRules")
    for key in keys:
        if key in c:
            del c[key]
            found.append((at + (key,), why))


def _image_volumes(spec: dict[str, Any], why: str, found: Found) -> None:
    """dropImageVolumes: the volume and every mount of it go."""
    volumes = spec.get("volumes")
    if type(volumes) is not list:
        return
    names = {v.get("name") for v in volumes if type(v) is dict and v.get("image") is not None}
    if not names:
        return
    found += [(("volumes", i), why) for i, v in enumerate(volumes) if type(v) is dict and v.get("image") is not None]
    spec["volumes"] = [v for v in volumes if not (type(v) is dict and v.get("image") is not None)]
    for kind in _KINDS:
        listed = spec.get(kind)
        for c in listed if type(listed) is list else ():
            mounts = c.get("volumeMounts") if type(c) is dict else None
            if type(mounts) is list:
                c["volumeMounts"] = [m for m in mounts if not (type(m) is dict and m.get("name") in names)]


# The drops that do more than remove a field: per container (with the container keys that can
# concern them, so a container with none costs one test), and the pod's image volumes.
_PER_CONTAINER: dict[str, tuple[ContainerDrop, tuple[str, ...]]] = {
    "PodLifecycleSleepAction": (_sleep, ("lifecycle",)),
    "ContainerStopSignals": (_stop_signal, ("lifecycle",)),
    "ContainerRestartRules": (_restart_rules, ("restartPolicy", "restartPolicyRules")),
}
_SPECIAL = set(_PER_CONTAINER) | {"ImageVolume"}


class _Plan(NamedTuple):
    unknown: _Node  # what JSON decoding alone drops (strict decoding refuses it instead)
    both: _Node
    kept: _Node  # on a newer cluster, its fields the minor judged as lacks: kept, not validated
    per_container: tuple[tuple[ContainerDrop, str], ...]
    container_keys: frozenset[str]
    image_volumes: str | None  # why, when ImageVolume is off


@cache
def _plan(opts: PodOptions) -> _Plan:
    """What `opts`' minor removes, computed once per minor."""
    unknown, both, kept = _Node(), _Node(), _Node()
    for pattern in FIELDS:
        if not has_field(pattern, opts.version) and opts.cluster is not None and has_field(pattern, opts.cluster):
            kept.add(pattern, _kept_why(pattern, opts))
        elif not has_field(pattern, opts.version):
            why = _unknown_why(pattern, opts)
            unknown.add(pattern, why)
            both.add(pattern, why)
    off = [gate for gate in GATED_FIELDS if opts.is_off(gate)]
    for gate in off:
        if gate not in _SPECIAL:
            for pattern in GATED_FIELDS[gate]:
                both.add(pattern, _gate_why(gate, opts))
    per_container = tuple((_PER_CONTAINER[gate][0], _gate_why(gate, opts)) for gate in off if gate in _PER_CONTAINER)
    keys = frozenset(key for gate in off if gate in _PER_CONTAINER for key in _PER_CONTAINER[gate][1])
    images = _gate_why("ImageVolume", opts) if "ImageVolume" in off else None
    return _Plan(unknown, both, kept, per_container, keys, images)


def _walk(spec: Any, trie: _Node, plan: _Plan | None) -> list[Dropped]:
    found: Found = []
    _remove(spec, trie, [], found)
    if plan is not None and type(spec) is dict:
        if plan.per_container:
            keys = plan.container_keys
            for kind in _KINDS:
                listed = spec.get(kind)
                for i, c in enumerate(listed if type(listed) is list else ()):
                    if type(c) is dict and not keys.isdisjoint(c):
                        for drop, why in plan.per_container:
                            drop((kind, i), c, why, found)
        if plan.image_volumes is not None:
            _image_volumes(spec, plan.image_volumes, found)
    kept: Found = []
    if plan is not None and plan.kept.children:
        _remove(spec, plan.kept, [], kept, keep=True)
    return [Dropped(path, why) for path, why in found] + [Dropped(path, why, kept=True) for path, why in kept]


def drop_all(spec: Any, opts: PodOptions) -> list[Dropped]:
    """Both removals in one walk (see the module doc)."""
    plan = _plan(opts)
    return _walk(spec, plan.both, plan)
