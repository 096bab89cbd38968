"""A container's volume mounts and block devices (ValidateVolumeMounts, ValidateVolumeDevices).

Mounts gained two checks after 1.28, ported from kube-apiserver's
`pkg/apis/core/validation/validation.go` at commit 000f2605 (between 1.32 and 1.33):
`recursiveReadOnly` (validateMountRecursiveReadOnly, gate RecursiveReadOnlyMounts, 1.30 on) and
no subPath into an image volume (gate ImageVolume; the version read refuses both subPath and
subPathExpr there).
"""

from __future__ import annotations

from typing import Any

from ..shapes import as_dict
from .errors import Errors, FieldPath, forbidden, invalid, not_found, not_supported, required
from .meta import local_descending_path, no_backsteps
from .options import DEFAULT_OPTIONS, PodOptions
from .values import arr, obj, opt_text, text

PROPAGATIONS = sorted(["Bidirectional", "HostToContainer", "None"])
RECURSIVE_READ_ONLY = sorted(["Disabled", "IfPossible", "Enabled"])


def _pairs(value: Any, path: FieldPath, key: str, errs: Errors) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for i, raw in enumerate(arr(value, path, errs)):
        item = obj(raw, path.index(i), errs)
        out.append((text(item.get("name"), path.index(i).child("name"), errs), text(item.get(key), path.index(i).child(key), errs), item))
    return out


def validate_mounts(
    container: dict[str, Any], volumes: dict[str, dict[str, Any]], path: FieldPath, errs: Errors, *, opts: PodOptions = DEFAULT_OPTIONS
) -> None:
    mounts = _pairs(container.get("volumeMounts"), path.child("volumeMounts"), "mountPath", errs)
    devices = _pairs(container.get("volumeDevices"), path.child("volumeDevices"), "devicePath", errs)
    device_map = {name: where for name, where, _ in devices}
    mount_map = {name: where for name, where, _ in mounts}
    _mount_errors(mounts, device_map, volumes, container, path.child("volumeMounts"), errs, opts)
    _device_errors(devices, mount_map, volumes, path.child("volumeDevices"), errs)


def _mount_errors(
    mounts: list[tuple[str, str, dict[str, Any]]],
    devices: dict[str, str],
    volumes: dict[str, dict[str, Any]],
    container: dict[str, Any],
    path: FieldPath,
    errs: Errors,
    opts: PodOptions,
) -> None:
    seen: set[str] = set()
    for i, (name, where, mount) in enumerate(mounts):
        at = path.index(i)
        if not name:
            errs.append(required(at.child("name")))
        if name not in volumes:
            errs.append(not_found(at.child("name"), name))
        if not where:
            errs.append(required(at.child("mountPath")))
        if where in seen:
            errs.append(invalid(at.child("mountPath"), where, "must be unique"))
        seen.add(where)
        if name in devices:
            errs.append(invalid(at.child("name"), name, "must not already exist in volumeDevices"))
        if where in devices.values():
            errs.append(invalid(at.child("mountPath"), where, "must not already exist as a path in volumeDevices"))
        sub = text(mount.get("subPath"), at.child("subPath"), errs)
        volume = volumes.get(name)
        if volume is not None and volume.get("image") is not None and opts.on("ImageVolume") and opts.version.minor < 33:
            errs += _image_sub_paths(mount, at)
        if sub:
            errs += local_descending_path(sub, path.child("subPath"))
        expr = text(mount.get("subPathExpr"), at.child("subPathExpr"), errs)
        if expr:
            if sub:
                errs.append(invalid(at.child("subPathExpr"), expr, "subPathExpr and subPath are mutually exclusive"))
            errs += local_descending_path(expr, path.child("subPathExpr"))
        mode = opt_text(mount.get("mountPropagation"), at.child("mountPropagation"), errs)
        if mode is not None:
            errs += _propagation(mode, container, path.child("mountPropagation"))
        if mount.get("recursiveReadOnly") is not None and opts.on("RecursiveReadOnlyMounts"):
            _recursive_read_only(mount, mode, path.child("recursiveReadOnly"), errs)


def _image_sub_paths(mount: dict[str, Any], at: FieldPath) -> Errors:
    """ValidateVolumeMounts through 1.32 (v1.32.11): an image volume is mounted whole. Gone from
    1.33 (v1.33.7), where ImageVolume went beta: a subPath into one is allowed."""
    return [
        invalid(at.child(key), mount[key], "not allowed in image volume sources")
        for key in ("subPath", "subPathExpr")
        if isinstance(mount.get(key), str) and mount[key]
    ]


def _recursive_read_only(mount: dict[str, Any], propagation: str | None, path: FieldPath, errs: Errors) -> None:
    """validateMountRecursiveReadOnly (1.30-1.34): Enabled and IfPossible need a read-only mount
    without propagation (None or unset). The path is the list's, not the item's, as upstream
    builds it."""
    value = opt_text(mount.get("recursiveReadOnly"), path, errs)
    if value is None or value == "Disabled":
        return
    if value not in RECURSIVE_READ_ONLY:
        errs.append(not_supported(path, value, RECURSIVE_READ_ONLY))
        return
    if mount.get("readOnly") is not True:
        errs.append(forbidden(path, "may only be specified when readOnly is true"))
    if propagation is not None and propagation != "None":
        errs.append(forbidden(path, "may only be specified when mountPropagation is None or not specified"))


def _propagation(mode: str, container: dict[str, Any], path: FieldPath) -> Errors:
    errs = [] if mode in PROPAGATIONS else [not_supported(path, mode, PROPAGATIONS)]
    context = container.get("securityContext")
    privileged = isinstance(context, dict) and context.get("privileged") is True
    if mode == "Bidirectional" and not privileged:
        errs.append(forbidden(path, "Bidirectional mount propagation is available only to privileged containers"))
    return errs


def _device_errors(
    devices: list[tuple[str, str, dict[str, Any]]], mounts: dict[str, str], volumes: dict[str, dict[str, Any]], path: FieldPath, errs: Errors
) -> None:
    names: set[str] = set()
    paths: set[str] = set()
    for i, (name, where, _) in enumerate(devices):
        at = path.index(i)
        volume = volumes.get(name)
        if not name:
            errs.append(required(at.child("name")))
        if name in names:
            errs.append(invalid(at.child("name"), name, "must be unique"))
        if volume is not None and "persistentVolumeClaim" not in volume and "ephemeral" not in volume:
            errs.append(invalid(at.child("name"), name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
        if volume is None:
            errs.append(not_found(at.child("name"), name))
        if not where:
            errs.append(required(at.child("devicePath")))
        if where in paths:
            errs.append(invalid(at.child("devicePath"), where, "must be unique"))
        if where and no_backsteps(where, at):
            errs.append(invalid(at.child("devicePath"), where, "can not contain backsteps ('..')"))
        else:
            paths.add(where)
        if name in mounts:
            errs.append(invalid(at.child("name"), name, "must not already exist in volumeMounts"))
        if where in mounts.values():
            errs.append(invalid(at.child("devicePath"), where, "must not already exist as a path in volumeMounts"))
        if name:
            names.add(name)


def validate_ephemeral_mounts(container: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """An ephemeral container may not use subPath or subPathExpr."""
    for i, raw in enumerate(arr(container.get("volumeMounts"), path.child("volumeMounts"), errs)):
        mount = as_dict(raw)
        for key in ("subPath", "subPathExpr"):
            if mount.get(key):
                errs.append(forbidden(path.child("volumeMounts").index(i).child(key), "cannot be set for an Ephemeral Container"))
