"""What the API server removes from a Pod before it validates it, minor by minor.

Two removals, both silent on the server and both told here as `Dropped` records:

- `drop_unknown`: JSON decoding drops a field the minor's schema does not have (`FIELDS` of
  versions.py). Kthena's controller creates pods with client-go's default field validation, so
  the server drops such a field with a warning and judges the rest: a 1.28 server given a
  `preStop` whose only handler is `sleep` sees an empty hook (`must specify a handler type`).
- `drop_disabled`: `dropDisabledFields` (pkg/api/pod/util.go, kubernetes/kubernetes 1.28 to 1.34)
  drops on create each field whose feature gate is off (`GATED_FIELDS`), with upstream's few
  special cases: a `sleep` handler takes its hook along when no other handler is left
  (dropPodLifecycleSleepAction), a `stopSignal` its emptied `lifecycle` (dropContainerStopSignals),
  ContainerRestartRules keeps an init container's `restartPolicy: Always`
  (dropContainerRestartRules), and an image volume goes with the mounts naming it
  (dropImageVolumes). The `...InUse(oldPodSpec)` exceptions never apply: a pod is always new.

Decoding comes first (before the v1 defaults), the gate drops after them, as on the server.
Paths are relative to the PodSpec; each function changes the spec in place. Almost no spec has any
of these fields, so each walk is skipped unless the spec's JSON text names one of its fields
(`spec_text`, written once per spec: about a microsecond, against several for the walks).
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any, NamedTuple

import re

import orjson

from ..kubeversion import NEWEST
from .errors import Errors, FieldPath, type_invalid
from .options import PodOptions
from .versions import FIELDS, GATED_FIELDS, has_field

Trie = dict[str, Any]
_LEAF = ""  # the key under which a trie node keeps the path that ends there
_HANDLERS = ("exec", "httpGet", "tcpSocket")


class Dropped(NamedTuple):
    path: tuple[str | int, ...]
    reason: str

    def warning(self, at: FieldPath) -> str:
        """The review warning for the field found at `at` (the caller's path of `self.path`)."""
        return f"{at}: dropped: {self.reason}"


def _split(path: str) -> list[str]:
    return [part for piece in path.split(".") for part in ([piece[:-2], "[]"] if piece.endswith("[]") else [piece])]


def _trie(paths: tuple[str, ...]) -> Trie:
    root: Trie = {}
    for path in paths:
        node = root
        for part in _split(path):
            node = node.setdefault(part, {})
        node[_LEAF] = path
    return root


def _remove(node: Any, trie: Trie, at: tuple[str | int, ...], found: list[tuple[tuple[str | int, ...], str]]) -> None:
    """Remove from `node` every field `trie` names, noting each (its path, the pattern)."""
    if type(node) is list:
        sub = trie.get("[]")
        if sub is not None:
            for i, item in enumerate(node):
                _remove(item, sub, at + (i,), found)
        return
    if type(node) is not dict:
        return  # a type error validation reports
    for key, sub in trie.items():
        if key == _LEAF or key == "[]" or key not in node:
            continue
        if _LEAF in sub:
            del node[key]
            found.append((at + (key,), sub[_LEAF]))
        else:
            _remove(node[key], sub, at + (key,), found)


def spec_text(spec: Any) -> bytes | None:
    """The spec's JSON text, for the quick look each drop takes first; None when JSON cannot
    write it (YAML's odd keys), and then every walk is made."""
    try:
        return orjson.dumps(spec)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None


Needles = re.Pattern[bytes]
# A volume's `image` is an object; a container's is a string, which must not wake the walk.
_NEEDLE_OF = {"image": rb'"image":\{'}


def _needles(patterns: tuple[str, ...], extra: tuple[bytes, ...] = ()) -> Needles:
    """One expression that finds any of the patterns' field names in JSON text (one search is
    several times cheaper than a search per name)."""
    leaves = sorted({_split(p)[-1] for p in patterns})
    alternatives = [_NEEDLE_OF.get(leaf, b'"' + re.escape(leaf.encode()) + b'":') for leaf in leaves] + list(extra)
    return re.compile(b"|".join(alternatives) if alternatives else rb"(?!)")


def _names_any(text: bytes | None, needles: Needles) -> bool:
    return text is None or needles.search(text) is not None


def _newer(opts: PodOptions) -> str:
    return "" if opts.cluster is None else (
        f" (the cluster runs Kubernetes {opts.cluster}, newer than {NEWEST}, the newest whose Pod validation"
        f" we mirror: judged as {NEWEST})")


@lru_cache(maxsize=None)
def _unknown_trie(opts: PodOptions) -> tuple[Trie, Needles]:
    unknown = tuple(p for p in FIELDS if not has_field(p, opts.version))
    return _trie(unknown), _needles(unknown)


def drop_unknown(spec: Any, opts: PodOptions, text: bytes | None = None) -> list[Dropped]:
    """Remove the fields `opts.version`'s Pod schema does not have, as its JSON decoding does.
    `text`: the spec's `spec_text`, when the caller has it."""
    trie, needles = _unknown_trie(opts)
    if not _names_any(text if text is not None else spec_text(spec), needles):
        return []
    found: list[tuple[tuple[str | int, ...], str]] = []
    _remove(spec, trie, (), found)
    out = []
    for path, pattern in found:
        added, removed = FIELDS[pattern]
        when = f"removed in 1.{removed}" if removed is not None and opts.version.minor >= removed else f"added in 1.{added}"
        out.append(Dropped(path, f"Kubernetes {opts.version} has no such Pod field ({when}){_newer(opts)}"))
    return out


def unknown_field_errors(spec: Any, opts: PodOptions, spec_path: FieldPath) -> Errors:
    """Strict decoding (`fieldValidation=Strict`, what `kubectl apply` asks for): each field the
    minor's schema lacks refuses the whole object (400 `unknown field "<path>"`), as type errors."""
    errs: Errors = []
    for d in drop_unknown(copy.deepcopy(spec), opts):
        at = spec_path.child(*d.path)
        errs.append(type_invalid(at, d.path[-1], f'unknown field "{at}"'))
    return errs


@lru_cache(maxsize=None)
def _gated_trie(gate: str, exclude: tuple[str, ...] = ()) -> Trie:
    return _trie(tuple(p for p in GATED_FIELDS[gate] if p not in exclude))


def _containers(spec: dict[str, Any], *kinds: str) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    out: list[tuple[tuple[str | int, ...], dict[str, Any]]] = []
    for kind in kinds or ("containers", "initContainers", "ephemeralContainers"):
        listed = spec.get(kind)
        if type(listed) is list:
            out += [((kind, i), c) for i, c in enumerate(listed) if type(c) is dict]
    return out


# How each special drop's fields show in JSON text (see `_names_any`).
_SPECIAL_NEEDLES = {
    "PodLifecycleSleepAction": rb'"sleep":',
    "ContainerStopSignals": rb'"stopSignal":',
    "ContainerRestartRules": rb'"restartPolicy',
    "ImageVolume": rb'"image":\{',
}


def _sleep(spec: dict[str, Any], found: list[tuple[tuple[str | int, ...], str]]) -> None:
    """dropPodLifecycleSleepAction: the hook goes too when `sleep` was its only handler."""
    for at, c in _containers(spec):
        lifecycle = c.get("lifecycle")
        if type(lifecycle) is not dict:
            continue
        for hook in ("preStop", "postStart"):
            handler = lifecycle.get(hook)
            if type(handler) is not dict or "sleep" not in handler:
                continue
            del handler["sleep"]
            if all(handler.get(kind) is None for kind in _HANDLERS):
                del lifecycle[hook]
                found.append((at + ("lifecycle", hook), "sleep"))
            else:
                found.append((at + ("lifecycle", hook, "sleep"), "sleep"))


def _stop_signal(spec: dict[str, Any], found: list[tuple[tuple[str | int, ...], str]]) -> None:
    """dropContainerStopSignals: an emptied `lifecycle` goes too."""
    for at, c in _containers(spec):
        lifecycle = c.get("lifecycle")
        if type(lifecycle) is dict and "stopSignal" in lifecycle:
            del lifecycle["stopSignal"]
            found.append((at + ("lifecycle", "stopSignal"), ""))
            if not any(v is not None for v in lifecycle.values()):
                del c["lifecycle"]


def _restart_rules(spec: dict[str, Any], found: list[tuple[tuple[str | int, ...], str]]) -> None:
    """dropContainerRestartRules: an init container keeps `restartPolicy: Always` (a sidecar)."""
    if not any("restartPolicy" in c or "restartPolicyRules" in c for _, c in _containers(spec)):
        return  # the pod's own restartPolicy is what the quick look found
    keep_sidecars = [(at, c) for at, c in _containers(spec, "initContainers") if c.get("restartPolicy") == "Always"]
    for _, c in keep_sidecars:
        del c["restartPolicy"]
    _remove(spec, _gated_trie("ContainerRestartRules"), (), found)
    for _, c in keep_sidecars:
        c["restartPolicy"] = "Always"


def _image_volumes(spec: dict[str, Any], found: list[tuple[tuple[str | int, ...], str]]) -> None:
    """dropImageVolumes: the volume and every mount of it go."""
    volumes = spec.get("volumes")
    if type(volumes) is not list:
        return
    names = {v.get("name") for v in volumes if type(v) is dict and v.get("image") is not None}
    if not names:
        return
    found += [(("volumes", i), "") for i, v in enumerate(volumes) if type(v) is dict and v.get("image") is not None]
    spec["volumes"] = [v for v in volumes if not (type(v) is dict and v.get("image") is not None)]
    for _, c in _containers(spec):
        mounts = c.get("volumeMounts")
        if type(mounts) is list:
            c["volumeMounts"] = [m for m in mounts if not (type(m) is dict and m.get("name") in names)]


_SPECIAL = {
    "PodLifecycleSleepAction": _sleep,
    "ContainerStopSignals": _stop_signal,
    "ContainerRestartRules": _restart_rules,
    "ImageVolume": _image_volumes,
}


@lru_cache(maxsize=None)
def _plan(opts: PodOptions) -> tuple[Trie, Needles, Needles, dict[str, str], tuple[tuple[str, Any, Needles], ...],
                                     dict[str, str]]:
    """For the gates off at `opts`: one trie of the fields simply removed (each pattern naming its
    gate), the special drops, and each gate's reason; computed once per minor."""
    off = [gate for gate in GATED_FIELDS if opts.is_off(gate)]
    simple = tuple(p for gate in off if gate not in _SPECIAL for p in GATED_FIELDS[gate])
    gate_of = {p: gate for gate in off if gate not in _SPECIAL for p in GATED_FIELDS[gate]}
    special = tuple((gate, _SPECIAL[gate], re.compile(_SPECIAL_NEEDLES[gate])) for gate in off if gate in _SPECIAL)
    reasons = {gate: f"the feature gate {gate} is off by default in Kubernetes {opts.version}, so the API server drops it"
                     f"{_newer(opts)}" for gate in off}
    anything = _needles(simple, tuple(_SPECIAL_NEEDLES[gate] for gate, _, _ in special))
    return _trie(simple), _needles(simple), anything, gate_of, special, reasons


def drop_disabled(spec: Any, opts: PodOptions, text: bytes | None = None) -> list[Dropped]:
    """dropDisabledFields on a new pod: remove each field whose gate exists and is off. `text`:
    the spec's `spec_text`, when the caller has it (written before the defaults is fine: they add
    none of these fields)."""
    if type(spec) is not dict or not opts.off:
        return []
    if text is None:
        text = spec_text(spec)
    trie, needles, anything, gate_of, special, reasons = _plan(opts)
    if not _names_any(text, anything):
        return []
    out: list[Dropped] = []
    found: list[tuple[tuple[str | int, ...], str]] = []
    if _names_any(text, needles):
        _remove(spec, trie, (), found)
        out += [Dropped(path, reasons[gate_of[pattern]]) for path, pattern in found]
    for gate, drop, special_needles in special:
        if not _names_any(text, special_needles):
            continue
        found = []
        drop(spec, found)
        out += [Dropped(path, reasons[gate]) for path, _ in found]
    return out
