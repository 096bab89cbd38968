"""The v1 defaults the API server applies before it validates a Pod or a pod template.

Validation reads defaulted objects: an unset restartPolicy is `Always` by then, a port's protocol
`TCP`, a probe's period 10 seconds, a volume with no source an emptyDir. Only defaults that a
check or a message can see are applied. Around them, as on the server: the fields the minor's
schema does not have are dropped first (its JSON decoding), the fields whose feature gate is off
at that minor after (`dropDisabledFields`); see drops.py. Input of the wrong shape is left alone:
validation reports it.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ..podrequests import supported_at_pod_level
from ..quantity import parse_quantity
from ..shapes import as_dict, as_list, as_object, only_objects
from .drops import Dropped, drop_all
from .options import DEFAULT_OPTIONS, PodOptions
from .resources import aggregate_containers
from .values import canonical
from .volumes import SOURCE_KEYS

_FILE_MODE = 0o644
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_SOURCES_FIELD = "sources"
# A docker reference's path: components of lowercase runs joined by '.', '_', '__' or dashes,
# separated by '/'.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH = re.compile(f"{_COMPONENT}(?:/{_COMPONENT})*")


def _sub(holder: dict[str, Any], key: str) -> dict[str, Any] | None:
    return as_object(holder.get(key))


def _set(holder: dict[str, Any], key: str, value: Any) -> None:
    """Go's `if x == zero { x = default }`: absent, null and the zero value are all unset."""
    current = holder.get(key)
    if current is None or (current in ("", 0) and not isinstance(current, bool)):
        holder[key] = value


def image_tag(image: str) -> str:
    """The tag ParseImageName finds: `latest` when none is written, "" for a digest or an
    unparsable reference."""
    if not image or image != image.strip() or "@" in image:
        return ""
    rest = image
    first, sep, remainder = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        rest = remainder
    name, _, tag = rest.rpartition(":") if ":" in rest.rsplit("/", 1)[-1] else (rest, "", "")
    if not _PATH.fullmatch(name):
        return ""
    return tag or "latest"


def _http_get(handler: dict[str, Any]) -> None:
    action = _sub(handler, "httpGet")
    if action is not None:
        _set(action, "path", "/")
        _set(action, "scheme", "HTTP")


def _container(c: dict[str, Any]) -> None:
    """The container's defaults; an absent field costs one lookup."""
    get = c.get
    if get("imagePullPolicy") in (None, ""):
        image = get("image")
        c["imagePullPolicy"] = "Always" if isinstance(image, str) and image_tag(image) == "latest" else "IfNotPresent"
    _set(c, "terminationMessagePath", "/dev/termination-log")
    _set(c, "terminationMessagePolicy", "File")
    if get("ports") is not None:
        for port in only_objects(as_list(get("ports"))):
            _set(port, "protocol", "TCP")
    for var in only_objects(as_list(get("env"))):
        ref = _sub(as_dict(var.get("valueFrom")), "fieldRef")
        if ref is not None:
            _set(ref, "apiVersion", "v1")
    for kind in _PROBES:
        probe = as_object(get(kind))
        if probe is None:
            continue
        _set(probe, "timeoutSeconds", 1)
        _set(probe, "periodSeconds", 10)
        _set(probe, "successThreshold", 1)
        _set(probe, "failureThreshold", 3)
        _http_get(probe)
        grpc = _sub(probe, "grpc")
        if grpc is not None and grpc.get("service") is None:
            grpc["service"] = ""
    lifecycle = as_object(get("lifecycle"))
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            handler = _sub(lifecycle, hook)
            if handler is not None:
                _http_get(handler)


def _downward_items(source: dict[str, Any]) -> None:
    for item in only_objects(as_list(source.get("items"))):
        ref = _sub(item, "fieldRef")
        if ref is not None:
            _set(ref, "apiVersion", "v1")


def _volume(volume: dict[str, Any]) -> None:
    if not any(volume.get(key) is not None for key in SOURCE_KEYS):
        volume["emptyDir"] = {}
    for key in ("configMap", "secret", "downwardAPI", "projected"):
        source = _sub(volume, key)
        if source is not None and source.get("defaultMode") is None:
            source["defaultMode"] = _FILE_MODE
    if (source := _sub(volume, "downwardAPI")) is not None:
        _downward_items(source)
    for part in only_objects(as_list((_sub(volume, "projected") or {}).get(_SOURCES_FIELD))):
        if (downward := _sub(part, "downwardAPI")) is not None:
            _downward_items(downward)
        if (token := _sub(part, "serviceAccountToken")) is not None:
            _set(token, "expirationSeconds", 3600)
    if (host := _sub(volume, "hostPath")) is not None and host.get("type") is None:
        host["type"] = ""


