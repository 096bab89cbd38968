"""The Flask application factory: HTTP in, admission engine, HTTP out.

The only module that knows about HTTP. Everything it answers is JSON: reviews (HTTP 200) when
the request carried a uid, otherwise a `Status`-shaped error with a 4xx code. No handler lets an
exception reach Flask's HTML error pages.
"""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from .. import __version__
from ..admission.decision import Decision
from ..admission.responses import error_response, review_response
from ..admission.review import ReviewError, parse_review
from ..config import ServeSettings
from ..policies import REGISTRY, Context, LookupFailed, Lookups, NoLookups, Registry
from ..policies import engine
from . import metrics
from .tls import CertificateSource

log = logging.getLogger("servinggate.server")
review_log = logging.getLogger("servinggate.review")

JSON = "application/json"


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status=status, mimetype=JSON)


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    """A metav1.Status, the shape Kubernetes clients expect for an error."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


_REASONS = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 500: "InternalError"}


MAX_LOGGED_CHARS = 256


def _clip(value: Any) -> str:
    """What a log line echoes from a request: a string, at most MAX_LOGGED_CHARS long (a 5 MiB
    username must not make a 5 MiB line); anything else is not echoed at all."""
    if not isinstance(value, str):
        return ""
    return value if len(value) <= MAX_LOGGED_CHARS else value[: MAX_LOGGED_CHARS - 1] + "…"


def _decision_fields(decision: Decision) -> dict[str, Any]:
    """The rules that ran and those whose findings shaped the answer, for the review's log line;
    audit findings and mutations are logged here too (they are not shown to the client)."""
    fields: dict[str, Any] = {"rules": list(decision.rules), "decidedBy": decision.decided_by}
    if decision.audit:
        fields["audit"] = [_clip(f"[{n.rule}] {n.text}") for n in decision.audit]
    if decision.changes:
        fields["changes"] = [_clip(f"[{n.rule}] {n.text}") for n in decision.changes]
    return fields


def _http_error(code: int, message: str) -> Response:
    metrics.BAD_REQUESTS.labels(code=str(code)).inc()
    return _json(status_body(code, _REASONS.get(code, "BadRequest"), message), code)


def default_lookups(settings: ServeSettings) -> Lookups:
    """The Kubernetes API when reachable (kube-lookups auto/on), otherwise lookups that fail softly."""
    if settings.kube_lookups == "off":
        return NoLookups()
    from ..kube import KubeAccessError
    from ..kube.lookups import serving_lookups

    try:
        return serving_lookups(settings.kubeconfig, budget=settings.lookup_budget_seconds,
                               resync=settings.lookup_resync_seconds, on_change=metrics.lookup_cache_changed)
    except KubeAccessError as exc:
        if settings.kube_lookups == "on":
            from ..config import ConfigError

            raise ConfigError(f"--kube-lookups on: {exc}") from None
        log.warning("no Kubernetes API configuration found (%s): rules that read other objects will allow with a warning", exc)
        return NoLookups()


class CountingLookups:
    """Counts failed lookups in a metric; the rule still decides what a failure means."""

    def __init__(self, inner: Lookups):
        self.inner = inner

    def for_review(self) -> Lookups:
        start = getattr(self.inner, "for_review", None)
        return CountingLookups(start()) if start is not None else self

    def describe(self) -> str:
        """The lookups' state for /readyz ("" when they have none to tell)."""
        describe = getattr(self.inner, "describe", None)
        return describe() if describe is not None else ""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.inner.get(api_version, kind, namespace, name)
        except LookupFailed:
            metrics.LOOKUP_FAILURES.labels(kind=kind).inc()
            raise


