"""The Flask application factory: HTTP in, admission engine, HTTP out.

The only module that knows about HTTP. Everything it answers is JSON: reviews (HTTP 200) when
the request carried a uid, otherwise a `Status`-shaped error with a 4xx code. No handler lets an
exception reach Flask's HTML error pages.

One review is a pipeline of small functions: `read_body` (HTTP framing to bytes), `handle_review`
(bytes to an answer: parse, judge, record, log), `judge` (the engine, its crashes contained) and
`record` (the metrics). What does not depend on the review (settings, the rule context, each
endpoint's metric series) is assembled once by `create_app` into a `Reviewing`.

Logs are for people: a denial, an error, a review with audit findings gets an `info` line; an
allowed review without audit findings only a `debug` one (`--log-every-review` raises those to
`info` too). At hundreds of reviews a second a line per allowed review was half a megabyte a
second, a lock every thread of a worker queued on, and a sixth of the CPU of a review.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from .. import __version__
from ..admission.decision import Decision
from ..admission.responses import error_response, review_response
from ..admission.review import Request, ReviewError, parse_review
from ..admission.status import Status, reason_for
from ..kubeversion import Chosen, Followed
from ..policies import REGISTRY, Context, Lookups, NoLookups, Registry, engine
from ..policies.clusterfacts import ClusterFacts, NoFacts
from ..policies.registry import Action
from ..policies.store import ProjectionStore
from ..settings.serve import ServeSettings
from . import metrics
from .lookups import CountingLookups
from .replies import DEFERRED, JSON, Reply, http_error, json_response
from .tls import CertificateSource

log = logging.getLogger("servinggate.server")
review_log = logging.getLogger("servinggate.review")

INTERNAL_ERROR = "internal error in the webhook; see its log"

MAX_LOGGED_CHARS = 256


def _clip(value: Any) -> str:
    """What a log line echoes from a request: a string, at most MAX_LOGGED_CHARS long (a username
    of megabytes must not make a line of megabytes); anything else is not echoed at all."""
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


def default_lookups(settings: ServeSettings, on_reconnect: Callable[[], None] | None = None) -> Lookups:
    """The Kubernetes API when reachable (kube-lookups auto/on), otherwise lookups that fail softly.
    `on_reconnect()`: called when the lookups' watch answers again after a failure."""
    if settings.lookups.kube_lookups == "off":
        return NoLookups()
    from ..kube import KubeAccessError
    from ..kube.lookups import serving_lookups

    try:
        return serving_lookups(
            settings.kube.kubeconfig,
            budget=settings.lookups.lookup_budget_seconds,
            resync=settings.lookups.lookup_resync_seconds,
            on_change=metrics.lookup_cache_changed,
            on_reconnect=on_reconnect,
        )
    except KubeAccessError as exc:
        if settings.lookups.kube_lookups == "on":
            from ..config import ConfigError

            raise ConfigError(f"--kube-lookups on: {exc}") from None
        log.warning("no Kubernetes API configuration found (%s): rules that read other objects will allow with a warning", exc)
        return NoLookups()


def cluster_facts(lookups: Lookups) -> ClusterFacts:
    """The cluster facts of the lookups' store (the watch keeps both). Without one (no API access,
    `--kube-lookups off`) the will-it-run rules say nothing: a warning on every ModelServing and
    autoscaler that no cluster was read would only be noise; /readyz already says so."""
    store = getattr(lookups, "store", None)
    return ClusterFacts(store) if isinstance(store, ProjectionStore) else NoFacts("no Kubernetes API access", quiet=True)


def read_body(environ: dict[str, Any]) -> bytes | Status:
    """The body of a review request, or the Status that refuses it (400, 415).

    No size check here: the worker owns the body limit (`framing.Limits` says why), so the whole
    request is in memory, within the limit, before the application runs. Straight from the WSGI
    environ: werkzeug's request.stream and mimetype parsing cost more than the policy of a
    typical review. A body shorter than its Content-Length reaches the parser truncated (400).
    """
    length_header = environ.get("CONTENT_LENGTH")
    length = None
    if length_header:
        try:
            length = int(length_header)
        except ValueError:
            return Status(400, f"Content-Length {length_header!r} is not a number")
    content_type = environ.get("CONTENT_TYPE") or ""
    if content_type.partition(";")[0].strip().lower() != JSON:
        return Status(415, f"Content-Type must be {JSON}, got {content_type or 'none'!r}")
    stream = environ["wsgi.input"]
    if length is not None:
        body = stream.read(length) if length else b""
    elif environ.get("wsgi.input_terminated"):
        body = stream.read()  # chunked: the worker has de-chunked it into memory
    else:
        body = b""
    if not body:
        return Status(400, "body is empty; expected an AdmissionReview")
    return body


