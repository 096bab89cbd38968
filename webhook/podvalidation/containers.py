"""Containers, init containers and ephemeral containers: what each has in common, and what each
list adds (unique names across the lists, host ports, which probes and hooks are allowed)."""

from __future__ import annotations

from typing import Any

from .. import names
from ..shapes import as_dict
from .env import validate_env, validate_env_from
from .errors import Errors, FieldPath, choice, duplicate, forbidden, invalid, not_found, not_supported, required
from .mounts import validate_ephemeral_mounts, validate_mounts
from .options import DEFAULT_OPTIONS, PodOptions
from .probes import validate_lifecycle, validate_probes
from .resources import validate_resources
from .security import validate_container_security
from .values import arr, field_text, integer, obj, opt_obj, opt_text, text

PROTOCOLS = ["SCTP", "TCP", "UDP"]
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
# The fields an ephemeral container may not carry (validateFieldAllowList).
_NOT_FOR_EPHEMERAL = ("ports", "resources", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "resizePolicy", "restartPolicy")


def _ports(value: Any, path: FieldPath, errs: Errors) -> None:
    seen: set[str] = set()
    for i, raw in enumerate(arr(value, path, errs)):
        if type(raw) is dict and _plain_port(raw):
            continue
        at = path.index(i)
        port = obj(raw, at, errs)
        name = text(port.get("name"), at.child("name"), errs)
        if name:
            problems = names.is_valid_port_name(name)
            errs += [invalid(at.child("name"), name, m) for m in problems]
            if not problems and name in seen:
                errs.append(duplicate(at.child("name"), name))
            elif not problems:
                seen.add(name)
        number = integer(port.get("containerPort"), at.child("containerPort"), errs)
        if number == 0:
            errs.append(required(at.child("containerPort")))
        else:
            errs += [invalid(at.child("containerPort"), number, m) for m in names.is_valid_port_num(number)]
        host = integer(port.get("hostPort"), at.child("hostPort"), errs)
        if host:
            errs += [invalid(at.child("hostPort"), host, m) for m in names.is_valid_port_num(host)]
        choice(field_text(port, "protocol", at, errs), PROTOCOLS, at, "protocol", errs)


def _plain_port(port: dict[str, Any]) -> bool:
    """A port with no name and no host port, a valid containerPort and a supported protocol, by
    the checks `_ports` makes: what it finds nothing in, told without building a path."""
    number, protocol = port.get("containerPort"), port.get("protocol")
    return (
        port.get("name") is None
        and port.get("hostPort") is None
        and type(number) is int
        and number != 0
        and not names.is_valid_port_num(number)
        and type(protocol) is str
        and protocol in PROTOCOLS
    )


def _common(c: dict[str, Any], volumes: dict[str, dict[str, Any]], path: FieldPath, errs: Errors, opts: PodOptions, claims: frozenset[str]) -> None:
    """validateContainerCommon. Each check of a list or an object finds nothing in an absent one,
    so an absent field costs one lookup. `claims` are the pod's declared resource claim names."""
    get = c.get
    name = field_text(c, "name", path, errs)
    if not name:
        errs.append(required(path.child("name")))
    elif problems := names.is_dns1123_label(name):
        errs += [invalid(path.child("name"), name, m) for m in problems]
    if not field_text(c, "image", path, errs):
        errs.append(required(path.child("image")))
    choice(field_text(c, "terminationMessagePolicy", path, errs), MESSAGE_POLICIES, path, "terminationMessagePolicy", errs)
    if get("ports") is not None:
        _ports(get("ports"), path.child("ports"), errs)
    if get("env") is not None:
        validate_env(get("env"), path.child("env"), errs, opts)
    if get("envFrom") is not None:
        validate_env_from(get("envFrom"), path.child("envFrom"), errs, opts)
    if get("volumeMounts") is not None or get("volumeDevices") is not None:
        validate_mounts(c, volumes, path, errs, opts=opts)
    choice(field_text(c, "imagePullPolicy", path, errs), PULL_POLICIES, path, "imagePullPolicy", errs)
    if get("resources") is not None:
        validate_resources(obj(get("resources"), path.child("resources"), errs), path.child("resources"), errs, opts=opts, claims=claims)
    if get("securityContext") is not None:
        validate_container_security(opt_obj(get("securityContext"), path.child("securityContext"), errs), path.child("securityContext"), errs, opts=opts)


def host_port_conflicts(containers: list[dict[str, Any]], path: FieldPath, seen: set[str], errs: Errors) -> None:
    """AccumulateUniqueHostPorts: protocol, host IP and host port together must be unique."""
    for ci, c in enumerate(containers):
        ports = c.get("ports")
        for pi, raw in enumerate(ports if isinstance(ports, list) else []):
            port = as_dict(raw)
            host = port.get("hostPort")
            if not isinstance(host, int) or isinstance(host, bool) or host == 0:
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{host}"
            if key in seen:
                errs.append(duplicate(path.index(ci).child("ports").index(pi).child("hostPort"), key))
            seen.add(key)


