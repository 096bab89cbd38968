"""Environment variables (`env`, `envFrom`) and the downward-API selectors they share with volumes."""

from __future__ import annotations

from typing import Any

from .. import names
from .errors import Errors, FieldPath, forbidden, invalid, not_found, not_supported, required
from .options import DEFAULT_OPTIONS, PodOptions
from .values import arr, canonical, obj, opt_obj, quantity, text

ENV_FIELD_PATHS = sorted(
    [
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.serviceAccountName",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    ]
)
VOLUME_FIELD_PATHS = sorted(["metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid"])
RESOURCE_FIELD_PATHS = sorted(["limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage"])
_HUGEPAGE_PREFIXES = ("requests.hugepages-", "limits.hugepages-")
# What ConvertDownwardAPIFieldLabel knows for v1 (it maps the old `spec.host` to `spec.nodeName`).
_CONVERTIBLE = {
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
}
_SIZES = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
_SIZE_DIVISORS = set(_SIZES.split(", "))


def env_var_name_errors(name: str, opts: PodOptions) -> list[str]:
    """ValidateEnv's and ValidateEnvFrom's name check (validation.go, 1.37.2): any printable ASCII
    but '=' where RelaxedEnvironmentVariableValidation is on (beta and on from 1.32), else
    IsEnvVarName's C-like names."""
    if opts.on("RelaxedEnvironmentVariableValidation"):
        return names.is_relaxed_env_var_name(name)
    return names.is_env_var_name(name)


def validate_env(value: Any, path: FieldPath, errs: Errors, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    for i, raw in enumerate(arr(value, path, errs)):
        name = raw.get("name") if type(raw) is dict else None
        if type(name) is str and name and not env_var_name_errors(name, opts):
            if raw.get("valueFrom") is not None:  # a fine name and no source: nothing more to check
                _validate_value_from(raw, path.index(i), errs, opts)
            continue
        at = path.index(i)
        var = obj(raw, at, errs)
        name = text(var.get("name"), at.child("name"), errs)
        if not name:
            errs.append(required(at.child("name")))
        else:
            errs += [invalid(at.child("name"), name, m) for m in env_var_name_errors(name, opts)]
        _validate_value_from(var, at, errs, opts)


def _validate_value_from(var: dict[str, Any], at: FieldPath, errs: Errors, opts: PodOptions) -> None:
    path = at.child("valueFrom")
    source = opt_obj(var.get("valueFrom"), path, errs)
    if source is None:
        return
    count = 0
    if (ref := opt_obj(source.get("fieldRef"), path.child("fieldRef"), errs)) is not None:
        count += 1
        errs += object_field_selector(ref, ENV_FIELD_PATHS, path.child("fieldRef"), errs)
        errs += _host_ips(ref, path.child("fieldRef"), opts)
    if (ref := opt_obj(source.get("resourceFieldRef"), path.child("resourceFieldRef"), errs)) is not None:
        count += 1
        errs += resource_field_selector(ref, path.child("resourceFieldRef"), False, errs)
    for key in ("configMapKeyRef", "secretKeyRef"):
        if (ref := opt_obj(source.get(key), path.child(key), errs)) is not None:
            count += 1
            errs += _key_selector(ref, path.child(key), errs)
    env_files = opts.on("EnvFiles")  # off, the field was dropped before validation
    if env_files and (ref := opt_obj(source.get("fileKeyRef"), path.child("fileKeyRef"), errs)) is not None:
        count += 1
        errs += _file_key_selector(ref, path.child("fileKeyRef"), errs)
    if count == 0:
        sources = (
            "`fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"
            if env_files
            else "`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
        )
        errs.append(invalid(path, "", f"must specify one of: {sources}"))
    elif text(var.get("value"), at.child("value"), errs):
        errs.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(invalid(path, "", "may not have more than one field specified at a time"))


def _file_key_selector(ref: dict[str, Any], path: FieldPath, errs: Errors) -> Errors:
    """validateFileKeySelector (validation.go, v1.35.4 to v1.37.2): a key of the relaxed name
    rule (whatever RelaxedEnvironmentVariableValidation says), a DNS-1123 label volume name, a
    path without a `..` segment."""
    out: Errors = []
    key = text(ref.get("key"), path.child("key"), errs)
    if not key:
        out.append(required(path.child("key")))
    else:
        out += [invalid(path.child("key"), key, m) for m in names.is_relaxed_env_var_name(key)]
    volume = text(ref.get("volumeName"), path.child("volumeName"), errs)
    if not volume:
        out.append(required(path.child("volumeName")))
    else:
        out += [invalid(path.child("volumeName"), volume, m) for m in names.is_dns1123_label(volume)]
    file_path = text(ref.get("path"), path.child("path"), errs)
    if not file_path:
        out.append(required(path.child("path")))
    elif ".." in file_path.split("/"):
        out.append(invalid(path.child("path"), file_path, "must not contain '..'"))
    return out


def validate_file_key_ref_volumes(containers: list[tuple[dict[str, Any], FieldPath]], volumes: Any, errs: Errors) -> None:
    """validateFileKeyRefVolumes (validation.go, v1.35.4 to v1.37.2), the last check of a pod
    spec: each `fileKeyRef` names a volume of the pod, and an emptyDir one (a volume with no
    source was defaulted to one). `containers`: (container, path) in VisitContainersWithPath's
    order."""
    by_name = {v.get("name"): v for v in volumes if type(v) is dict} if type(volumes) is list else {}
    for container, at in containers:
        env = container.get("env")
        for j, var in enumerate(env if type(env) is list else ()):
            source = var.get("valueFrom") if type(var) is dict else None
            ref = source.get("fileKeyRef") if type(source) is dict else None
            if type(ref) is not dict:
                continue
            name = ref.get("volumeName")
            where = at.child("env").index(j).child("valueFrom", "fileKeyRef", "volumeName")
            volume = by_name.get(name)
            if volume is None:
                errs.append(not_found(where, name))
            elif volume.get("emptyDir") is None:
                errs.append(invalid(where, name, "referenced volume must be of type emptyDir"))


def _host_ips(ref: dict[str, Any], path: FieldPath, opts: PodOptions) -> Errors:
    """status.hostIPs needs the PodHostIPs feature gate: alpha and off in 1.28, on from 1.29
    (validateEnvVarValueFrom, pkg/apis/core/validation/validation.go 1.28)."""
    if ref.get("fieldPath") == "status.hostIPs" and not opts.on("PodHostIPs"):
        return [forbidden(path, "may not be set when feature gate 'PodHostIPs' is not enabled")]
    return []


def object_field_selector(ref: dict[str, Any], supported: list[str], path: FieldPath, errs: Errors) -> Errors:
    out: Errors = []
    version = text(ref.get("apiVersion"), path.child("apiVersion"), errs)
    field_path = text(ref.get("fieldPath"), path.child("fieldPath"), errs)
    if not version:
        return [required(path.child("apiVersion"))]
    if not field_path:
        return [required(path.child("fieldPath"))]
    base, subscript = split_subscript(field_path)
    problem = ""
    if version != "v1":
        problem = f"unsupported pod version: {version}"
    elif subscript is not None and base not in ("metadata.annotations", "metadata.labels"):
        problem = f"field label does not support subscript: {field_path}"
    elif subscript is None and field_path not in _CONVERTIBLE and field_path != "spec.host":
        problem = f"field label not supported: {field_path}"
    if problem:
        return [invalid(path.child("fieldPath"), field_path, f"error converting fieldPath: {problem}")]
    if field_path == "spec.host":
        base = "spec.nodeName"
    if subscript is not None:
        key = subscript.lower() if base == "metadata.annotations" else subscript
        out += [invalid(path, key, m) for m in names.is_qualified_name(key)]
    elif base not in supported:
        out.append(not_supported(path.child("fieldPath"), base, supported))
    return out


def split_subscript(field_path: str) -> tuple[str, str | None]:
    """`metadata.labels['app']` -> (`metadata.labels`, `app`); no subscript -> (path, None)."""
    if not field_path.endswith("']"):
        return field_path, None
    head, sep, key = field_path[:-2].partition("['")
    if not sep or not head:
        return field_path, None
    return head, key


def resource_field_selector(ref: dict[str, Any], path: FieldPath, volume: bool, errs: Errors) -> Errors:
    out: Errors = []
    container = text(ref.get("containerName"), path.child("containerName"), errs)
    resource = text(ref.get("resource"), path.child("resource"), errs)
    if volume and not container:
        out.append(required(path.child("containerName")))
    elif not resource:
        out.append(required(path.child("resource")))
    elif resource not in RESOURCE_FIELD_PATHS and not resource.startswith(_HUGEPAGE_PREFIXES):
        out.append(not_supported(path.child("resource"), resource, RESOURCE_FIELD_PATHS))
    return out + _divisor(resource, ref.get("divisor"), path, errs)


def _divisor(resource: str, raw: Any, path: FieldPath, errs: Errors) -> Errors:
    amount = quantity(raw, path.child("divisor"), errs)
    if amount is None or amount == 0:
        return []
    shown = canonical(raw, amount)
    at = path.child("divisor")
    if resource in ("limits.cpu", "requests.cpu") and shown not in ("1m", "1"):
        return [invalid(at, resource, "only divisor's values 1m and 1 are supported with the cpu resource")]
    kinds = {"memory": "memory", "ephemeral-storage": "local ephemeral storage"}
    for suffix, label in kinds.items():
        if resource in (f"limits.{suffix}", f"requests.{suffix}") and shown not in _SIZE_DIVISORS:
            return [invalid(at, resource, f"only divisor's values {_SIZES} are supported with the {label} resource")]
    if resource.startswith(_HUGEPAGE_PREFIXES) and shown not in _SIZE_DIVISORS:
        return [invalid(at, resource, f"only divisor's values {_SIZES} are supported with the hugepages resource")]
    return []


def _key_selector(ref: dict[str, Any], path: FieldPath, errs: Errors) -> Errors:
    name = text(ref.get("name"), path.child("name"), errs)
    key = text(ref.get("key"), path.child("key"), errs)
    out = [invalid(path.child("name"), name, m) for m in names.name_is_dns_subdomain(name)]
    if not key:
        out.append(required(path.child("key")))
    else:
        out += [invalid(path.child("key"), key, m) for m in names.is_config_map_key(key)]
    return out


def validate_env_from(value: Any, path: FieldPath, errs: Errors, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    for i, raw in enumerate(arr(value, path, errs)):
        at = path.index(i)
        source = obj(raw, at, errs)
        prefix = text(source.get("prefix"), at.child("prefix"), errs)
        if prefix:
            errs += [invalid(at.child("prefix"), prefix, m) for m in env_var_name_errors(prefix, opts)]
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = opt_obj(source.get(key), at.child(key), errs)
            if ref is None:
                continue
            count += 1
            name = text(ref.get("name"), at.child(key, "name"), errs)
            if not name:
                errs.append(required(at.child(key, "name")))
            else:
                errs += [invalid(at.child(key, "name"), name, m) for m in names.name_is_dns_subdomain(name, True)]
        if count == 0:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