@dataclass(frozen=True, slots=True)
class Series:
    """One endpoint's metric series that do not depend on the review, resolved at app creation."""

    in_flight: Any
    latency: Any

    @classmethod
    def of(cls, action: Action) -> Series:
        return cls(metrics.child(metrics.IN_FLIGHT, action), metrics.child(metrics.LATENCY, action))


@dataclass(frozen=True, slots=True)
class Reviewing:
    """What every review needs and no review changes, assembled once by `create_app`."""

    ctx: Context
    registry: Registry
    series: dict[Action, Series]  # by endpoint
    quiet_level: int = logging.DEBUG  # the log level of an allowed review without audit findings


@dataclass(frozen=True, slots=True)
class Outcome:
    """One judged review: the request, its metric label, the decision (None: our own bug) and
    the answer to send."""

    action: Action
    req: Request
    asked: str  # resource[/subresource] as the request names it
    resource: str  # `asked`, or "other" when no rule serves it (a bounded metric label)
    decision: Decision | None
    answer: dict[str, Any]

    @property
    def allowed(self) -> bool:
        return self.decision is not None and self.decision.allowed

    @property
    def code(self) -> int:
        return 500 if self.decision is None else self.decision.code


def handle_review(action: Action, body: bytes, reviewing: Reviewing, started: float, may_wait: bool = True) -> Reply:
    """One review from its body to the HTTP answer. A body that is no review at all gets an HTTP
    error; one whose uid could be read gets a denied review, so the API server can match it.
    DEFERRED, with nothing recorded, when a lookup would have waited and `may_wait` is False."""
    try:
        req = parse_review(body)
    except ReviewError as exc:
        if exc.uid is None:
            return http_error(Status(exc.code, exc.message))
        return refused_review(action, exc, exc.uid)
    outcome = judge(action, req, reviewing, may_wait)
    if outcome.decision is not None and outcome.decision.deferred:
        return DEFERRED
    payload = orjson.dumps(outcome.answer)
    elapsed = time.perf_counter() - started
    record(reviewing.series[action], outcome, elapsed)
    level = log_level(outcome, reviewing.quiet_level)
    if review_log.isEnabledFor(level):
        review_log.log(level, review_line(outcome, elapsed))
    return Reply(200, payload)


def log_level(outcome: Outcome, quiet_level: int) -> int:
    """`info` for what a person reads the log for (a denial, our own error, audit findings);
    `quiet_level` (debug unless every review is to be logged) for an allowed review without them."""
    decision = outcome.decision
    if decision is None or not decision.allowed or decision.audit:
        return logging.INFO
    return quiet_level


def refused_review(action: Action, exc: ReviewError, uid: str) -> Reply:
    """A review whose uid we read but whose content we cannot judge: denied with the error."""
    metrics.refused(exc.code)
    if review_log.isEnabledFor(logging.INFO):
        review_log.info({"msg": "review refused", "endpoint": action, "uid": _clip(uid), "allowed": False, "code": exc.code, "error": _clip(exc.message)})
    return Reply(200, orjson.dumps(error_response(uid, exc.api_version or "admission.k8s.io/v1", exc.code, exc.message, reason_for(exc.code))))


def judge(action: Action, req: Request, reviewing: Reviewing, may_wait: bool = True) -> Outcome:
    """The engine's decision and the answer built from it. The engine contains rule errors; an
    exception here is a bug of ours, logged and still answered as a review (code 500)."""
    # Metric labels come from a bounded set: the resources rules are registered for, else
    # "other" (a client inventing resource names must not create series or grow memory).
    asked = req.resource.resource + ("/" + req.sub_resource if req.sub_resource else "")
    resource = asked if reviewing.registry.serves(req.resource.group, req.resource.resource, req.sub_resource) else "other"
    gauge = reviewing.series[action].in_flight
    gauge.inc()
    try:
        decision: Decision | None = engine.review(action, req, reviewing.ctx, reviewing.registry, may_wait)
    except Exception:
        log.error("review %s failed:\n%s", req.uid, traceback.format_exc())
        decision = None
    finally:
        gauge.dec()
    if decision is None:
        answer = error_response(req.uid, req.api_version, 500, INTERNAL_ERROR, reason_for(500))
    else:
        answer = review_response(req, decision)
    return Outcome(action, req, asked, resource, decision, answer)


