"""Containers, init containers and ephemeral containers: what each has in common, and what each
list adds (unique names across the lists, host ports, which probes and hooks are allowed)."""

from __future__ import annotations

from typing import Any

from .. import names
from ..shapes import as_dict
from .env import validate_env, validate_env_from
from .errors import Errors, FieldPath, choice, duplicate, forbidden, invalid, not_found, not_supported, required, too_long, too_many
from .mounts import validate_ephemeral_mounts, validate_mounts
from .options import DEFAULT_OPTIONS, PodOptions
from .probes import validate_lifecycle, validate_probes
from .resources import validate_resources
from .security import validate_container_security
from .values import arr, field_text, integer, obj, opt_obj, opt_text, text

PROTOCOLS = ["SCTP", "TCP", "UDP"]
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
# The fields an ephemeral container may not carry: those of EphemeralContainerCommon that
# allowedEphemeralContainerFields does not allow, in the struct's order (validateFieldAllowList,
# validation.go v1.37.2). `restartPolicyRules` (1.34) is dropped while ContainerRestartRules is off
# and unknown to older schemas, so it is only ever seen here with the gate on.
_NOT_FOR_EPHEMERAL = (
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
)
CONTAINER_RESTART_POLICIES = ["Always", "Never", "OnFailure"]
RESTART_RULE_OPERATORS = ["In", "NotIn"]
RESIZE_RESOURCES = ["cpu", "memory"]
RESIZE_POLICIES = ["NotRequired", "RestartContainer"]
MAX_RESTART_RULES = 20
MAX_EXIT_CODES = 255


def _as_of_1_36(opts: PodOptions) -> bool:
    """Whether `opts` mirror validation.go as of v1.36 in what it changed there with no gate (the
    one comparison of minors in this module): validateContainerRestartPolicy reports too many
    rules or exit codes with field.TooMany (v1.35.4: field.TooLong) and lists the actions allowed
    (v1.35.4: `Restart` alone); validateResizePolicy says "pod `restartPolicy`" (v1.33.7 to v1.35.4:
    "`restartPolicy`"); validateInitContainers refuses `RestartContainer` in a non-sidecar init
    container's resizePolicy (not in v1.35.4)."""
    return opts.version.minor >= 36


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


def _common(
    c: dict[str, Any], volumes: dict[str, dict[str, Any]], path: FieldPath, errs: Errors, opts: PodOptions, claims: frozenset[str], pod_restart: str
) -> None:
    """validateContainerCommon. Each check of a list or an object finds nothing in an absent one,
    so an absent field costs one lookup. `claims` are the pod's declared resource claim names,
    `pod_restart` its restartPolicy."""
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
    if get("resizePolicy") is not None:
        _resize_policy(get("resizePolicy"), path.child("resizePolicy"), pod_restart, errs, opts)
    if get("securityContext") is not None:
        validate_container_security(opt_obj(get("securityContext"), path.child("securityContext"), errs), path.child("securityContext"), errs, opts=opts)


def _resize_policy(value: Any, path: FieldPath, pod_restart: str, errs: Errors, opts: PodOptions) -> None:
    """validateResizePolicy (validation.go v1.33.7 to v1.37.2; the field reaches validation from
    1.33, InPlacePodVerticalScaling on: drops.py removes it before). Every error but a duplicate
    is reported at the list itself, as upstream does."""
    seen: set[str] = set()
    for i, p in enumerate(items(value, path, errs)):
        at = path.index(i)
        name = field_text(p, "resourceName", at, errs)
        if name in seen:
            errs.append(duplicate(at, name))
        seen.add(name)
        if name not in RESIZE_RESOURCES:
            errs.append(required(path) if not name else not_supported(path, name, RESIZE_RESOURCES))
        policy = field_text(p, "restartPolicy", at, errs)
        if policy not in RESIZE_POLICIES:
            errs.append(required(path) if not policy else not_supported(path, policy, RESIZE_POLICIES))
        if pod_restart == "Never" and policy != "NotRequired":
            pod = "pod " if _as_of_1_36(opts) else ""
            errs.append(invalid(path, policy, f"must be 'NotRequired' when {pod}`restartPolicy` is 'Never'"))


def _restart_rules(c: dict[str, Any], path: FieldPath, errs: Errors) -> tuple[str | None, list[dict[str, Any]]]:
    """A container's `restartPolicy` (None: unset) and `restartPolicyRules` (each an object)."""
    policy = opt_text(c.get("restartPolicy"), path.child("restartPolicy"), errs) if c.get("restartPolicy") is not None else None
    rules = items(c.get("restartPolicyRules"), path.child("restartPolicyRules"), errs) if c.get("restartPolicyRules") is not None else []
    return policy, rules