def create_app(
    settings: ServeSettings | None = None,
    *,
    registry: Registry = REGISTRY,
    lookups: Lookups | None = None,
    certificates: CertificateSource | None = None,
) -> Flask:
    settings = settings or ServeSettings()
    counted = CountingLookups(lookups if lookups is not None else default_lookups(settings))
    ctx = Context(settings=settings, lookups=counted)
    certificates = certificates or CertificateSource(
        settings.certs_dir, min_version=settings.tls_min_version, reload_seconds=settings.cert_reload_seconds,
        on_load=metrics.certificate_loaded,
    )
    max_body = settings.max_body_bytes
    defaults = {"validate": "deny", "mutate": "on"}
    metrics.initialise([(r.name, ctx.actions.get(r.name, defaults[r.action])) for r in registry.rules()], __version__)

    app = Flask("servinggate")
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False  # OPTIONS gets the JSON 405, not an empty 200
    # The body limit is enforced in read_body(), not through MAX_CONTENT_LENGTH: Werkzeug's limited
    # stream silently truncates a chunked body at the limit instead of refusing it.
    app.extensions["servinggate"] = {"settings": settings, "context": ctx, "certificates": certificates, "registry": registry}

    def too_large(message: str) -> Response:
        # Discard what the client is still sending (up to another limit's worth) so it can read
        # the 413 instead of a connection reset; past that, close the connection.
        stream, left = request.environ["wsgi.input"], max_body
        while left > 0:
            chunk = stream.read(min(left, 65536))
            if not chunk:
                break
            left -= len(chunk)
        resp = _http_error(413, message)
        if left <= 0:
            resp.headers["Connection"] = "close"
        return resp

    def read_body() -> bytes | Response:
        # Straight from the WSGI environ: werkzeug's request.stream and mimetype parsing cost
        # more than the policy of a typical review. With a Content-Length, gunicorn's body
        # reader stops there; a shorter body reaches the parser truncated and gets a 400.
        environ = request.environ
        length_header = environ.get("CONTENT_LENGTH")
        length = None
        if length_header:
            try:
                length = int(length_header)
            except ValueError:
                return _http_error(400, f"Content-Length {length_header!r} is not a number")
        if length is not None and length > max_body:
            if length > 2 * max_body:
                resp = _http_error(413, f"body of {length} bytes exceeds the limit of {max_body} bytes")
                resp.headers["Connection"] = "close"
                return resp
            return too_large(f"body of {length} bytes exceeds the limit of {max_body} bytes")
        content_type = environ.get("CONTENT_TYPE") or ""
        if content_type.partition(";")[0].strip().lower() != JSON:
            return _http_error(415, f"Content-Type must be {JSON}, got {content_type or 'none'!r}")
        stream = environ["wsgi.input"]
        if length is not None:
            body = stream.read(length) if length else b""
        elif environ.get("wsgi.input_terminated"):
            # Chunked: a bounded read, cut at the limit, never buffered whole.
            body = stream.read(max_body + 1)
            if len(body) > max_body:
                return too_large(f"body exceeds the limit of {max_body} bytes")
        else:
            body = b""
        if not body:
            return _http_error(400, "body is empty; expected an AdmissionReview")
        return body

    def serve_review(action: str) -> Response:
        started = time.perf_counter()
        body = read_body()
        if isinstance(body, Response):
            return body
        try:
            req = parse_review(body)
        except ReviewError as exc:
            if exc.uid is None:
                return _http_error(exc.code, exc.message)
            metrics.BAD_REQUESTS.labels(code=str(exc.code)).inc()
            if review_log.isEnabledFor(logging.INFO):
                review_log.info({"msg": "review refused", "endpoint": action, "uid": _clip(exc.uid), "allowed": False,
                                 "code": exc.code, "error": _clip(exc.message)})
            return _json(error_response(exc.uid, exc.api_version or "admission.k8s.io/v1", exc.code, exc.message, _REASONS.get(exc.code, "BadRequest")))
        # Metric labels come from a bounded set: the resources rules are registered for, else
        # "other" (a client inventing resource names must not create series or grow memory).
        asked = req.resource.resource + ("/" + req.sub_resource if req.sub_resource else "")
        resource = asked if registry.serves(req.resource.group, req.resource.resource, req.sub_resource) else "other"
        gauge = metrics.child(metrics.IN_FLIGHT, action)
        gauge.inc()
        try:
            decision = engine.review(action, req, ctx, registry)  # type: ignore[arg-type]
        except Exception:  # the engine contains rule errors; this is a bug of ours, still answered as a review
            log.error("review %s failed:\n%s", req.uid, traceback.format_exc())
            decision = None
        finally:
            gauge.dec()
        if decision is None:
            answer = error_response(req.uid, req.api_version, 500, "internal error in the webhook; see its log", "InternalError")
            allowed, code, n_ops = False, 500, 0
        else:
            answer, allowed, code, n_ops = review_response(req, decision), decision.allowed, decision.code, len(decision.patch)
            if decision.crash is not None:
                metrics.child(metrics.RULE_ERRORS, decision.crash.rule).inc()
            for v in decision.verdicts:
                metrics.child(metrics.RULE_VERDICTS, v.rule, v.action, "pass" if v.passed else "fail").inc()
            if not decision.matched:
                metrics.child(metrics.UNMATCHED, action, resource, req.operation).inc()
        payload = orjson.dumps(answer)
        elapsed = time.perf_counter() - started
        metrics.child(metrics.REQUESTS, action, resource, req.operation, "true" if allowed else "false", str(code)).inc()
        metrics.child(metrics.LATENCY, action).observe(elapsed)
        if review_log.isEnabledFor(logging.INFO):
            review_log.info(
                {
                    "msg": "review", "endpoint": action, "uid": req.uid, "resource": _clip(asked),
                    "object": _clip(req.display_name), "operation": req.operation, "dryRun": req.dry_run,
                    "user": _clip(req.user_info.get("username")), "allowed": allowed, "code": code,
                    "patchOps": n_ops, "latencyMs": round(elapsed * 1000, 3),
                    **(_decision_fields(decision) if decision is not None else {}),
                }
            )
        return Response(payload, status=200, mimetype=JSON)

    @app.post("/validate")
    def validate() -> Response:
        return serve_review("validate")

    @app.post("/mutate")
    def mutate() -> Response:
        return serve_review("mutate")

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        ok, detail = certificates.ready()
        lookups = counted.describe()  # shown, never a reason to be unready
        if lookups:
            detail = f"{detail}; {lookups}"
        return _json({"status": "ok" if ok else "not ready", "detail": detail}, 200 if ok else 503)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = exc.code or 400
        if code == 405:
            return _http_error(405, f"method {request.method} not allowed on {request.path}; allowed: {', '.join(sorted(exc.valid_methods or []))}")  # type: ignore[attr-defined]
        if code == 413:
            return _http_error(413, f"body exceeds the limit of {max_body} bytes")
        if code == 404:
            return _http_error(404, f"no such path {request.path}; reviews go to /validate or /mutate")
        return _http_error(code, exc.description or exc.name)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.error("unhandled error on %s %s:\n%s", request.method, request.path, traceback.format_exc())
        return _json(status_body(500, "InternalError", "internal error in the webhook; see its log"), 500)

    return app