def record(series: Series, outcome: Outcome, elapsed: float) -> None:
    """A judged review in the metrics: rule crashes and verdicts, unmatched requests, the count
    by endpoint, resource, operation, verdict and code, and the latency."""
    action, req, decision = outcome.action, outcome.req, outcome.decision
    if decision is not None:
        if decision.crash is not None:
            metrics.child(metrics.RULE_ERRORS, decision.crash.rule).inc()
        for v in decision.verdicts:
            metrics.child(metrics.RULE_VERDICTS, v.rule, v.action, "pass" if v.passed else "fail").inc()
        if not decision.matched:
            metrics.child(metrics.UNMATCHED, action, outcome.resource, req.operation).inc()
    allowed = "true" if outcome.allowed else "false"
    metrics.child(metrics.REQUESTS, action, outcome.resource, req.operation, allowed, str(outcome.code)).inc()
    series.latency.observe(elapsed)


def review_line(outcome: Outcome, elapsed: float) -> dict[str, Any]:
    """The log line of a judged review; whatever it echoes from the request is clipped."""
    req, decision = outcome.req, outcome.decision
    return {
        "msg": "review",
        "endpoint": outcome.action,
        "uid": req.uid,
        "resource": _clip(outcome.asked),
        "object": _clip(req.display_name),
        "operation": req.operation,
        "dryRun": req.dry_run,
        "user": _clip(req.user_info.get("username")),
        "allowed": outcome.allowed,
        "code": outcome.code,
        "patchOps": len(decision.patch) if decision is not None else 0,
        "latencyMs": round(elapsed * 1000, 3),
        **(_decision_fields(decision) if decision is not None else {}),
    }


def answer_http_exception(exc: HTTPException) -> Response:
    """Flask's own refusals (no route, wrong method) as JSON Status answers."""
    code = exc.code or 400
    if code == 405:
        allowed = ", ".join(sorted(exc.valid_methods or []))  # type: ignore[attr-defined]
        return http_error(Status(405, f"method {request.method} not allowed on {request.path}; allowed: {allowed}")).response()
    if code == 404:
        return http_error(Status(404, f"no such path {request.path}; reviews go to /validate or /mutate")).response()
    return http_error(Status(code, exc.description or exc.name)).response()


def unexpected(method: str, path: str) -> Reply:
    """Our own bug, met outside a review's containment: logged, answered 500 as JSON."""
    log.error("unhandled error on %s %s:\n%s", method, path, traceback.format_exc())
    return Reply(500, orjson.dumps(Status(500, INTERNAL_ERROR).http_dict()))


def answer_unexpected(exc: Exception) -> Response:
    return unexpected(request.method, request.path).response()


def review_environ(action: Action, reviewing: Reviewing, environ: dict[str, Any], may_wait: bool = True) -> Reply:
    """/validate and /mutate, from the WSGI environ to the reply (both paths of `WebhookFlask`)."""
    started = time.perf_counter()
    body = read_body(environ)
    return http_error(body) if isinstance(body, Status) else handle_review(action, body, reviewing, started, may_wait)


def serve_review(action: Action, reviewing: Reviewing) -> Response:
    """The Flask view of /validate and /mutate."""
    return review_environ(action, reviewing, request.environ).response()


def healthz() -> Response:
    return json_response({"status": "ok"})


def readyz(certificates: CertificateSource, lookups: CountingLookups, kubernetes: Followed) -> Response:
    """Ready when the serving certificate is; the detail also tells the lookups' state and the
    Kubernetes version reviews are judged by (`kubernetes.current`, a kubeversion.Chosen)."""
    ok, detail = certificates.ready()
    cache = lookups.describe()  # shown, never a reason to be unready
    if cache:
        detail = f"{detail}; {cache}"
    detail = f"{detail}; {kubernetes.current.describe()}"
    return json_response({"status": "ok" if ok else "not ready", "detail": detail}, 200 if ok else 503)


