"""ValidatePodSpec, ValidatePodCreate and ValidatePodTemplateSpec: the order of the checks, and the
pod-level fields no other module owns (restart and DNS policy, DNS config, names of other objects,
host aliases, gates, deadlines).

`is_pod` is upstream's `ResourceIsPod`: a Pod (or the pod a controller makes from a template)
must repeat its containerPort as hostPort on the host network; a bare template may leave it 0.
"""

from __future__ import annotations

from typing import Any

from .. import names
from ..shapes import as_dict
from .containers import image_whitespace, items, name_of, validate_containers, validate_ephemeral_containers, validate_init_containers
from .errors import Errors, FieldPath, choice, duplicate, forbidden, invalid, located, required, too_long
from .meta import SECCOMP_CONTAINER_PREFIX, SECCOMP_POD_ANNOTATION, validate_annotations, validate_labels, validate_object_meta, validate_pod_annotations
from .options import DEFAULT_OPTIONS, PodOptions
from .platform import all_containers, validate_os
from .resources import declared_claims, validate_overhead, validate_pod_resource_claims, validate_pod_resources
from .scheduling import merged_label_key_errors, validate_affinity, validate_tolerations, validate_topology_spread
from .security import validate_apparmor_match, validate_pod_security
from .values import arr, field_text, obj, opt_int, opt_obj, opt_text, string_map, strings, text
from .volumes import validate_volumes

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]
_MAX_INT32 = 2**31 - 1


def _host_network_ports(spec: dict[str, Any], path: FieldPath, is_pod: bool, errs: Errors) -> None:
    if spec.get("hostNetwork") is not True:
        return
    for i, c in enumerate(items(spec.get("containers"), path.child("containers"), [])):
        for j, raw in enumerate(arr(c.get("ports"), path, [])):
            port = as_dict(raw)
            host, target = port.get("hostPort") or 0, port.get("containerPort") or 0
            if (is_pod or host != 0) and host != target:
                at = path.child("containers").index(i).child("ports").index(j).child("hostPort")
                errs.append(invalid(at, host, "must match `containerPort` when `hostNetwork` is true"))