def _container_restart_policy(policy: str | None, rules: list[dict[str, Any]], path: FieldPath, errs: Errors, opts: PodOptions) -> None:
    """validateContainerRestartPolicy (validation.go v1.35.4 to v1.37.2; before 1.35 only reached
    with ContainerRestartRules on, which no minor we judge by has): for app containers, init
    containers other than sidecars, and sidecars once RestartAllContainersOnContainerExits is on."""
    if policy is None:
        if not rules:
            return
        errs.append(required(path.child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
    elif policy not in CONTAINER_RESTART_POLICIES:
        errs.append(not_supported(path.child("restartPolicy"), policy, CONTAINER_RESTART_POLICIES))
    newer = _as_of_1_36(opts)
    if len(rules) > MAX_RESTART_RULES:
        at = path.child("restartPolicyRules")
        errs.append(too_many(at, len(rules), MAX_RESTART_RULES) if newer else too_long(at, MAX_RESTART_RULES, since_1_32=True))
    allowed = ["Restart", "RestartAllContainers"] if opts.on("RestartAllContainersOnContainerExits") else ["Restart"]
    for i, rule in enumerate(rules):
        at = path.child("restartPolicyRules").index(i)
        action = field_text(rule, "action", at, errs)
        if action not in allowed:
            errs.append(not_supported(at.child("action"), action, allowed if newer else ["Restart"]))
        codes = opt_obj(rule.get("exitCodes"), at.child("exitCodes"), errs)
        if codes is None:
            errs.append(required(at.child("exitCodes"), "must be specified"))
            continue
        operator = field_text(codes, "operator", at.child("exitCodes"), errs)
        if operator not in RESTART_RULE_OPERATORS:
            errs.append(not_supported(at.child("exitCodes", "operator"), operator, RESTART_RULE_OPERATORS))
        values = arr(codes.get("values"), at.child("exitCodes", "values"), errs)
        if len(values) > MAX_EXIT_CODES:
            where = at.child("exitCodes", "values")
            errs.append(too_many(where, len(values), MAX_EXIT_CODES) if newer else too_long(where, MAX_EXIT_CODES, since_1_32=True))


def _init_restart_policy(policy: str | None, rules: list[dict[str, Any]], path: FieldPath, errs: Errors, opts: PodOptions) -> None:
    """validateInitContainerRestartPolicy (validation.go v1.37.2, the same in v1.35.4 and v1.36.3).
    Without ContainerRestartRules (1.29 to 1.33; 1.34 drops any value but Always first) only a
    sidecar's Always is supported. With it, any init container but a sidecar is judged as an app
    container; a sidecar may have rules only with RestartAllContainersOnContainerExits (1.36).
    Rules without a policy are refused from 1.35; before, the rules never reach validation."""
    if policy is None:
        if rules:
            errs.append(required(path.child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
        return
    if not opts.on("ContainerRestartRules"):
        if policy != "Always":
            errs.append(not_supported(path.child("restartPolicy"), policy, ["Always"]))
    elif policy != "Always" or opts.on("RestartAllContainersOnContainerExits"):
        _container_restart_policy(policy, rules, path, errs, opts)
    elif rules:
        errs.append(forbidden(path.child("restartPolicyRules"), "restartPolicyRules are not allowed for init containers with restart policy Always"))


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
    pod_restart: str = "Always",
) -> None:
    """validateContainers (validation.go v1.37.2). `grace`: the pod's terminationGracePeriodSeconds,
    a sleep hook's bound; `claims`: the pod's declared resource claim names; `pod_restart`: its
    restartPolicy. A container's own restartPolicy and rules are judged by
    validateContainerRestartPolicy once ContainerRestartRules is on (1.35); before it the policy is
    Forbidden (1.28 to 1.33: 1.34 drops it, the gate off)."""
    if not containers:
        errs.append(required(path))
        return
    seen: set[str] = set()
    for i, c in enumerate(containers):
        at = path.index(i)
        _common(c, volumes, at, errs, opts, claims, pod_restart)
        name = name_of(c)
        if name in seen:
            errs.append(duplicate(at.child("name"), name))
        seen.add(name)
        lifecycle = c.get("lifecycle")
        if lifecycle is not None and (lifecycle := opt_obj(lifecycle, at.child("lifecycle"), errs)) is not None:
            validate_lifecycle(lifecycle, at.child("lifecycle"), errs, grace, opts)
        validate_probes(c, at, errs)
        if opts.on("ContainerRestartRules"):
            if c.get("restartPolicy") is not None or c.get("restartPolicyRules") is not None:
                _container_restart_policy(*_restart_rules(c, at, errs), at, errs, opts)
        elif c.get("restartPolicy") is not None:
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
    pod_restart: str = "Always",
) -> None:
    """validateInitContainers (pkg/apis/core/validation/validation.go v1.37.2; v1.28 to v1.36.3 as
    noted). Init containers share the name space of the app containers. A sidecar (`restartPolicy:
    Always`, SidecarContainers on from 1.29) may have hooks and probes, judged as an app
    container's; any other init container may not, nor (from 1.36) a resizePolicy that restarts it.
    In 1.28 the gate is off and drops.py removes `restartPolicy` before validation; in 1.34
    ContainerRestartRules, off, removes any value but Always. The `must not be set for init
    containers` refusal of a resizePolicy (AllowSidecarResizePolicy false) is not ported: that
    option is InPlacePodVerticalScaling, without which the field is dropped first."""
    seen = {name_of(c) for c in containers}
    for i, c in enumerate(inits):
        at = path.index(i)
        _common(c, volumes, at, errs, opts, claims, pod_restart)
        restart, rules = _restart_rules(c, at, errs)
        _init_restart_policy(restart, rules, at, errs, opts)
        sidecar = restart == "Always"
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
        resize = c.get("resizePolicy")
        if isinstance(resize, list) and _as_of_1_36(opts):
            # AllowExistingRestartContainerForNonSidecarInitContainer is false on create; the
            # list's types were reported by _common.
            for j, p in enumerate(resize):
                if isinstance(p, dict) and p.get("restartPolicy") == "RestartContainer":
                    where = at.child("resizePolicy").index(j).child("restartPolicy")
                    errs.append(invalid(where, "RestartContainer", "must not be set to 'RestartContainer' for non-sidecar initContainers"))


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
    pod_restart: str = "Always",
) -> None:
    """validateEphemeralContainers (validation.go v1.37.2), the allow list of validateFieldAllowList
    as `_NOT_FOR_EPHEMERAL`."""
    others = {name_of(c) for c in containers + inits}
    seen = set(others)
    for i, c in enumerate(ephemerals):
        at = path.index(i)
        _common(c, volumes, at, errs, opts, claims, pod_restart)
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