class WebhookFlask(Flask):
    """Flask, with the review endpoints' answers sent without its per-request machinery.

    A POST to /validate or /mutate is answered by the same function its Flask route calls
    (`review_environ`), straight from the WSGI environ: no request context, `Request` or
    `Response` objects, routing, signals or hooks. Those cost about as much CPU as the review
    itself (benchmarks/HISTORY.md), and a review uses none of them: no
    session, no `g`, no hook, no extension. The moment the application has a request hook
    (`before_request`, `after_request`, `teardown_request`, URL preprocessors), every request
    takes Flask's path again, so a hook added later is never skipped silently. Everything else
    (other paths, other methods, /healthz, /readyz, errors) is Flask's, as is routing by path
    and method only: Flask's default binds the URL map to the request's host first (parsing and
    IDNA-encoding the Host header) for routes that never depend on the host.
    """

    reviews: dict[str, Any]  # path -> the review function of its route, called with the environ

    def create_url_adapter(self, request: Any) -> Any:
        if request is None:
            return super().create_url_adapter(None)
        return self.url_map.bind("", path_info=request.path, url_scheme=request.scheme, default_method=request.method)

    def hooked(self) -> bool:
        """Whether a request hook is registered (then no request may skip Flask's path)."""
        return any(
            any(funcs.values()) for funcs in (self.before_request_funcs, self.after_request_funcs, self.teardown_request_funcs, self.url_value_preprocessors)
        )

    def direct_reply(self, environ: dict[str, Any], may_wait: bool = True) -> Reply | None:
        """The reply to a POST to a review path, without Flask's per-request machinery; None when
        Flask's own path must answer. The worker calls it too, for a review request it read
        without gunicorn's parser (plainreview.py), on its event loop with `may_wait` False:
        DEFERRED then means the review needs a lookup that waits, and must run on a thread."""
        review = self.reviews.get(environ.get("PATH_INFO", ""))
        if review is None or environ.get("REQUEST_METHOD") != "POST" or self.hooked():
            return None
        try:
            reply: Reply = review(environ, may_wait)
        except Exception:
            reply = unexpected("POST", environ.get("PATH_INFO", ""))
        return reply

    def wsgi_app(self, environ: dict[str, Any], start_response: Any) -> Any:
        reply = self.direct_reply(environ)
        return super().wsgi_app(environ, start_response) if reply is None else reply.send(start_response)


def create_app(
    settings: ServeSettings | None = None,
    *,
    registry: Registry = REGISTRY,
    lookups: Lookups | None = None,
    certificates: CertificateSource | None = None,
    kubernetes: Followed | None = None,
) -> Flask:
    """The application; the `create_app` arguments replace what tests and benchmarks fake
    (`kubernetes`: by default kube/serverversion.FollowedVersion, which resolves `auto` from the
    API server now and again when the lookups' watch reconnects)."""
    settings = settings or ServeSettings()
    if kubernetes is None:
        from ..kube.serverversion import FollowedVersion

        kubernetes = FollowedVersion.of(settings.version.kubernetes_version, settings.kube.kubeconfig)
    chosen: Chosen = kubernetes.current
    # a warning when the cluster is newer than the newest port: its new fields are dropped, not judged
    log.log(logging.WARNING if chosen.judged < chosen.version else logging.INFO, {"msg": "judging by Kubernetes " + str(chosen.judged), **chosen.log_fields()})
    inner = lookups if lookups is not None else default_lookups(settings, getattr(kubernetes, "refresh", None))
    counted = CountingLookups(inner)
    ctx = Context(settings=settings.policies, lookups=counted, kubernetes_version=chosen.version, facts=cluster_facts(inner))
    kubernetes.listeners.append(lambda fresh: ctx.follow_version(fresh.version))
    certificates = certificates or CertificateSource.for_settings(settings.listener, on_load=metrics.certificate_loaded)
    defaults = {"validate": "deny", "mutate": "on"}
    metrics.initialise([(r.name, ctx.actions.get(r.name, defaults[r.action])) for r in registry.rules()], __version__)
    actions: tuple[Action, ...] = ("validate", "mutate")
    reviewing = Reviewing(
        ctx, registry, {action: Series.of(action) for action in actions}, logging.INFO if settings.review_log.log_every_review else logging.DEBUG
    )

    app = WebhookFlask("servinggate")
    app.reviews = {f"/{action}": partial(review_environ, action, reviewing) for action in actions}
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False  # OPTIONS gets the JSON 405, not an empty 200
    app.extensions["servinggate"] = {"settings": settings, "context": ctx, "certificates": certificates, "registry": registry, "kubernetes": kubernetes}

    for action in actions:
        app.add_url_rule(f"/{action}", action, partial(serve_review, action, reviewing), methods=["POST"])
    app.add_url_rule("/healthz", "healthz", healthz, methods=["GET"])
    app.add_url_rule("/readyz", "readyz", partial(readyz, certificates, counted, kubernetes), methods=["GET"])
    app.register_error_handler(HTTPException, answer_http_exception)
    app.register_error_handler(Exception, answer_unexpected)
    return app
