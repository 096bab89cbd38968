"""Security contexts, pod-level and per container: ids, seccomp and AppArmor profiles, sysctls,
privilege, and the policies for supplemental groups and SELinux relabelling.

The checks of fields added after 1.28 (`appArmorProfile`, `supplementalGroupsPolicy`,
`seLinuxChangePolicy`) port kube-apiserver's `pkg/apis/core/validation/validation.go` as read at
commit 000f2605 (between 1.32 and 1.33; the same checks hold through 1.34). Each runs when its
field is present and its gate is on; with the gate off the API server has dropped the field
before validation, so there is nothing to check.
"""

from __future__ import annotations

import re
from typing import Any

from .. import names
from .errors import Errors, FieldPath, GoSyntax, duplicate, forbidden, invalid, not_supported, required, too_long
from .meta import local_descending_path
from .options import DEFAULT_OPTIONS, PodOptions
from .platform import all_containers
from .values import arr, obj, opt_flag, opt_int, opt_obj, opt_text, text

# kube-apiserver's --allow-privileged; kubeadm and the usual installers turn it on.
ALLOW_PRIVILEGED = True
SECCOMP_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]
PROC_MOUNTS = ["Default", "Unmasked"]
FS_GROUP_POLICIES = ["Always", "OnRootMismatch"]
APPARMOR_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]
APPARMOR_PROFILE_MAX = 4095  # PATH_MAX - 1
SUPPLEMENTAL_GROUPS_POLICIES = ["Merge", "Strict"]
SELINUX_CHANGE_POLICIES = ["MountOption", "Recursive"]
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
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


def validate_apparmor_profile(profile: dict[str, Any] | None, path: FieldPath, errs: Errors) -> None:
    """ValidateAppArmorProfileField (validation.go, 1.30-1.34): the type, and a localhost profile
    exactly when the type is Localhost, unpadded and at most PATH_MAX - 1 bytes."""
    if profile is None:
        return
    kind = text(profile.get("type"), path.child("type"), errs)
    local = opt_text(profile.get("localhostProfile"), path.child("localhostProfile"), errs)
    at = path.child("localhostProfile")
    if kind == "Localhost":
        if local is None:
            errs.append(required(at, "must be set when AppArmor type is Localhost"))
            return
        if local.strip() != local:
            errs.append(invalid(at, local, "must not be padded with whitespace"))
        elif not local:
            errs.append(required(at, "must be set when AppArmor type is Localhost"))
        if len(local.encode()) > APPARMOR_PROFILE_MAX:
            errs.append(too_long(at, APPARMOR_PROFILE_MAX))
    elif kind in ("RuntimeDefault", "Unconfined"):
        if local is not None:
            errs.append(invalid(at, local, "can only be set when AppArmor type is Localhost"))
    elif not kind:
        errs.append(required(path.child("type"), "type is required when appArmorProfile is set"))
    else:
        errs.append(not_supported(path.child("type"), kind, APPARMOR_TYPES))


