"""Writing a pod's cost: one code path for the worker and for `reconcile --clear`.

Both send a `test`-guarded JSON Patch at the rate `--scoring-qps` allows and must tell the same
answers apart: written (the pod as the server now has it), gone (404), changed since we read it
(409, or 422 from a failed `test`: read again and decide afresh, never resend blindly),
throttled (429 with Retry-After) and failed (anything else, network errors included). `Patcher`
sends, classifies and counts; the caller decides what an outcome means for it (the worker
retries through its write queue, `--clear` a few times in place). It never raises.

The patches are built here too, next to where they are sent: `write_patch` sets a cost and our
record of it, `clear_patch` removes them, each guarded by `test` operations so that the API
server refuses a patch built from a pod that has changed since."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jsonpointer import escape
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ...kube.reflector import retry_after
from ...kube.responses import json_body
from ..settings import RECORD_KEY, ReconcileSettings
from .health import Metrics
from .pacing import RateLimiter

log = logging.getLogger("servinggate.scalein")

JSON_PATCH = "application/json-patch+json"

Status = Literal["written", "found", "gone", "changed", "throttled", "failed", "stopped"]


def write_patch(annotations: Mapping[str, str] | None, resource_version: str, key: str, record_key: str, value: str) -> list[dict[str, Any]]:
    """JSON Patch setting the cost and our record, guarded by `test` ops so that a concurrent edit
    makes the API server refuse it (422) instead of being lost. A present value is tested
    directly; an absent one cannot be (a `test` of a missing member is an error in RFC 6902 and a
    null match in the API server's library), so absence is proved by testing resourceVersion."""
    if annotations is None:
        return [
            {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
            {"op": "add", "path": "/metadata/annotations", "value": {key: value, record_key: value}},
        ]
    ops: list[dict[str, Any]] = []
    current, record = annotations.get(key), annotations.get(record_key)
    if current is None or record is None:
        ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version})
    if current is not None:
        ops.append({"op": "test", "path": "/metadata/annotations/" + escape(key), "value": current})
    if record is not None:
        ops.append({"op": "test", "path": "/metadata/annotations/" + escape(record_key), "value": record})
    ops.append({"op": "add", "path": "/metadata/annotations/" + escape(key), "value": value})
    ops.append({"op": "add", "path": "/metadata/annotations/" + escape(record_key), "value": value})
    return ops


def clear_patch(annotations: Mapping[str, str] | None, key: str, record_key: str) -> list[dict[str, Any]]:
    """Remove the cost only where our record still matches it; drop our record either way.
    Empty list: nothing of ours on this pod."""
    if not annotations or record_key not in annotations:
        return []
    record = annotations[record_key]
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/annotations/" + escape(record_key), "value": record}]
    if annotations.get(key) == record:
        ops.append({"op": "test", "path": "/metadata/annotations/" + escape(key), "value": record})
        ops.append({"op": "remove", "path": "/metadata/annotations/" + escape(key)})
    ops.append({"op": "remove", "path": "/metadata/annotations/" + escape(record_key)})
    return ops


@dataclass(frozen=True)
class PatchResult:
    """What became of one patch or read. `pod` is the pod the server returned (written, found); `wait` the
    seconds the server asked us to wait (throttled); `code` the HTTP status (0: no answer)."""

    status: Status
    pod: dict[str, Any] | None = None
    wait: float = 0.0
    code: int = 0


