"""Pod volumes (ValidateVolumes): names, exactly one source, and the common sources' own fields.

Defaulting has already turned a volume with no source into an emptyDir, so "must specify a
volume type" only appears for a pod that skipped the defaults. The sources are tried in the
API server's order, which decides which one a second source is reported against.

The image volume source (`volumes[].image`, gate ImageVolume) ports validateImageVolumeSource of
kube-apiserver's `pkg/apis/core/validation/validation.go` at commit 000f2605 (between 1.32 and
1.33; unchanged through 1.34). With the gate off the API server has dropped the field, so the key
is not a source at all here.

Projected volumes port validateProjectionSources of kube-apiserver v1.37.2 (`validation.go`); the
`clusterTrustBundle` and `podCertificate` sources, on from 1.37, are projections.py. What changed in
the older sources since 1.28 follows `versions.SINCE`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import names
from .env import VOLUME_FIELD_PATHS, object_field_selector, resource_field_selector
from .errors import Errors, FieldPath, duplicate, forbidden, invalid, not_supported, required, too_long
from .meta import local_descending_path, local_non_reserved_path, no_backsteps
from .options import DEFAULT_OPTIONS, PodOptions
from .projections import cluster_trust_bundle, pod_certificate
from .values import arr, integer, obj, opt_int, opt_obj, opt_text, quantity, text

FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
HOST_PATH_TYPES = sorted(["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"])

Checker = Callable[[dict[str, Any], FieldPath, Errors], None]


def _mode(source: dict[str, Any], key: str, path: FieldPath, errs: Errors) -> None:
    mode = opt_int(source.get(key), path.child(key), errs)
    if mode is not None and not 0 <= mode <= 0o777:
        errs.append(invalid(path.child(key), mode, FILE_MODE_ERROR))


def _key_to_path(item: dict[str, Any], path: FieldPath, errs: Errors) -> str:
    key = text(item.get("key"), path.child("key"), errs)
    target = text(item.get("path"), path.child("path"), errs)
    if not key:
        errs.append(required(path.child("key")))
    if not target:
        errs.append(required(path.child("path")))
    errs += local_non_reserved_path(target, path.child("path"))
    _mode(item, "mode", path, errs)
    return target


def _items(source: dict[str, Any], path: FieldPath, errs: Errors) -> list[str]:
    return [
        _key_to_path(obj(item, path.child("items").index(i), errs), path.child("items").index(i), errs)
        for i, item in enumerate(arr(source.get("items"), path.child("items"), errs))
    ]


def _empty_dir(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    limit = source.get("sizeLimit")
    if limit is not None:
        amount = quantity(limit, path.child("sizeLimit"), errs)
        if amount is not None and amount < 0:
            errs.append(forbidden(path.child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))


def _host_path(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    target = text(source.get("path"), path.child("path"), errs)
    if not target:
        errs.append(required(path.child("path")))
        return
    errs += no_backsteps(target, path.child("path"))
    kind = opt_text(source.get("type"), path.child("type"), errs)
    if kind is not None and kind not in HOST_PATH_TYPES:
        errs.append(not_supported(path.child("type"), kind, HOST_PATH_TYPES))


def _git_repo(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    if not text(source.get("repository"), path.child("repository"), errs):
        errs.append(required(path.child("repository")))
    errs += local_descending_path(text(source.get("directory"), path.child("directory"), errs), path.child("directory"))


def _named(key: str) -> Checker:
    """Secret (`secretName`) and configMap (`name`): the name, the default mode, the items."""

    def check(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
        if not text(source.get(key), path.child(key), errs):
            errs.append(required(path.child(key)))
        _mode(source, "defaultMode", path, errs)
        _items(source, path, errs)

    return check


def _nfs(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    if not text(source.get("server"), path.child("server"), errs):
        errs.append(required(path.child("server")))
    target = text(source.get("path"), path.child("path"), errs)
    if not target:
        errs.append(required(path.child("path")))
    if not target.startswith("/"):
        errs.append(invalid(path.child("path"), target, "must be an absolute path"))


def _claim(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    if not text(source.get("claimName"), path.child("claimName"), errs):
        errs.append(required(path.child("claimName")))


def _downward_file(item: dict[str, Any], path: FieldPath, errs: Errors) -> str:
    target = text(item.get("path"), path.child("path"), errs)
    if not target:
        errs.append(required(path.child("path")))
    errs += local_non_reserved_path(target, path.child("path"))
    field_ref = opt_obj(item.get("fieldRef"), path.child("fieldRef"), errs)
    resource_ref = opt_obj(item.get("resourceFieldRef"), path.child("resourceFieldRef"), errs)
    if field_ref is not None:
        errs += object_field_selector(field_ref, VOLUME_FIELD_PATHS, path.child("fieldRef"), errs)
        if resource_ref is not None:
            errs.append(invalid(path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif resource_ref is not None:
        errs += resource_field_selector(resource_ref, path.child("resourceFieldRef"), True, errs)
    else:
        errs.append(required(path, "one of fieldRef and resourceFieldRef is required"))
    _mode(item, "mode", path, errs)
    return target


def _downward_api(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    _mode(source, "defaultMode", path, errs)
    for i, item in enumerate(arr(source.get("items"), path.child("items"), errs)):
        _downward_file(obj(item, path.child("items").index(i), errs), path, errs)


def _projected(source: dict[str, Any], path: FieldPath, errs: Errors, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    """validateProjectedVolumeSource and validateProjectionSources (v1.37.2 for the sources 1.29+
    added; `opts` decides what changed since 1.28, versions.SINCE). `seen` is upstream's allPaths,
    shared by every source of the volume."""
    _mode(source, "defaultMode", path, errs)
    too_many_kinds = "may not specify more than 1 volume type" + (" per source" if opts.since("ProjectionPerSourceMessage") else "")
    seen: set[str] = set()  # an item's empty path is not claimed (a clusterTrustBundle's is)
    for i, raw in enumerate(arr(source.get("sources"), path.child("sources"), errs)):
        at = path.child("sources").index(i)
        entry = obj(raw, at, errs)
        count = 0
        for kind in ("secret", "configMap"):
            part = opt_obj(entry.get(kind), at.child(kind), errs)
            if part is None:
                continue
            count += 1
            name = text(part.get("name"), at.child(kind, "name"), errs)
            if not name:
                errs.append(required(at.child(kind, "name")))
            for target in _items(part, at.child(kind), errs):
                if target and target in seen:
                    errs.append(invalid(path, name, "conflicting duplicate paths"))
                elif target:
                    seen.add(target)
        if (part := opt_obj(entry.get("downwardAPI"), at.child("downwardAPI"), errs)) is not None:
            count += 1
            for j, item in enumerate(arr(part.get("items"), at.child("downwardAPI", "items"), errs)):
                target = _downward_file(obj(item, at.child("downwardAPI", "items").index(j), errs), at.child("downwardAPI"), errs)
                if target and target in seen:
                    errs.append(invalid(path, target, "conflicting duplicate paths"))
                elif target:
                    seen.add(target)
        if (part := opt_obj(entry.get("serviceAccountToken"), at.child("serviceAccountToken"), errs)) is not None:
            count += 1
            _token(part, at.child("serviceAccountToken"), path, errs, opts)
        if (part := opt_obj(entry.get("clusterTrustBundle"), at.child("clusterTrustBundle"), errs)) is not None:
            count += 1
            cluster_trust_bundle(part, at.child("clusterTrustBundle"), path, seen, errs)
        if (part := opt_obj(entry.get("podCertificate"), at.child("podCertificate"), errs)) is not None:
            count += 1
            pod_certificate(part, at.child("podCertificate"), path, seen, errs)
        if count > 1:
            errs.append(forbidden(at, too_many_kinds))


def _token(part: dict[str, Any], at: FieldPath, path: FieldPath, errs: Errors, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    seconds = integer(part.get("expirationSeconds", 3600), at.child("expirationSeconds"), errs)
    if seconds < 600:
        errs.append(invalid(at.child("expirationSeconds"), seconds, "may not specify a duration less than 10 minutes"))
    if seconds > 1 << 32:
        errs.append(invalid(at.child("expirationSeconds"), seconds, "may not specify a duration larger than 2^32 seconds"))
    target = text(part.get("path"), at.child("path"), errs)
    if not target:
        errs.append(required(path.child("path")))
    elif opts.since("ProjectedTokenLocalPath"):  # at the volume's path, as upstream reports it
        errs += local_non_reserved_path(target, path.child("path"))


def _csi(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    driver = text(source.get("driver"), path.child("driver"), errs)
    if not driver:
        errs.append(required(path.child("driver")))
    if len(driver) > 63:
        errs.append(too_long(path.child("driver"), 63))
    errs += [invalid(path.child("driver"), driver, m) for m in names.is_dns1123_subdomain(driver.lower())]


def _ephemeral(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    if opt_obj(source.get("volumeClaimTemplate"), path.child("volumeClaimTemplate"), errs) is None:
        errs.append(required(path.child("volumeClaimTemplate")))


PULL_POLICIES = ["Always", "IfNotPresent", "Never"]


def _image(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """validateImageVolumeSource without its reference check (see `_image_reference`). An empty
    pull policy is never seen upstream: SetDefaults_ImageVolumeSource fills it in first, so here
    it stands for the default and passes."""
    policy = opt_text(source.get("pullPolicy"), path.child("pullPolicy"), errs)
    if policy and policy not in PULL_POLICIES:
        errs.append(not_supported(path.child("pullPolicy"), policy, PULL_POLICIES))


def _image_reference(volume: dict[str, Any], at: FieldPath, errs: Errors) -> None:
    """validateImageVolumeSource: a Pod (not a bare template, which a controller may complete)
    must name the image."""
    source = volume.get("image")
    if isinstance(source, dict) and not text(source.get("reference"), at.child("image", "reference"), errs):
        errs.append(required(at.child("image", "reference")))


def _unchecked(source: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """A source whose own fields are not ported yet (cloud and legacy in-tree drivers)."""


# (JSON key, the path a second source is reported at, the path its own errors use, checker).
SOURCES: list[tuple[str, str, str, Checker]] = [
    ("emptyDir", "emptyDir", "emptyDir", _empty_dir),
    ("hostPath", "hostPath", "hostPath", _host_path),
    ("gitRepo", "gitRepo", "gitRepo", _git_repo),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk", _unchecked),
    ("awsElasticBlockStore", "awsElasticBlockStore", "awsElasticBlockStore", _unchecked),
    ("secret", "secret", "secret", _named("secretName")),
    ("nfs", "nfs", "nfs", _nfs),
    ("iscsi", "iscsi", "iscsi", _unchecked),
    ("glusterfs", "glusterfs", "glusterfs", _unchecked),
    ("flocker", "flocker", "flocker", _unchecked),
    ("persistentVolumeClaim", "persistentVolumeClaim", "persistentVolumeClaim", _claim),
    ("rbd", "rbd", "rbd", _unchecked),
    ("cinder", "cinder", "cinder", _unchecked),
    ("cephfs", "cephFS", "cephfs", _unchecked),
    ("quobyte", "quobyte", "quobyte", _unchecked),
    ("downwardAPI", "downwarAPI", "downwardAPI", _downward_api),  # upstream's spelling
    ("fc", "fc", "fc", _unchecked),
    ("flexVolume", "flexVolume", "flexVolume", _unchecked),
    ("configMap", "configMap", "configMap", _named("name")),
    ("azureFile", "azureFile", "azureFile", _unchecked),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume", _unchecked),
    ("photonPersistentDisk", "photonPersistentDisk", "photonPersistentDisk", _unchecked),
    ("portworxVolume", "portworxVolume", "portworxVolume", _unchecked),
    ("azureDisk", "azureDisk", "azureDisk", _unchecked),
    ("storageos", "storageos", "storageos", _unchecked),
    ("projected", "projected", "projected", _projected),
    ("scaleIO", "scaleIO", "scaleIO", _unchecked),
    ("csi", "csi", "csi", _csi),
    ("ephemeral", "ephemeral", "ephemeral", _ephemeral),
    ("image", "image", "image", _image),
]
# The sources a gate adds, skipped while the gate is off.
_GATED_SOURCES = {"image": "ImageVolume"}
SOURCE_KEYS = frozenset(key for key, _, _, _ in SOURCES)


def _source_errors(volume: dict[str, Any], at: FieldPath, errs: Errors, opts: PodOptions, is_pod: bool) -> Errors:
    out: Errors = []
    count = 0
    for key, second_at, own_at, check in SOURCES:
        source = opt_obj(volume.get(key), at.child(key), errs)
        if source is None or (key in _GATED_SOURCES and not opts.on(_GATED_SOURCES[key])):
            continue
        if count:
            out.append(forbidden(at.child(second_at), "may not specify more than 1 volume type"))
            continue
        count += 1
        if key == "image" and is_pod:
            _image_reference(volume, at, out)
        if key == "projected":
            _projected(source, at.child(own_at), out, opts)
        else:
            check(source, at.child(own_at), out)
    if count == 0:
        out.append(required(at, "must specify a volume type"))
    return out


def validate_volumes(value: Any, path: FieldPath, errs: Errors, *, opts: PodOptions = DEFAULT_OPTIONS, is_pod: bool = True) -> dict[str, dict[str, Any]]:
    """The volumes, and the valid ones by name (what mounts may refer to). `is_pod` is upstream's
    ResourceIsPod."""
    known: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(arr(value, path, errs)):
        at = path.index(i)
        volume = obj(raw, at, errs)
        name = text(volume.get("name"), at.child("name"), errs)
        found = _source_errors(volume, at, errs, opts, is_pod)
        if not name:
            found.append(required(at.child("name")))
        else:
            found += [invalid(at.child("name"), name, m) for m in names.is_dns1123_label(name)]
        if name in known:
            found.append(duplicate(at.child("name"), name))
        if found:
            errs += found
        else:
            known[name] = volume
    return known