def _dns_config(spec: dict[str, Any], policy: str, path: FieldPath, errs: Errors) -> None:
    config = opt_obj(spec.get("dnsConfig"), path, errs)
    if policy == "None":
        if config is None:
            errs.append(required(path, "must provide `dnsConfig` when `dnsPolicy` is None"))
            return
        if not arr(config.get("nameservers"), path.child("nameservers"), []):
            errs.append(required(path.child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
            return
    if config is None:
        return
    servers = strings(config.get("nameservers"), path.child("nameservers"), errs)
    if len(servers) > 3:
        errs.append(invalid(path.child("nameservers"), servers, "must not have more than 3 nameservers"))
    for i, server in enumerate(servers):
        if not names.parses_as_ip(server):
            errs.append(invalid(path.child("nameservers").index(i), server, "must be valid IP address"))
    searches = strings(config.get("searches"), path.child("searches"), errs)
    if len(searches) > 32:
        errs.append(invalid(path.child("searches"), searches, "must not have more than 32 search paths"))
    if len(" ".join(searches)) > 2048:
        errs.append(invalid(path.child("searches"), searches, "must not have more than 2048 characters (including spaces) in the search list"))
    for i, search in enumerate(searches):
        trimmed = search[:-1] if search.endswith(".") else search
        errs += [invalid(path.child("searches").index(i), trimmed, m) for m in names.is_dns1123_subdomain(trimmed)]
    for i, option in enumerate(arr(config.get("options"), path.child("options"), errs)):
        if not text(obj(option, path.child("options").index(i), errs).get("name"), path.child("options").index(i), errs):
            errs.append(required(path.child("options").index(i), "must not be empty"))


def _gates(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    for i, gate in enumerate(arr(spec.get("readinessGates"), path.child("readinessGates"), errs)):
        at = path.child("readinessGates").index(i).child("conditionType")
        kind = text(obj(gate, path.child("readinessGates").index(i), errs).get("conditionType"), at, errs)
        errs += [invalid(at, kind, m) for m in names.is_qualified_name(kind)]
    seen: set[str] = set()
    for i, gate in enumerate(arr(spec.get("schedulingGates"), path.child("schedulingGates"), errs)):
        at = path.child("schedulingGates").index(i)
        name = text(obj(gate, at, errs).get("name"), at.child("name"), errs)
        errs += [invalid(at, name, m) for m in names.is_qualified_name(name)]
        if name in seen:
            errs.append(duplicate(at, name))
        seen.add(name)


def _named_objects(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """Names of other objects and of this pod's host, then the deadline."""
    for key in ("serviceAccountName", "nodeName"):
        if spec.get(key) is None:
            continue  # nothing to check: costs one lookup
        name = text(spec.get(key), path.child(key), errs)
        if name:
            errs += [invalid(path.child(key), name, m) for m in names.name_is_dns_subdomain(name)]
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (deadline := opt_int(deadline, path.child("activeDeadlineSeconds"), errs)) is not None and not 1 <= deadline <= _MAX_INT32:
        errs.append(invalid(path.child("activeDeadlineSeconds"), deadline, names.inclusive_range_error(1, _MAX_INT32)))
    for key in ("hostname", "subdomain"):
        if spec.get(key) is None:
            continue
        value = text(spec.get(key), path.child(key), errs)
        if value:
            errs += [invalid(path.child(key), value, m) for m in names.is_dns1123_label(value)]


def _hostname_override(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """`hostnameOverride` (gate HostnameOverride, 1.34 alpha): a DNS subdomain of at most 64
    characters, not with `setHostnameAsFQDN: true` and not on the host network, as the field's API
    documentation states. The 1.34 source was not readable here (the stored validation.go
    predates the field), so the messages of the last two are this port's own words."""
    at = path.child("hostnameOverride")
    value = text(spec.get("hostnameOverride"), at, errs)
    if not value:
        return  # the constraints are documented for a non-empty value; an empty one is let pass
    if len(value) > 64:
        errs.append(too_long(at, 64))
    errs += [invalid(at, value, m) for m in names.is_dns1123_subdomain(value)]
    if spec.get("setHostnameAsFQDN") is True:
        errs.append(forbidden(at, "may not be set when `setHostnameAsFQDN` is true"))
    if spec.get("hostNetwork") is True:
        errs.append(forbidden(at, "may not be set when `hostNetwork` is true"))


def _host_aliases(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    for i, raw in enumerate(arr(spec.get("hostAliases"), path, errs)):
        alias = obj(raw, path.index(i), errs)
        ip = text(alias.get("ip"), path.child("ip"), errs)
        if not names.parses_as_ip(ip):
            errs.append(invalid(path.child("ip"), ip, "must be valid IP address"))
        for host in strings(alias.get("hostnames"), path.child("hostnames"), errs):
            errs += [invalid(path.child("hostnames"), host, m) for m in names.is_dns1123_subdomain(host)]


def _priority_and_runtime(spec: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    get = spec.get
    if get("priorityClassName") is None and get("runtimeClassName") is None and get("preemptionPolicy") is None and get("overhead") is None:
        return  # nothing to check: four lookups
    priority_class = text(spec.get("priorityClassName"), path.child("priorityClassName"), errs)
    if priority_class:
        errs += [invalid(path.child("priorityClassName"), priority_class, m) for m in names.name_is_dns_subdomain(priority_class)]
    runtime = opt_text(spec.get("runtimeClassName"), path.child("runtimeClassName"), errs)
    if runtime is not None:
        errs += [invalid(path.child("runtimeClassName"), runtime, m) for m in names.name_is_dns_subdomain(runtime)]
    preemption = opt_text(spec.get("preemptionPolicy"), path.child("preemptionPolicy"), errs)
    if preemption is not None:
        choice(preemption, PREEMPTION_POLICIES, path, "preemptionPolicy", errs)
    if spec.get("overhead") is not None:
        validate_overhead(spec.get("overhead"), path.child("overhead"), errs)


def validate_pod_spec(spec: dict[str, Any], path: FieldPath, *, is_pod: bool = True, opts: PodOptions = DEFAULT_OPTIONS) -> Errors:
    """ValidatePodSpec on a defaulted spec, every error rooted at `path`."""
    errs: Errors = []
    # Each check below finds nothing in an absent field, so an absent field costs one lookup.
    get = spec.get
    volumes = validate_volumes(get("volumes"), path.child("volumes"), errs, opts=opts, is_pod=is_pod) if get("volumes") is not None else {}
    claims = frozenset[str]()
    if get("resourceClaims") is not None and opts.on("DynamicResourceAllocation"):
        claims = declared_claims(spec)
        validate_pod_resource_claims(get("resourceClaims"), path.child("resourceClaims"), errs)
    containers = items(get("containers"), path.child("containers"), errs)
    inits = items(get("initContainers"), path.child("initContainers"), errs) if get("initContainers") is not None else []
    ephemerals = items(get("ephemeralContainers"), path.child("ephemeralContainers"), errs) if get("ephemeralContainers") is not None else []
    grace = get("terminationGracePeriodSeconds")
    grace = grace if type(grace) is int else None  # defaulted to 30; another type is reported below
    restart = get("restartPolicy")
    restart = restart if type(restart) is str else ""  # defaulted to Always; another type is reported below
    validate_containers(containers, volumes, path.child("containers"), errs, opts=opts, claims=claims, grace=grace, pod_restart=restart)
    if inits:
        validate_init_containers(inits, containers, volumes, path.child("initContainers"), errs, opts=opts, claims=claims, grace=grace, pod_restart=restart)
    if ephemerals:
        validate_ephemeral_containers(
            ephemerals, containers, inits, volumes, path.child("ephemeralContainers"), errs, opts=opts, claims=claims, pod_restart=restart
        )
    if get("resources") is not None and opts.on("PodLevelResources"):
        validate_pod_resources(spec, path.child("resources"), errs, opts=opts)
    _host_network_ports(spec, path, is_pod, errs)
    choice(field_text(spec, "restartPolicy", path, errs), RESTART_POLICIES, path, "restartPolicy", errs)
    dns_policy = field_text(spec, "dnsPolicy", path, errs)
    choice(dns_policy, DNS_POLICIES, path, "dnsPolicy", errs)
    if get("nodeSelector") is not None:
        errs += validate_labels(string_map(get("nodeSelector"), path.child("nodeSelector"), errs), path.child("nodeSelector"))
    validate_pod_security(spec, path.child("securityContext"), errs, opts=opts)
    if get("affinity") is not None:
        validate_affinity(spec, path.child("affinity"), errs, opts=opts)
    if dns_policy == "None" or get("dnsConfig") is not None:
        _dns_config(spec, dns_policy, path.child("dnsConfig"), errs)
    if get("readinessGates") is not None or get("schedulingGates") is not None:
        _gates(spec, path, errs)
    if get("topologySpreadConstraints") is not None:
        validate_topology_spread(get("topologySpreadConstraints"), path.child("topologySpreadConstraints"), errs, opts=opts)
    _named_objects(spec, path, errs)
    if get("hostnameOverride") is not None and opts.on("HostnameOverride"):
        _hostname_override(spec, path, errs)
    if get("tolerations") is not None:
        validate_tolerations(get("tolerations"), path.child("tolerations"), errs)
    if get("hostAliases") is not None:
        _host_aliases(spec, path.child("hostAliases"), errs)
    _priority_and_runtime(spec, path, errs)
    if get("os") is not None:
        validate_os(spec, path, errs)
    return errs


def _seccomp_match(annotations: dict[str, str], spec: dict[str, Any], path: FieldPath) -> Errors:
    """A seccomp annotation and the matching seccompProfile field must agree."""
    errs: Errors = []
    if not any(k == SECCOMP_POD_ANNOTATION or k.startswith(SECCOMP_CONTAINER_PREFIX) for k in annotations):
        return errs  # no annotation to agree with
    pod_context = spec.get("securityContext") if isinstance(spec.get("securityContext"), dict) else {}
    assert isinstance(pod_context, dict)
    checks = [(annotations.get(SECCOMP_POD_ANNOTATION), pod_context.get("seccompProfile"), path.child("securityContext", "seccompProfile"))]
    for c, at in all_containers(spec, path):
        context = c.get("securityContext") if isinstance(c.get("securityContext"), dict) else {}
        assert isinstance(context, dict)
        name = name_of(c)
        checks.append((annotations.get(SECCOMP_CONTAINER_PREFIX + name), context.get("seccompProfile"), at.child("securityContext", "seccompProfile")))
    for annotation, profile, at in checks:
        if annotation is None or not isinstance(profile, dict):
            continue
        kind, local = profile.get("type"), profile.get("localhostProfile")
        if (
            (kind == "Unconfined" and annotation != "unconfined")
            or (kind == "RuntimeDefault" and annotation not in ("runtime/default", "docker/default"))
            or (kind == "Localhost" and not annotation.startswith("localhost/"))
        ):
            errs.append(forbidden(at.child("type"), "seccomp type in annotation and field must match"))
        elif kind == "Localhost" and annotation[len("localhost/") :] != local:
            errs.append(forbidden(at.child("localhostProfile"), "seccomp profile in annotation and field must match"))
    return errs


def _container_names(spec: dict[str, Any]) -> set[str]:
    return {name_of(c) for c, _ in all_containers(spec, FieldPath())}


def _image_whitespace(spec: dict[str, Any], path: FieldPath) -> Errors:
    errs: Errors = []
    for key in ("containers", "initContainers"):
        listed = spec.get(key)
        if not isinstance(listed, list):
            continue  # absent, or a type error `validate_pod_spec` reports
        for i, c in enumerate(listed):
            if isinstance(c, dict):  # anything else has no image
                errs += image_whitespace(c, path.child(key).index(i))
    return errs


def validate_pod_create(pod: Any, *, opts: PodOptions = DEFAULT_OPTIONS) -> Errors:
    """ValidatePodCreate on a defaulted Pod (see `apply_pod_defaults`)."""
    errs: Errors = []
    pod = obj(pod, FieldPath(), errs)
    if errs:
        return errs  # not an object at all: nothing further to say
    meta_path, spec_path = FieldPath.of("metadata"), FieldPath.of("spec")
    meta = obj(pod.get("metadata"), meta_path, errs)
    spec = obj(pod.get("spec"), spec_path, errs)
    validate_object_meta(meta, meta_path, errs)
    annotations = string_map(meta.get("annotations"), meta_path.child("annotations"), [])
    errs += validate_pod_annotations(annotations, spec, lambda: _container_names(spec), meta_path.child("annotations"))
    errs += validate_pod_spec(spec, spec_path, is_pod=True, opts=opts)
    errs += merged_label_key_errors(spec, meta.get("labels"), spec_path, opts=opts)
    errs += _image_whitespace(spec, spec_path)
    errs += _on_create(spec, spec_path)
    return errs + _seccomp_match(annotations, spec, spec_path) + validate_apparmor_match(annotations, spec, spec_path, opts=opts)


def _on_create(spec: dict[str, Any], spec_path: FieldPath) -> Errors:
    """What ValidatePodCreate refuses beyond the spec: fields a new pod may not have yet."""
    errs: Errors = []
    if spec.get("ephemeralContainers") is not None and arr(spec.get("ephemeralContainers"), spec_path, []):
        errs.append(forbidden(spec_path.child("ephemeralContainers"), "cannot be set on create"))
    if spec.get("nodeName") and arr(spec.get("schedulingGates"), spec_path, []):
        errs.append(forbidden(spec_path.child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
    return errs


def pod_spec_errors(spec: dict[str, Any], spec_path: FieldPath, *, is_pod: bool, opts: PodOptions = DEFAULT_OPTIONS) -> Errors:
    """What `validate_pod_template_spec` finds in the spec alone (its metadata aside)."""
    return located(lambda at: _spec_errors(spec, at, is_pod, opts), spec_path)


def _spec_errors(spec: dict[str, Any], spec_path: FieldPath, is_pod: bool, opts: PodOptions) -> Errors:
    errs = validate_pod_spec(spec, spec_path, is_pod=is_pod, opts=opts)
    if is_pod:
        errs += _image_whitespace(spec, spec_path)
        errs += _on_create(spec, spec_path)
    return errs


def validate_pod_template_spec(
    template: Any, path: FieldPath, *, is_pod: bool = False, spec_errors: Errors | None = None, opts: PodOptions = DEFAULT_OPTIONS
) -> Errors:
    """ValidatePodTemplateSpec on a defaulted template (see `apply_template_defaults`), rooted at
    `path`. Upstream reports a template's labels at `<path>.labels`; with `is_pod=True` the
    template is judged as the Pod a controller creates from it, so its metadata errors sit at
    `<path>.metadata.labels`, and the Pod-only checks (hostPort on the host network, image
    whitespace, what ValidatePodCreate refuses on a new pod) apply.

    `spec_errors`, when given, is `pod_spec_errors` of this spec at `<path>.spec`, already known
    (a caller judging several pods made from equal specs computes it once)."""
    return located(lambda at: _template_errors(template, at, is_pod, spec_errors, opts), path)


def _template_errors(template: Any, path: FieldPath, is_pod: bool, spec_errors: Errors | None, opts: PodOptions) -> Errors:
    errs: Errors = []
    template = obj(template, path, errs)
    if errs:
        return errs
    meta_path = path.child("metadata") if is_pod else path
    meta = obj(template.get("metadata"), path.child("metadata"), errs)
    spec_path = path.child("spec")
    spec = obj(template.get("spec"), spec_path, errs)
    labels = string_map(meta.get("labels"), meta_path.child("labels"), errs)
    annotations = string_map(meta.get("annotations"), meta_path.child("annotations"), errs)
    errs += validate_labels(labels, meta_path.child("labels"))
    errs += validate_annotations(annotations, meta_path.child("annotations"))
    errs += validate_pod_annotations(annotations, spec, lambda: _container_names(spec), meta_path.child("annotations"))
    errs += _spec_errors(spec, spec_path, is_pod, opts) if spec_errors is None else spec_errors
    if is_pod:
        errs += merged_label_key_errors(spec, labels, spec_path, opts=opts)
    errs += _seccomp_match(annotations, spec, spec_path)
    errs += validate_apparmor_match(annotations, spec, spec_path, opts=opts)
    if not is_pod and arr(spec.get("ephemeralContainers"), path, []):
        errs.append(forbidden(spec_path.child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
    return errs