def items(value: Any, path: FieldPath, errs: Errors) -> list[dict[str, Any]]:
    return [raw if isinstance(raw, dict) else obj(raw, path.index(i), errs) for i, raw in enumerate(arr(value, path, errs))]


def validate_containers(
    containers: list[dict[str, Any]],
    volumes: dict[str, dict[str, Any]],
    path: FieldPath,
    errs: Errors,
    *,
    opts: PodOptions = DEFAULT_OPTIONS,
    claims: frozenset[str] = frozenset(),
    grace: int | None = None,
) -> None:
    """validateContainers. `grace`: the pod's terminationGracePeriodSeconds, a sleep hook's bound;
    `claims`: the pod's declared resource claim names."""
    if not containers:
        errs.append(required(path))
        return
    seen: set[str] = set()
    for i, c in enumerate(containers):
        at = path.index(i)
        _common(c, volumes, at, errs, opts, claims)
        name = name_of(c)
        if name in seen:
            errs.append(duplicate(at.child("name"), name))
        seen.add(name)
        lifecycle = c.get("lifecycle")
        if lifecycle is not None and (lifecycle := opt_obj(lifecycle, at.child("lifecycle"), errs)) is not None:
            validate_lifecycle(lifecycle, at.child("lifecycle"), errs, grace, opts)
        validate_probes(c, at, errs)
        if c.get("restartPolicy") is not None:  # at 1.34 dropped before, ContainerRestartRules being off
            errs.append(forbidden(at.child("restartPolicy"), "may not be set for non-init containers"))
    host_port_conflicts(containers, path, set(), errs)


def validate_init_containers(
    inits: list[dict[str, Any]],
    containers: list[dict[str, Any]],
    volumes: dict[str, dict[str, Any]],
    path: FieldPath,
    errs: Errors,
    *,
    opts: PodOptions = DEFAULT_OPTIONS,
    claims: frozenset[str] = frozenset(),
    grace: int | None = None,
) -> None:
    """validateInitContainers and validateInitContainerRestartPolicy (pkg/apis/core/validation/
    validation.go, 1.28 to 1.34). Init containers share the name space of the app containers. A
    sidecar (`restartPolicy: Always`, SidecarContainers on from 1.29) may have hooks and probes,
    judged as an app container's; any other init container may not. In 1.28 the gate is off and
    drops.py removes `restartPolicy` before validation; in 1.34 ContainerRestartRules, off, removes
    any value but Always, so only 1.29 to 1.33 can see another value refused."""
    seen = {name_of(c) for c in containers}
    for i, c in enumerate(inits):
        at = path.index(i)
        _common(c, volumes, at, errs, opts, claims)
        sidecar = False
        if c.get("restartPolicy") is not None:
            restart = opt_text(c.get("restartPolicy"), at.child("restartPolicy"), errs)
            sidecar = restart == "Always"
            if restart is not None and not sidecar:
                errs.append(not_supported(at.child("restartPolicy"), restart, ["Always"]))
        name = name_of(c)
        if name in seen:
            errs.append(duplicate(at.child("name"), name))
        elif name:
            seen.add(name)
        host_port_conflicts([c], path, set(), errs)
        if sidecar:
            lifecycle = c.get("lifecycle")
            if lifecycle is not None and (lifecycle := opt_obj(lifecycle, at.child("lifecycle"), errs)) is not None:
                validate_lifecycle(lifecycle, at.child("lifecycle"), errs, grace, opts)
            validate_probes(c, at, errs)
            continue
        for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
            if c.get(key) is not None:
                errs.append(forbidden(at.child(key), "may not be set for init containers without restartPolicy=Always"))


def validate_ephemeral_containers(
    ephemerals: list[dict[str, Any]],
    containers: list[dict[str, Any]],
    inits: list[dict[str, Any]],
    volumes: dict[str, dict[str, Any]],
    path: FieldPath,
    errs: Errors,
    *,
    opts: PodOptions = DEFAULT_OPTIONS,
    claims: frozenset[str] = frozenset(),
) -> None:
    others = {name_of(c) for c in containers + inits}
    seen = set(others)
    for i, c in enumerate(ephemerals):
        at = path.index(i)
        _common(c, volumes, at, errs, opts, claims)
        errs += image_whitespace(c, at)
        name = name_of(c)
        if name in seen:
            errs.append(duplicate(at.child("name"), name))
        else:
            seen.add(name)
        target = opt_text(c.get("targetContainerName"), at.child("targetContainerName"), errs)
        if target and target not in others:
            errs.append(not_found(at.child("targetContainerName"), target))
        for key in _NOT_FOR_EPHEMERAL:
            if c.get(key) not in (None, {}, []):
                errs.append(forbidden(at.child(key), "cannot be set for an Ephemeral Container"))
        validate_ephemeral_mounts(c, at, errs)


def name_of(c: dict[str, Any]) -> str:
    name = c.get("name")
    return name if isinstance(name, str) else ""


def image_whitespace(c: dict[str, Any], path: FieldPath) -> Errors:
    image = c.get("image")
    if isinstance(image, str) and image != image.strip():
        return [invalid(path.child("image"), image, "must not have leading or trailing whitespace")]
    return []
