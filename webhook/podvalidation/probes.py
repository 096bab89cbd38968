"""Probes and lifecycle hooks: exactly one handler each, its own fields, and the probe's bounds.

A lifecycle hook may `sleep` from 1.29 (validateSleepAction). The field only reaches validation
at a minor whose schema has it and whose PodLifecycleSleepAction gate is on: drops.py removes it
everywhere else, before validation, as the API server does."""

from __future__ import annotations

from typing import Any

from .. import names
from .errors import Errors, FieldPath, forbidden, invalid, not_supported, required
from .options import DEFAULT_OPTIONS, PodOptions
from .values import arr, integer, obj, opt_int, opt_obj, text

SCHEMES = ["HTTP", "HTTPS"]
_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_HOOK_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
SLEEP_ZERO = "PodLifecycleSleepActionAllowZero"


def port_errors(value: Any, path: FieldPath) -> Errors:
    """An IntOrString port: a number in range, or an IANA service name (a digit string is a name)."""
    if isinstance(value, str):
        return [invalid(path, value, m) for m in names.is_valid_port_name(value)]
    number = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return [invalid(path, number, m) for m in names.is_valid_port_num(number)]


def _sleep(action: dict[str, Any], path: FieldPath, grace: int | None, opts: PodOptions, errs: Errors) -> None:
    """validateSleepAction (pkg/apis/core/validation/validation.go), by minor: 1.29 to 1.31 refuse
    zero; 1.32 says so with a hint while PodLifecycleSleepActionAllowZero is off (KEP-4818's
    text); from 1.33, the gate on, zero is allowed. Reported at `sleep`, as upstream does. The
    pod's grace period is always set by then (defaulted to 30)."""
    seconds = integer(action.get("seconds"), path.child("seconds"), errs)
    if grace is None:
        return  # a grace period of the wrong type: its own error says so
    if opts.on(SLEEP_ZERO):
        if seconds < 0 or seconds > grace:
            errs.append(invalid(path, seconds, f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"))
    elif seconds <= 0 or seconds > grace:
        hint = ". Please enable PodLifecycleSleepActionAllowZero feature gate if you need a sleep of zero duration." if opts.is_off(SLEEP_ZERO) else ""
        errs.append(invalid(path, seconds, f"must be greater than 0 and less than terminationGracePeriodSeconds ({grace}){hint}"))


def _handler_fields(kind: str, action: dict[str, Any], path: FieldPath, errs: Errors, grace: int | None, opts: PodOptions) -> None:
    if kind == "sleep":
        _sleep(action, path, grace, opts, errs)
    elif kind == "exec":
        if not arr(action.get("command"), path.child("command"), errs):
            errs.append(required(path.child("command")))
    elif kind == "httpGet":
        if not text(action.get("path"), path.child("path"), errs):
            errs.append(required(path.child("path")))
        errs += port_errors(action.get("port"), path.child("port"))
        scheme = text(action.get("scheme"), path.child("scheme"), errs)
        if scheme not in SCHEMES:
            errs.append(not_supported(path.child("scheme"), scheme, SCHEMES))
        for i, raw in enumerate(arr(action.get("httpHeaders"), path.child("httpHeaders"), errs)):
            header = text(obj(raw, path.child("httpHeaders").index(i), errs).get("name"), path.child("httpHeaders"), errs)
            errs += [invalid(path.child("httpHeaders"), header, m) for m in names.is_http_header_name(header)]
    elif kind == "tcpSocket":
        errs += port_errors(action.get("port"), path.child("port"))
    else:
        errs += port_errors(integer(action.get("port"), path.child("port"), errs), path.child("port"))


def validate_handler(
    holder: dict[str, Any], kinds: tuple[str, ...], path: FieldPath, errs: Errors, grace: int | None = None, opts: PodOptions = DEFAULT_OPTIONS
) -> None:
    """validateHandler: the kinds in upstream's order (a probe's exec, httpGet, tcpSocket, grpc; a
    hook's exec, httpGet, tcpSocket, sleep), the first one set judged, any later one forbidden."""
    count = 0
    for kind in kinds:
        action = opt_obj(holder.get(kind), path.child(kind), errs)
        if action is None:
            continue
        if count:
            errs.append(forbidden(path.child(kind), "may not specify more than 1 handler type"))
            continue
        count += 1
        _handler_fields(kind, action, path.child(kind), errs, grace, opts)
    if count == 0:
        errs.append(required(path, "must specify a handler type"))


def validate_lifecycle(lifecycle: dict[str, Any], path: FieldPath, errs: Errors, grace: int | None = None, opts: PodOptions = DEFAULT_OPTIONS) -> None:
    """validateLifecycle: `grace` is the pod's terminationGracePeriodSeconds (a sleep's bound)."""
    for hook in ("postStart", "preStop"):
        handler = opt_obj(lifecycle.get(hook), path.child(hook), errs)
        if handler is not None:
            validate_handler(handler, _HOOK_HANDLERS, path.child(hook), errs, grace, opts)


def _probe(probe: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    validate_handler(probe, _PROBE_HANDLERS, path, errs)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        number = integer(probe.get(key), path.child(key), errs)
        if number < 0:
            errs.append(invalid(path.child(key), number, "must be greater than or equal to 0"))
    grace = opt_int(probe.get("terminationGracePeriodSeconds"), path.child("terminationGracePeriodSeconds"), errs)
    if grace is not None and grace <= 0:
        errs.append(invalid(path.child("terminationGracePeriodSeconds"), grace, "must be greater than 0"))


def validate_probes(container: dict[str, Any], path: FieldPath, errs: Errors) -> None:
    """Liveness and startup probes need successThreshold 1; a readiness probe has no grace period."""
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if probe is None or (probe := opt_obj(probe, path.child(kind), errs)) is None:
            continue
        at = path.child(kind)
        _probe(probe, at, errs)
        if kind == "readinessProbe":
            grace = opt_int(probe.get("terminationGracePeriodSeconds"), at.child("terminationGracePeriodSeconds"), errs)
            if grace is not None:
                errs.append(invalid(at.child("terminationGracePeriodSeconds"), grace, "must not be set for readinessProbes"))
        else:
            threshold = integer(probe.get("successThreshold"), at.child("successThreshold"), errs)
            if threshold != 1:
                errs.append(invalid(at.child("successThreshold"), threshold, "must be 1"))
