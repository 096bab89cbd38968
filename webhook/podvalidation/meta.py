"""Object metadata (ValidateObjectMeta) and the annotations only a Pod gives meaning to.

Labels and annotations are Go maps, which Go walks in random order; we walk them in the order
the user wrote them, so a list of several label errors may come in another order than one
particular API server response (the set is the same).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from . import names
from .errors import Errors, FieldPath, invalid, required, too_long
from .values import arr, integer, obj, string_map, text

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_CONTAINER_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
ANNOTATIONS_MAX_BYTES = 256 * 1024
GENERATED_SUFFIX = "{random}"
_INT32 = re.compile(r"[+-]?[0-9]+")


def validate_labels(labels: dict[str, str], path: FieldPath, fine: set[tuple[str, str]] | None = None) -> Errors:
    """`fine`, when given, holds the (key, value) entries found valid so far: they are skipped and
    each entry found valid is added (a caller judging several pods of one object passes one set,
    which lives as long as that object's review and holds at most its label entries)."""
    errs: Errors = []
    for key, value in labels.items():
        if fine is not None and (key, value) in fine:
            continue
        found = len(errs)
        if problems := names.is_qualified_name(key):
            errs += [invalid(path, key, m) for m in problems]
        if problems := names.is_valid_label_value(value):
            errs += [invalid(path, value, m) for m in problems]
        if fine is not None and len(errs) == found:
            fine.add((key, value))
    return errs


def validate_annotations(annotations: dict[str, str], path: FieldPath) -> Errors:
    errs: Errors = []
    for key in annotations:
        if problems := names.is_qualified_name(key.lower()):
            errs += [invalid(path, key, m) for m in problems]
    if _surely_short(annotations):
        return errs
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        errs.append(too_long(path, ANNOTATIONS_MAX_BYTES))
    return errs


def _surely_short(annotations: dict[str, str]) -> bool:
    """Short enough for the size cap whatever the characters (UTF-8 takes at most 4 bytes for one)."""
    return (sum(map(len, annotations)) + sum(map(len, annotations.values()))) * 4 <= ANNOTATIONS_MAX_BYTES


def _never_known(key: str, value: str) -> bool:
    """An annotation judged with each pod, never taken as known: one whose verdict depends on the
    pod's spec (the node name, the containers, their seccomp profiles), or a long one (so that
    annotations all known are surely short: at most `_KNOWN_MAX_CHARS` characters each)."""
    return (len(key) + len(value) > _KNOWN_MAX_CHARS or key in (MIRROR_ANNOTATION, SECCOMP_POD_ANNOTATION)
            or key.startswith((SECCOMP_CONTAINER_PREFIX, APPARMOR_CONTAINER_PREFIX)))


_KNOWN_MAX_CHARS = 1024
_KNOWN_MAX_COUNT = ANNOTATIONS_MAX_BYTES // (4 * _KNOWN_MAX_CHARS)  # 64 such annotations are surely short
_ANYWHERE = FieldPath()  # the errors `KnownMetadata.covers` asks for are only counted, never shown


class KnownMetadata:
    """The label and annotation entries found valid so far, for a caller that judges several pods
    of one object (Kthena's pods repeat the controller's labels: the ModelServing's name in four,
    the role's in two). It lives as long as that one review and holds at most the entries of the
    pods it judges.

    A pod's metadata is judged entry by entry (`validate_labels`, `validate_annotations`,
    `validate_pod_annotations` each look at one entry at a time, but for the size of all the
    annotations, and for the annotations that read the spec), so metadata whose every entry is
    known valid, none of which reads the spec, and whose annotations are surely short (at most
    `_KNOWN_MAX_COUNT` of at most `_KNOWN_MAX_CHARS` characters each), is valid."""

    __slots__ = ("labels", "annotations")

    def __init__(self) -> None:
        self.labels: set[tuple[str, str]] = set()
        self.annotations: set[tuple[str, str]] = set()

    def covers(self, meta: dict[str, Any], spec: dict[str, Any]) -> bool:
        """True when `meta` is valid for a pod with `spec`, its new entries judged by the same
        checks and remembered; False when it is not known so (the caller then judges it whole)."""
        labels, annotations = meta.get("labels"), meta.get("annotations")
        new = _unknown(labels, self.labels, None)
        if new is None or (new and validate_labels(new, _ANYWHERE, self.labels)):
            return False
        new = _unknown(annotations, self.annotations, _never_known)
        if new is None or (annotations and len(annotations) > _KNOWN_MAX_COUNT):
            return False
        if new:
            # no annotation here reads the spec, so no container name is ever asked for
            if validate_annotations(new, _ANYWHERE) or validate_pod_annotations(new, spec, set, _ANYWHERE):
                return False
            self.annotations.update(new.items())
        return True


def _unknown(entries: Any, known: set[tuple[str, str]], excluded: Callable[[str, str], bool] | None) -> dict[str, str] | None:
    """The entries of a string map not in `known`; None when it is not a map of strings or an
    entry is `excluded`. (`known` holds entries of strings only, never an excluded one.)"""
    if entries is None:
        return {}
    if type(entries) is not dict:
        return None
    try:
        if entries.items() <= known:
            return {}  # the common case, without a loop in Python
    except TypeError:
        return None  # an entry that cannot be hashed: a list or a map where a string belongs
    new: dict[str, str] = {}
    for key, value in entries.items():
        if type(key) is not str or type(value) is not str or (excluded is not None and excluded(key, value)):
            return None
        if (key, value) not in known:
            new[key] = value
    return new


def validate_object_meta(meta: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """ValidateObjectMeta with the Pod's name rule (a DNS subdomain) and a required namespace.

    A Pod sent to the API server takes its namespace from the URL when it names none, so a
    missing namespace is not an error here."""
    generate = text(meta.get("generateName"), path.child("generateName"), errs)
    name = text(meta.get("name"), path.child("name"), errs)
    namespace = text(meta.get("namespace"), path.child("namespace"), errs)
    if generate:
        errs += [invalid(path.child("generateName"), generate, m) for m in names.name_is_dns_subdomain(generate, True)]
    if not name and not generate:
        errs.append(required(path.child("name"), "name or generateName is required"))
    elif name:
        errs += [invalid(path.child("name"), name, m) for m in names.name_is_dns_subdomain(name)]
    else:
        errs += _generated_name_errors(generate, path.child("name"))
    if namespace:
        errs += [invalid(path.child("namespace"), namespace, m) for m in names.name_is_dns_label(namespace)]
    generation = integer(meta.get("generation"), path.child("generation"), errs)
    if generation < 0:
        errs.append(invalid(path.child("generation"), generation, "must be greater than or equal to 0"))
    errs += validate_labels(string_map(meta.get("labels"), path.child("labels"), errs), path.child("labels"))
    errs += validate_annotations(string_map(meta.get("annotations"), path.child("annotations"), errs), path.child("annotations"))
    _validate_owner_references(meta.get("ownerReferences"), path.child("ownerReferences"), errs)
    _validate_finalizers(meta.get("finalizers"), path.child("finalizers"), errs)


def _generated_name_errors(generate: str, path: FieldPath) -> Errors:
    """The API server names the pod `generateName[:58]` plus five random characters before it
    validates, so a bad generateName is also a bad name. The random part is always valid
    (lowercase consonants and digits); it is shown as `{random}`, since it cannot be known here."""
    base = generate[:58]
    return [invalid(path, base + GENERATED_SUFFIX, m) for m in names.name_is_dns_subdomain(base + "bcdfg")]


def _validate_owner_references(value: Any, path: FieldPath, errs: Errors) -> None:
    controller = ""
    for i, raw in enumerate(arr(value, path, errs)):
        ref = obj(raw, path.index(i), errs)
        api_version = text(ref.get("apiVersion"), path.index(i).child("apiVersion"), errs)
        kind = text(ref.get("kind"), path.index(i).child("kind"), errs)
        version = api_version.split("/")[-1] if api_version.count("/") <= 1 else ""
        if not version:
            errs.append(invalid(path.child("apiVersion"), api_version, "version must not be empty"))
        if not kind:
            errs.append(invalid(path.child("kind"), kind, "kind must not be empty"))
        for key in ("name", "uid"):
            if not text(ref.get(key), path.index(i).child(key), errs):
                errs.append(invalid(path.child(key), "", f"{key} must not be empty"))
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name', '')}"
            if controller:
                errs.append(invalid(path, "", "Only one reference can have Controller set to true. Found \"true\" in "
                                    f"references for {controller} and {current}"))
            else:
                controller = current


def _validate_finalizers(value: Any, path: FieldPath, errs: Errors) -> None:
    finalizers = [text(f, path.index(i), errs) for i, f in enumerate(arr(value, path, errs))]
    for finalizer in finalizers:
        errs += [invalid(path, finalizer, m) for m in names.is_qualified_name(finalizer)]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))


