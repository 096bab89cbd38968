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

from .. import names
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


def validate_labels(labels: dict[str, str], path: FieldPath) -> Errors:
    errs: Errors = []
    for key, value in labels.items():
        if problems := names.is_qualified_name(key):
            errs += [invalid(path, key, m) for m in problems]
        if problems := names.is_valid_label_value(value):
            errs += [invalid(path, value, m) for m in problems]
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


_KNOWN_MAX_CHARS = 1024
# Two sources of at most 32 such annotations each are surely short together (64 of 1024 characters
# of at most 4 bytes each is the size cap).
_SOURCE_MAX_ANNOTATIONS = ANNOTATIONS_MAX_BYTES // (4 * _KNOWN_MAX_CHARS) // 2


def _reads_more(key: str, value: str) -> bool:
    """An annotation `validate_pod_annotations` looks at (some read the spec: the node name, the
    containers, their seccomp profiles), or a long one (so short ones are surely short together)."""
    return (
        len(key) + len(value) > _KNOWN_MAX_CHARS
        or key in (MIRROR_ANNOTATION, SECCOMP_POD_ANNOTATION, DELETION_COST_ANNOTATION)
        or key.startswith((SECCOMP_CONTAINER_PREFIX, APPARMOR_CONTAINER_PREFIX))
    )


def surely_valid(labels: Any, annotations: Any) -> bool:
    """True when a pod whose labels and annotations are entries of these (all or some), and of
    at most one other source of which this is also true, has valid metadata whatever its spec:
    a controller merges its own entries with a template's, and a caller judging its pods asks
    this of each source (once for the entries that repeat from pod to pod) instead of judging
    each pod's metadata whole. False when it is not known so; the caller then judges it whole.

    Metadata is judged entry by entry (`validate_labels`, `validate_annotations` and
    `validate_pod_annotations` look at one entry at a time, asking the same `names` checks this
    asks), but for the size of all the annotations, surely under the cap for two sources of at
    most `_SOURCE_MAX_ANNOTATIONS` short entries, and for the annotations `_reads_more` names."""
    if labels is not None:
        if type(labels) is not dict:
            return False
        try:
            known = names.known_accepted(names.is_qualified_name, labels) and names.known_accepted(names.is_valid_label_value, labels.values())
        except TypeError:
            return False  # a list or a map where a text belongs
        if not known:
            for key, value in labels.items():
                if type(key) is not str or type(value) is not str or names.is_qualified_name(key) or names.is_valid_label_value(value):
                    return False
    if annotations is not None:
        if type(annotations) is not dict or len(annotations) > _SOURCE_MAX_ANNOTATIONS:
            return False
        for key, value in annotations.items():
            if type(key) is not str or type(value) is not str or _reads_more(key, value) or names.is_qualified_name(key.lower()):
                return False
    return True


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
                errs.append(invalid(path, "", f'Only one reference can have Controller set to true. Found "true" in references for {controller} and {current}'))
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
        return local_descending_path(profile[len("localhost/") :], path)
    return [invalid(path, profile, "must be a valid seccomp profile")]


def local_descending_path(target: str, path: FieldPath) -> Errors:
    """validateLocalDescendingPath: relative, and no `..` segment."""
    errs = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    return errs + no_backsteps(target, path)


def local_non_reserved_path(target: str, path: FieldPath) -> Errors:
    """ValidateLocalNonReservedPath: a local descending path that does not start with '..' either
    (not reported again for "../", which the '..' element check has caught)."""
    errs = local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(invalid(path, target, "must not start with '..'"))
    return errs


def no_backsteps(target: str, path: FieldPath) -> Errors:
    if ".." in target.split("/"):
        return [invalid(path, target, "must not contain '..'")]
    return []


def validate_pod_annotations(annotations: dict[str, str], spec: dict[str, Any], container_names: Callable[[], set[str]], path: FieldPath) -> Errors:
    """ValidatePodSpecificAnnotations: mirror pods, deletion cost, seccomp and AppArmor profiles
    (`container_names` is asked only when an AppArmor annotation names a container)."""
    errs: Errors = []
    if MIRROR_ANNOTATION in annotations and not spec.get("nodeName"):
        errs.append(invalid(path.key(MIRROR_ANNOTATION), annotations[MIRROR_ANNOTATION], "must set spec.nodeName if mirror pod annotation is set"))
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
        container = key[len(APPARMOR_CONTAINER_PREFIX) :]
        if container not in container_names():
            errs.append(invalid(path.key(key), container, "container not found"))
        if profile not in ("", "runtime/default", "unconfined") and not profile.startswith("localhost/"):
            errs.append(invalid(path.key(key), profile, f"invalid AppArmor profile name: {names_quote(profile)}"))
    return errs


def names_quote(value: str) -> str:
    """Go's %q for an error text that embeds a value."""
    return json.dumps(value, ensure_ascii=False)