def _spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec and everything under it."""
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    _set(spec, "schedulerName", "default-scheduler")
    if spec.get("serviceAccountName") in (None, "") and isinstance(spec.get("serviceAccount"), str):
        spec["serviceAccountName"] = spec["serviceAccount"]
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in only_objects(as_list(spec.get(key))):
            _container(c)
    if spec.get("volumes") is not None:
        for volume in only_objects(as_list(spec.get("volumes"))):
            _volume(volume)


def _pod_only(spec: dict[str, Any]) -> None:
    """SetDefaults_Pod: limits stand in for missing requests, service links on, and on the host
    network a hostPort repeats its containerPort."""
    for key in ("containers", "initContainers"):
        for c in only_objects(as_list(spec.get(key))):
            resources = _sub(c, "resources")
            limits = _sub(resources, "limits") if resources is not None else None
            if resources is None or limits is None:
                continue
            requests = resources.get("requests")
            if not isinstance(requests, dict):
                requests = resources["requests"] = {}
            for name, amount in limits.items():
                if name not in requests and parse_quantity(amount) is not None:  # an unparsable limit is reported once, at limits
                    requests[name] = amount if type(amount) is str else copy.deepcopy(amount)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            for c in only_objects(as_list(spec.get(key))):
                for port in only_objects(as_list(c.get("ports"))):
                    if port.get("hostPort") in (None, 0):
                        port["hostPort"] = port.get("containerPort", 0)


def _aggregate(spec: dict[str, Any], part: str) -> dict[str, str]:
    """The containers' aggregate of `part` (resources.aggregate_containers), each written as Go's
    Quantity prints it, in the format of the quantity that set it."""
    return {k: canonical(raw, amount) for k, (raw, amount) in aggregate_containers(spec, part).items()}


def _pod_level_resources(spec: dict[str, Any]) -> None:
    """defaultHugePagePodLimits and defaultPodRequests (SetDefaults_Pod, pkg/apis/core/v1, v1.34.4;
    DefaultPodLevelResources in v1.37.2 makes the same first two steps) where PodLevelResources is
    on and the pod sets `resources`: a hugepage limit the containers set and the pod does not,
    then cpu and memory requests from the containers' aggregate, then each remaining request
    from its pod limit. (1.37's third step, limits raised to the containers', is not ported: it
    only adds a limit at least as large as every request.)"""
    resources = spec.get("resources")
    if type(resources) is not dict:
        return
    limits, requests = resources.get("limits"), resources.get("requests")
    limits = dict(limits) if type(limits) is dict else ({} if limits is None else None)
    requests = dict(requests) if type(requests) is dict else ({} if requests is None else None)
    if limits is None or requests is None or (not limits and not requests):
        return  # a malformed map is the validation's to report
    for name, amount in _aggregate(spec, "limits").items():
        if name.startswith("hugepages-") and name not in requests and name not in limits:
            limits[name] = amount
    for name, amount in _aggregate(spec, "requests").items():
        if name in ("cpu", "memory") and name not in requests:
            requests[name] = amount
    for name, amount in limits.items():
        if name not in requests and supported_at_pod_level(name):
            requests[name] = amount
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests


def prepare_spec(spec: Any, opts: PodOptions = DEFAULT_OPTIONS, *, pod: bool = True) -> list[Dropped]:
    """In place, what the server does to a spec before validating it: drop what `opts.version`
    does not know and the fields whose gate is off (`drops.drop_all`), apply the v1 defaults (a
    Pod's too when `pod`). Returns what was dropped, each at its path under the spec."""
    if not isinstance(spec, dict):
        return []
    dropped = drop_all(spec, opts)
    _spec(spec)
    if pod:
        _pod_only(spec)
        if opts.on("PodLevelResources"):
            _pod_level_resources(spec)
    return dropped


def apply_template_defaults(template: Any, opts: PodOptions = DEFAULT_OPTIONS) -> Any:
    """A prepared (`prepare_spec`) deep copy of a pod template (`{metadata, spec}`), as a
    workload's template is; anything that is not an object is returned as it is."""
    out = copy.deepcopy(template)
    if isinstance(out, dict):
        prepare_spec(out.get("spec"), opts, pod=False)
    return out


def apply_pod_defaults(pod: Any, opts: PodOptions = DEFAULT_OPTIONS) -> Any:
    """A prepared (`prepare_spec`) deep copy of a Pod, as the API server has it on create."""
    out = copy.deepcopy(pod)
    if isinstance(out, dict):
        prepare_spec(out.get("spec"), opts)
    return out


def apply_pod_spec_defaults(spec: Any, opts: PodOptions = DEFAULT_OPTIONS) -> Any:
    """A prepared deep copy of a Pod's spec alone (the pod a controller builds from a template)."""
    out = copy.deepcopy(spec)
    prepare_spec(out, opts)
    return out


def default_pod_spec(spec: Any, opts: PodOptions = DEFAULT_OPTIONS) -> list[Dropped]:
    """`prepare_spec` of a Pod's spec in place: for a caller that already holds its own copy (the
    rule that builds Kthena's pods copies each template once, and a second copy would double its
    cost). Returns what was dropped."""
    return prepare_spec(spec, opts)
