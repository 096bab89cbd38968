"""`spec.os`: the OS name, and the fields that make no sense on the chosen OS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..shapes import as_dict, objects
from .errors import Errors, FieldPath, forbidden, not_supported, required

OS_NAMES = ["linux", "windows"]
# validateWindows, in its order. The fields added after 1.28 (appArmorProfile,
# supplementalGroupsPolicy, seLinuxChangePolicy; validation.go at commit 000f2605) need no gate
# here: with their gate off the API server has dropped them before this check.
_WINDOWS_POD = (
    ("securityContext", "appArmorProfile"),
    ("securityContext", "seLinuxOptions"),
    ("hostPID",),
    ("hostIPC",),
    ("securityContext", "seccompProfile"),
    ("securityContext", "fsGroup"),
    ("securityContext", "fsGroupChangePolicy"),
    ("securityContext", "sysctls"),
    ("shareProcessNamespace",),
    ("securityContext", "runAsUser"),
    ("securityContext", "runAsGroup"),
    ("securityContext", "supplementalGroups"),
    ("securityContext", "supplementalGroupsPolicy"),
    ("securityContext", "seLinuxChangePolicy"),
)
_WINDOWS_CONTAINER = (
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
)
# Plain booleans and lists count when true or non-empty; every other field when present at all.
_TRUTHY = frozenset({"hostPID", "hostIPC", "sysctls"})


def all_containers(spec: dict[str, Any], path: FieldPath) -> Iterator[tuple[dict[str, Any], FieldPath]]:
    """Init containers, then containers, then ephemeral containers, as the API server visits them."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in objects(spec.get(key)):
            yield c, path.child(key).index(i)


def _context(holder: dict[str, Any]) -> dict[str, Any]:
    return as_dict(holder.get("securityContext"))


def validate_os(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    os_ = spec.get("os")
    if not isinstance(os_, dict):
        return
    name = os_.get("name") if isinstance(os_.get("name"), str) else ""
    if not name:
        errs.append(required(path.child("os", "name"), "cannot be empty"))
    elif name not in OS_NAMES:
        errs.append(not_supported(path.child("os"), name, OS_NAMES))
    elif name == "linux":
        _linux(spec, path, errs)
    else:
        _windows(spec, path, errs)


def _linux(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    if _context(spec).get("windowsOptions") is not None:
        errs.append(forbidden(path.child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
    for c, at in all_containers(spec, path):
        if _context(c).get("windowsOptions") is not None:
            errs.append(forbidden(at.child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))


def _windows(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    pod_context = _context(spec)
    for where in _WINDOWS_POD:
        holder = pod_context if where[0] == "securityContext" else spec
        value = holder.get(where[-1])
        if bool(value) if where[-1] in _TRUTHY else value is not None:
            errs.append(forbidden(path.child(*where), "cannot be set for a windows pod"))
    for c, at in all_containers(spec, path):
        context = _context(c)
        for key in _WINDOWS_CONTAINER:
            if context.get(key) is not None:
                errs.append(forbidden(at.child("securityContext", key), "cannot be set for a windows pod"))