def validate_container_security(context: dict[str, Any] | None, path: FieldPath, errs: Errors, *, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    """ValidateSecurityContext; `appArmorProfile` with the AppArmorFields gate (1.30 on)."""
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
    validate_seccomp_profile(opt_obj(context.get("seccompProfile"), path.child("seccompProfile"), errs), path.child("seccompProfile"), errs)
    if opt_flag(context.get("allowPrivilegeEscalation"), path.child("allowPrivilegeEscalation"), errs) is False:
        shown = _context_struct(context)
        if privileged:
            errs.append(invalid(path, shown, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        caps = obj(context.get("capabilities"), path.child("capabilities"), errs)
        for cap in arr(caps.get("add"), path.child("capabilities", "add"), errs):
            if cap == "CAP_SYS_ADMIN":
                errs.append(invalid(path, shown, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
    if context.get("appArmorProfile") is not None and opts.on("AppArmorFields"):
        validate_apparmor_profile(opt_obj(context.get("appArmorProfile"), path.child("appArmorProfile"), errs), path.child("appArmorProfile"), errs)


# The fields of core.SecurityContext in declaration order, with the Go type of each pointer.
_CONTEXT_FIELDS = (
    ("Capabilities", "capabilities", "*core.Capabilities"),
    ("Privileged", "privileged", "*bool"),
    ("SELinuxOptions", "seLinuxOptions", "*core.SELinuxOptions"),
    ("WindowsOptions", "windowsOptions", "*core.WindowsSecurityContextOptions"),
    ("RunAsUser", "runAsUser", "*int64"),
    ("RunAsGroup", "runAsGroup", "*int64"),
    ("RunAsNonRoot", "runAsNonRoot", "*bool"),
    ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", "*bool"),
    ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", "*bool"),
    ("ProcMount", "procMount", "*core.ProcMountType"),
    ("SeccompProfile", "seccompProfile", "*core.SeccompProfile"),
)


def validate_host_users(spec: dict[str, Any], path: FieldPath, errs: Errors, opts: PodOptions) -> None:
    """validateHostUsers (validation.go, v1.28.7 to v1.37.2) and ValidateSecurityContext's
    `Unmasked` check, over the whole pod: with `hostUsers: false` no host network, PID or IPC
    namespace and no volumeDevices (1.34 on; the message named `pod.Spec.HostUsers` through
    1.33); without it no container may ask for an `Unmasked` /proc (where ProcMountType keeps the
    field). Both need UserNamespacesSupport to keep `hostUsers` at all."""
    host_users = spec.get("hostUsers") is not False or not opts.on("UserNamespacesSupport")
    if opts.on("ProcMountType") and host_users:
        for c, at in all_containers(spec, path):
            context = c.get("securityContext")
            if type(context) is dict and context.get("procMount") == "Unmasked":
                errs.append(invalid(at.child("securityContext", "procMount"), "Unmasked", "`hostUsers` must be false to use `Unmasked`"))
    if host_users:
        return
    why = "when `hostUsers` is false" if opts.version.minor >= 34 else "when `pod.Spec.HostUsers` is false"
    if spec.get("hostNetwork") is True:
        errs.append(forbidden(path.child("hostNetwork"), why))
    if spec.get("hostPID") is True:
        errs.append(forbidden(path.child("HostPID"), why))
    if spec.get("hostIPC") is True:
        errs.append(forbidden(path.child("HostIPC"), why))
    if opts.version.minor >= 34:
        errs += [forbidden(at.child("volumeDevices"), why) for c, at in all_containers(spec, path) if c.get("volumeDevices")]


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
        validate_seccomp_profile(opt_obj(get("seccompProfile"), path.child("seccompProfile"), errs), path.child("seccompProfile"), errs)
    if get("appArmorProfile") is not None and opts.on("AppArmorFields"):
        validate_apparmor_profile(opt_obj(get("appArmorProfile"), path.child("appArmorProfile"), errs), path.child("appArmorProfile"), errs)
    if get("supplementalGroupsPolicy") is not None and opts.on("SupplementalGroupsPolicy"):
        _supplemental_groups_policy(get("supplementalGroupsPolicy"), path.child("supplementalGroupsPolicy"), errs)
    if get("seLinuxChangePolicy") is not None and opts.on("SELinuxChangePolicy"):
        _selinux_change_policy(get("seLinuxChangePolicy"), path.child("seLinuxChangePolicy"), errs, opts)


def _supplemental_groups_policy(value: Any, path: FieldPath, errs: Errors) -> None:
    """validateSupplementalGroupsPolicy (1.31-1.34): Merge or Strict."""
    policy = opt_text(value, path, errs)
    if policy is not None and policy not in SUPPLEMENTAL_GROUPS_POLICIES:
        errs.append(not_supported(path, policy, SUPPLEMENTAL_GROUPS_POLICIES))


def _selinux_change_policy(value: Any, path: FieldPath, errs: Errors, opts: PodOptions) -> None:
    """validateSELinuxChangePolicy (1.32-1.34). Upstream's AllowOnlyRecursiveSELinuxChangePolicy
    (`pkg/api/pod/util.go`) holds while the SELinuxMount gate is off: then only Recursive is
    accepted, otherwise MountOption too. (An update keeping a MountOption already in use is
    allowed upstream; a create, what we judge, never is.)"""
    policy = opt_text(value, path, errs)
    if policy is None:
        return
    supported = SELINUX_CHANGE_POLICIES if opts.on("SELinuxMount") else ["Recursive"]
    if policy not in supported:
        errs.append(not_supported(path, policy, supported))


def validate_apparmor_match(annotations: dict[str, str], spec: dict[str, Any], path: FieldPath, *, opts: PodOptions = DEFAULT_OPTIONS) -> Errors:
    """validateAppArmorAnnotationsAndFieldsMatchOnCreate (1.30-1.34): where a container has both
    the deprecated AppArmor annotation and a profile (its own, or the pod's it inherits), the two
    must agree. Windows pods are skipped."""
    if not opts.on("AppArmorFields") or not any(k.startswith(APPARMOR_ANNOTATION_PREFIX) for k in annotations):
        return []
    os_field = spec.get("os")
    if isinstance(os_field, dict) and os_field.get("name") == "windows":
        return []
    context = spec.get("securityContext")
    pod_profile = context.get("appArmorProfile") if isinstance(context, dict) else None
    errs: Errors = []
    for c, at in all_containers(spec, path):
        own = c.get("securityContext")
        profile = own.get("appArmorProfile") if isinstance(own, dict) and own.get("appArmorProfile") is not None else pod_profile
        name = c.get("name")
        annotation = annotations.get(APPARMOR_ANNOTATION_PREFIX + name) if isinstance(name, str) else None
        if not isinstance(profile, dict) or annotation is None:
            continue
        where = at.child("securityContext", "appArmorProfile")
        kind = profile.get("type")
        if (
            (kind == "Unconfined" and annotation != "unconfined")
            or (kind == "RuntimeDefault" and annotation != "runtime/default")
            or (kind == "Localhost" and not annotation.startswith("localhost/"))
        ):
            errs.append(forbidden(where.child("type"), "apparmor type in annotation and field must match"))
        elif kind == "Localhost" and annotation[len("localhost/") :] != profile.get("localhostProfile"):
            errs.append(forbidden(where.child("localhostProfile"), "apparmor profile in annotation and field must match"))
    return errs