def seccomp_profile_errors(profile: str, path: FieldPath) -> Errors:
    if profile in ("runtime/default", "docker/default", "unconfined"):
        return []
    if profile.startswith("localhost/"):
        return local_descending_path(profile[len("localhost/"):], path)
    return [invalid(path, profile, "must be a valid seccomp profile")]


def local_descending_path(target: str, path: FieldPath) -> Errors:
    """validateLocalDescendingPath: relative, and no `..` segment."""
    errs = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    return errs + no_backsteps(target, path)


def no_backsteps(target: str, path: FieldPath) -> Errors:
    if ".." in target.split("/"):
        return [invalid(path, target, "must not contain '..'")]
    return []


def validate_pod_annotations(annotations: dict[str, str], spec: dict[str, Any], container_names: Callable[[], set[str]],
                             path: FieldPath) -> Errors:
    """ValidatePodSpecificAnnotations: mirror pods, deletion cost, seccomp and AppArmor profiles
    (`container_names` is asked only when an AppArmor annotation names a container)."""
    errs: Errors = []
    if MIRROR_ANNOTATION in annotations and not spec.get("nodeName"):
        errs.append(invalid(path.key(MIRROR_ANNOTATION), annotations[MIRROR_ANNOTATION],
                            "must set spec.nodeName if mirror pod annotation is set"))
    cost = annotations.get(DELETION_COST_ANNOTATION)
    if cost is not None and not (_INT32.fullmatch(cost) and -(2**31) <= int(cost) < 2**31):
        errs.append(invalid(path.key(DELETION_COST_ANNOTATION), cost, "must be a 32bit integer"))
    if SECCOMP_POD_ANNOTATION in annotations:
        errs += seccomp_profile_errors(annotations[SECCOMP_POD_ANNOTATION], path.child(SECCOMP_POD_ANNOTATION))
    for key, profile in annotations.items():
        if key.startswith(SECCOMP_CONTAINER_PREFIX):
            errs += seccomp_profile_errors(profile, path.child(key))
    for key, profile in annotations.items():
        if not key.startswith(APPARMOR_CONTAINER_PREFIX):
            continue
        container = key[len(APPARMOR_CONTAINER_PREFIX):]
        if container not in container_names():
            errs.append(invalid(path.key(key), container, "container not found"))
        if profile not in ("", "runtime/default", "unconfined") and not profile.startswith("localhost/"):
            errs.append(invalid(path.key(key), profile, f"invalid AppArmor profile name: {names_quote(profile)}"))
    return errs


def names_quote(value: str) -> str:
    """Go's %q for an error text that embeds a value."""
    return json.dumps(value, ensure_ascii=False)
