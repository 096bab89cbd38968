"""Security contexts, pod-level and per container: ids, seccomp profiles, sysctls, privilege."""

from __future__ import annotations

import re
from typing import Any

from .options import DEFAULT_OPTIONS, PodOptions
from . import names
from .errors import Errors, FieldPath, GoSyntax, duplicate, forbidden, invalid, not_supported, required
from .meta import local_descending_path
from .values import arr, obj, opt_flag, opt_int, opt_obj, opt_text, text

# kube-apiserver's --allow-privileged; kubeadm and the usual installers turn it on.
ALLOW_PRIVILEGED = True
SECCOMP_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]
PROC_MOUNTS = ["Default", "Unmasked"]
FS_GROUP_POLICIES = ["Always", "OnRootMismatch"]
_SYSCTL_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_FMT = "(" + _SYSCTL_SEGMENT + "[\\./])*" + _SYSCTL_SEGMENT
_SYSCTL = re.compile(_SYSCTL_FMT)
# Go prints a set pointer as its address, which differs on every request; the corpus and these
# messages write it as this placeholder.
POINTER = "0x{pointer}"


def _id(context: dict[str, Any], key: str, path: FieldPath, errs: Errors) -> None:
    value = opt_int(context.get(key), path.child(key), errs)
    if value is not None:
        errs += [invalid(path.child(key), value, m) for m in names.is_valid_id(value)]


def validate_seccomp_profile(profile: dict[str, Any] | None, path: FieldPath, errs: Errors) -> None:
    if profile is None:
        return
    kind = text(profile.get("type"), path.child("type"), errs)
    if not kind:
        errs.append(required(path.child("type"), "type is required when seccompProfile is set"))
    elif kind not in SECCOMP_TYPES:
        errs.append(not_supported(path.child("type"), kind, SECCOMP_TYPES))
    local = opt_text(profile.get("localhostProfile"), path.child("localhostProfile"), errs)
    if kind == "Localhost":
        if local is None:
            errs.append(required(path.child("localhostProfile"), "must be set when seccomp type is Localhost"))
        else:
            errs += local_descending_path(local, path.child("localhostProfile"))
    elif local is not None:
        shown = GoSyntax(f'core.SeccompProfile{{Type:"{kind}", LocalhostProfile:(*string)({POINTER})}}')
        errs.append(invalid(path.child("localhostProfile"), shown, "can only be set when seccomp type is Localhost"))


def validate_container_security(context: dict[str, Any] | None, path: FieldPath, errs: Errors) -> None:
    if context is None:
        return
    privileged = opt_flag(context.get("privileged"), path.child("privileged"), errs)
    if privileged and not ALLOW_PRIVILEGED:
        errs.append(forbidden(path.child("privileged"), "disallowed by cluster policy"))
    _id(context, "runAsUser", path, errs)
    _id(context, "runAsGroup", path, errs)
    mount = opt_text(context.get("procMount"), path.child("procMount"), errs)
    if mount is not None and mount not in PROC_MOUNTS:
        errs.append(not_supported(path.child("procMount"), mount, PROC_MOUNTS))
    validate_seccomp_profile(opt_obj(context.get("seccompProfile"), path.child("seccompProfile"), errs),
                             path.child("seccompProfile"), errs)
    if opt_flag(context.get("allowPrivilegeEscalation"), path.child("allowPrivilegeEscalation"), errs) is False:
        shown = _context_struct(context)
        if privileged:
            errs.append(invalid(path, shown, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        caps = obj(context.get("capabilities"), path.child("capabilities"), errs)
        for cap in arr(caps.get("add"), path.child("capabilities", "add"), errs):
            if cap == "CAP_SYS_ADMIN":
                errs.append(invalid(path, shown, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))


# The fields of core.SecurityContext in declaration order, with the Go type of each pointer.
_CONTEXT_FIELDS = (("Capabilities", "capabilities", "*core.Capabilities"), ("Privileged", "privileged", "*bool"),
                   ("SELinuxOptions", "seLinuxOptions", "*core.SELinuxOptions"),
                   ("WindowsOptions", "windowsOptions", "*core.WindowsSecurityContextOptions"),
                   ("RunAsUser", "runAsUser", "*int64"), ("RunAsGroup", "runAsGroup", "*int64"),
                   ("RunAsNonRoot", "runAsNonRoot", "*bool"), ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", "*bool"),
                   ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", "*bool"), ("ProcMount", "procMount", "*core.ProcMountType"),
                   ("SeccompProfile", "seccompProfile", "*core.SeccompProfile"))


def _context_struct(context: dict[str, Any]) -> GoSyntax:
    """`%#v` of a core.SecurityContext: every field a pointer, nil or an address."""
    parts = [f"{name}:({go_type})({POINTER if context.get(key) is not None else 'nil'})" for name, key, go_type in _CONTEXT_FIELDS]
    return GoSyntax("core.SecurityContext{" + ", ".join(parts) + "}")


def _sysctls(value: Any, path: FieldPath, errs: Errors) -> None:
    seen: set[str] = set()
    for i, raw in enumerate(arr(value, path, errs)):
        at = path.index(i).child("name")
        name = text(obj(raw, path.index(i), errs).get("name"), at, errs)
        if not name:
            errs.append(required(at))
        elif len(name) > 253 or not _SYSCTL.fullmatch(name):
            errs.append(invalid(at, name, f"must have at most 253 characters and match regex ^{_SYSCTL_FMT}$"))
        elif name in seen:
            errs.append(duplicate(at, name))
        seen.add(name)


def _share_process_namespace(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        errs.append(invalid(path.child("shareProcessNamespace"), True, "ShareProcessNamespace and HostPID cannot both be enabled"))


def validate_pod_security(spec: dict[str, Any], path: FieldPath, errs: Errors, *, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    """validatePodSpecSecurityContext; host namespaces live on the spec in v1."""
    context = opt_obj(spec.get("securityContext"), path, errs)
    if context is None:
        return
    if not context:  # the default: no field of the context to check, only the host namespaces
        _share_process_namespace(spec, path, errs)
        return
    get = context.get  # each check below finds nothing in an absent field: it costs one lookup
    for key in ("fsGroup", "runAsUser", "runAsGroup"):
        if get(key) is not None:
            _id(context, key, path, errs)
    for i, gid in enumerate(arr(get("supplementalGroups"), path.child("supplementalGroups"), errs) if get("supplementalGroups") is not None else ()):
        if isinstance(gid, int) and not isinstance(gid, bool):
            errs += [invalid(path.child("supplementalGroups").index(i), gid, m) for m in names.is_valid_id(gid)]
    _share_process_namespace(spec, path, errs)
    if get("sysctls") is not None:
        _sysctls(get("sysctls"), path.child("sysctls"), errs)
    policy = opt_text(get("fsGroupChangePolicy"), path.child("fsGroupChangePolicy"), errs) if get("fsGroupChangePolicy") is not None else None
    if policy is not None and policy not in FS_GROUP_POLICIES:
        errs.append(not_supported(path.child("fsGroupChangePolicy"), policy, FS_GROUP_POLICIES))
    if get("seccompProfile") is not None:
        validate_seccomp_profile(opt_obj(get("seccompProfile"), path.child("seccompProfile"), errs),
                                 path.child("seccompProfile"), errs)