class Patcher:
    """Sends guarded JSON Patches to pods, rate limited, and reads pods back."""

    def __init__(self, core: client.CoreV1Api, limiter: RateLimiter, metrics: Metrics, stop: threading.Event) -> None:
        self.core = core
        self.limiter = limiter
        self.metrics = metrics
        self.stop = stop

    def wait_turn(self) -> bool:
        """Wait for the rate limiter's next token; False when asked to stop meanwhile. The writer
        threads call it before they pick what to send, so the pick is made at sending time."""
        wait = self.limiter.delay()
        while wait > 0 and not self.stop.is_set():
            self.stop.wait(wait)
            wait = self.limiter.delay()
        return not self.stop.is_set()

    def send(self, key: str, ops: list[dict[str, Any]], purpose: str, *, paced: bool = True) -> PatchResult:
        """Patch pod `key` ("ns/name") with `ops`. `purpose` labels the write metric (write,
        overwrite, clear); failures count as errors of op `clear` or `patch`. `paced=False`: the
        caller already took its token (`wait_turn`)."""
        if (paced and not self.wait_turn()) or self.stop.is_set():
            return PatchResult("stopped")
        op = "clear" if purpose == "clear" else "patch"
        ns, _, name = key.partition("/")
        try:
            pod = json_body(self.core.patch_namespaced_pod(name, ns, ops, _content_type=JSON_PATCH, _preload_content=False, _request_timeout=30))
        except ApiException as exc:
            code = int(exc.status or 0)
            if code == 404:
                return PatchResult("gone", code=code)
            if code in (409, 422):
                self.metrics.conflicts.inc()
                return PatchResult("changed", code=code)
            self.metrics.errors.labels(op, str(code)).inc()
            if code == 429:
                return PatchResult("throttled", wait=retry_after(exc, 1.0), code=code)
            return PatchResult("failed", code=code)
        except Exception as exc:  # the network, a proxy: one pod never stops the loop
            self.metrics.errors.labels(op, "0").inc()
            log.warning({"msg": "patch failed", "pod": key, "error": repr(exc)})
            return PatchResult("failed")
        self.metrics.writes.labels(purpose).inc()
        return PatchResult("written", pod=pod if isinstance(pod, dict) else None, code=200)

    def read(self, key: str) -> PatchResult:
        """The pod as the server has it now (`found`), `gone` when it no longer exists, `failed`
        otherwise (counted as a `read` error)."""
        ns, _, name = key.partition("/")
        try:
            pod = json_body(self.core.read_namespaced_pod(name, ns, _preload_content=False, _request_timeout=30))
        except ApiException as exc:
            if exc.status == 404:
                return PatchResult("gone", code=404)
            self.metrics.errors.labels("read", str(exc.status)).inc()
            return PatchResult("failed", code=int(exc.status or 0))
        except Exception:
            self.metrics.errors.labels("read", "0").inc()
            return PatchResult("failed")
        return PatchResult("found", pod=pod, code=200)


def clear_costs(patcher: Patcher, pods: list[dict[str, Any]], settings: ReconcileSettings, stop: threading.Event, sleep_cap: float) -> tuple[int, int]:
    """`reconcile --clear`: remove the costs we wrote where our record still matches, one pod at
    a time through the same paced, guarded patch. Returns (patched, failed)."""
    done = failed = 0
    s = settings
    for pod in pods:
        if stop.is_set():
            break
        meta = pod.get("metadata") or {}
        ops = clear_patch(meta.get("annotations"), s.scoring.score_annotation_key, RECORD_KEY)
        if not ops:
            continue
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if s.runtime.dry_run:
            log.info({"msg": "would clear cost (dry run)", "pod": key})
            continue
        for _ in range(3):
            outcome = patcher.send(key, ops, "clear")
            if outcome.status in ("written", "gone", "stopped"):
                done += outcome.status == "written"
                break
            if outcome.status == "changed":  # decide again from a fresh read
                fresh = patcher.read(key)
                if fresh.status == "gone":
                    break
                if fresh.status != "found" or fresh.pod is None:
                    failed += 1
                    break
                ops = clear_patch((fresh.pod.get("metadata") or {}).get("annotations"), s.scoring.score_annotation_key, RECORD_KEY)
                if not ops:
                    break
                continue
            stop.wait(min(outcome.wait if outcome.status == "throttled" else 1.0, sleep_cap))
        else:
            failed += 1
    return done, failed
