"""One review from its body to its answer: parse, judge, record, log.

A pipeline of small functions: `handle_review` (bytes to an answer), `judge` (the engine, its
crashes contained) and `record` (the metrics). What does not depend on the review (settings, the
rule context, each endpoint's metric series) is assembled once into a `Reviewing`. The answer is
the server's one `Answer` (answer.py); a review whose lookup would wait gives `Later` instead,
which judges the same parsed request again where waiting is allowed.

Logs are for people: a denial, an error, a review with audit findings gets an `info` line; an
allowed review without audit findings only a `debug` one (`--log-every-review` raises those to
`info` too). At hundreds of reviews a second a line per allowed review was half a megabyte a
second, a lock every thread of a worker queued on, and a sixth of the CPU of a review.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson

from .. import __version__
from ..admission.decision import Decision
from ..admission.responses import error_response, review_response
from ..admission.review import Request, ReviewError, parse_review
from ..admission.status import Status, reason_for
from ..featuregates import not_at
from ..kubeversion import Chosen, Followed
from ..policies import Context, Lookups, Registry, engine
from ..policies.registry import Action
from ..servesettings import ServeSettings
from . import metrics
from .answer import JSON, Answer, Later
from .lookups import CountingLookups, cluster_facts, default_lookups

log = logging.getLogger("servinggate.server")
review_log = logging.getLogger("servinggate.review")


def http_error(status: Status) -> Answer:
    """An HTTP error answer (a whole metav1.Status), counted as a request refused before review."""
    metrics.refused(status.code)
    return Answer(status.code, orjson.dumps(status.http_dict()))


INTERNAL_ERROR = "internal error in the webhook; see its log"


def internal_error(what: str) -> Answer:
    """Our own bug, met outside a review's containment (in `what`): logged with its traceback,
    answered 500 as JSON."""
    log.error("unhandled error on %s:\n%s", what, traceback.format_exc())
    return Answer(500, orjson.dumps(Status(500, INTERNAL_ERROR).http_dict()))


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
class Judged:
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


def handle_review(action: Action, reviewing: Reviewing, content_type: str, body: bytes) -> Answer | Later:
    """/validate and /mutate: a review from its Content-Type and body to the HTTP answer, judged
    without waiting for the API server. A body that is not JSON or no review at all gets an HTTP
    error (415, 400); one whose uid could be read gets a denied review, so the API server can
    match it. No size check: the worker refuses a body over the limit before it is read whole."""
    started = time.perf_counter()
    if content_type.partition(";")[0].strip().lower() != JSON:
        return http_error(Status(415, f"Content-Type must be {JSON}, got {content_type or 'none'!r}"))
    if not body:
        return http_error(Status(400, "body is empty; expected an AdmissionReview"))
    try:
        req = parse_review(body)
    except ReviewError as exc:
        if exc.uid is None:
            return http_error(Status(exc.code, exc.message))
        return refused_review(action, exc, exc.uid)
    return answer_review(action, reviewing, req, started)


def answer_review(action: Action, reviewing: Reviewing, req: Request, started: float, may_wait: bool = False) -> Answer | Later:
    """A parsed review judged, recorded, logged and answered. When a lookup would have waited and
    `may_wait` is False: `Later`, with nothing recorded, whose `resume` judges the same request
    again, allowed to wait (the latency recorded then counts from `started`, the first try)."""
    judged = judge(action, req, reviewing, may_wait)
    if judged.decision is not None and judged.decision.deferred:
        return Later(partial(_waited, action, reviewing, req, started))
    payload = orjson.dumps(judged.answer)
    elapsed = time.perf_counter() - started
    record(reviewing.series[action], judged, elapsed)
    level = log_level(judged, reviewing.quiet_level)
    if review_log.isEnabledFor(level):
        review_log.log(level, review_line(judged, elapsed))
    return Answer(200, payload)


def _waited(action: Action, reviewing: Reviewing, req: Request, started: float) -> Answer:
    answer = answer_review(action, reviewing, req, started, may_wait=True)
    if isinstance(answer, Later):  # the engine defers only a review that may not wait
        raise RuntimeError(f"review {req.uid} deferred although it may wait")
    return answer


def log_level(judged: Judged, quiet_level: int) -> int:
    """`info` for what a person reads the log for (a denial, our own error, audit findings);
    `quiet_level` (debug unless every review is to be logged) for an allowed review without them."""
    decision = judged.decision
    if decision is None or not decision.allowed or decision.audit:
        return logging.INFO
    return quiet_level


def refused_review(action: Action, exc: ReviewError, uid: str) -> Answer:
    """A review whose uid we read but whose content we cannot judge: denied with the error."""
    metrics.refused(exc.code)
    if review_log.isEnabledFor(logging.INFO):
        review_log.info({"msg": "review refused", "endpoint": action, "uid": _clip(uid), "allowed": False, "code": exc.code, "error": _clip(exc.message)})
    return Answer(200, orjson.dumps(error_response(uid, exc.api_version or "admission.k8s.io/v1", exc.code, exc.message, reason_for(exc.code))))


def judge(action: Action, req: Request, reviewing: Reviewing, may_wait: bool = True) -> Judged:
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
    return Judged(action, req, asked, resource, decision, answer)


def record(series: Series, judged: Judged, elapsed: float) -> None:
    """A judged review in the metrics: rule crashes and verdicts, unmatched requests, the count
    by endpoint, resource, operation, verdict and code, and the latency."""
    action, req, decision = judged.action, judged.req, judged.decision
    if decision is not None:
        if decision.crash is not None:
            metrics.child(metrics.RULE_ERRORS, decision.crash.rule).inc()
        for v in decision.verdicts:
            metrics.child(metrics.RULE_VERDICTS, v.rule, v.action, "pass" if v.passed else "fail").inc()
        if not decision.matched:
            metrics.child(metrics.UNMATCHED, action, judged.resource, req.operation).inc()
    allowed = "true" if judged.allowed else "false"
    metrics.child(metrics.REQUESTS, action, judged.resource, req.operation, allowed, str(judged.code)).inc()
    series.latency.observe(elapsed)


def review_line(judged: Judged, elapsed: float) -> dict[str, Any]:
    """The log line of a judged review; whatever it echoes from the request is clipped."""
    req, decision = judged.req, judged.decision
    return {
        "msg": "review",
        "endpoint": judged.action,
        "uid": req.uid,
        "resource": _clip(judged.asked),
        "object": _clip(req.display_name),
        "operation": req.operation,
        "dryRun": req.dry_run,
        "user": _clip(req.user_info.get("username")),
        "allowed": judged.allowed,
        "code": judged.code,
        "patchOps": len(decision.patch) if decision is not None else 0,
        "latencyMs": round(elapsed * 1000, 3),
        **(_decision_fields(decision) if decision is not None else {}),
    }


def assemble(settings: ServeSettings, registry: Registry, lookups: Lookups | None, kubernetes: Followed) -> tuple[Reviewing, CountingLookups]:
    """What every review needs, once: the rule context (lookups counted, cluster facts, the Kubernetes
    version reviews are judged by, followed as it changes), the metric series, the log level."""
    chosen: Chosen = kubernetes.current
    # a warning when the cluster is newer than the newest port: its new fields are dropped, not judged
    log.log(logging.WARNING if chosen.judged < chosen.version else logging.INFO, {"msg": "judging by Kubernetes " + str(chosen.judged), **chosen.log_fields()})
    inner = lookups if lookups is not None else default_lookups(settings, kubernetes.refresh)
    counted = CountingLookups(inner)
    problem = not_at(settings.version.feature_gates, chosen.version)
    if problem:
        log.warning({"msg": f"--feature-gates: {problem}; judged with the gates it names that Pod validation reads"})
    ctx = Context(
        settings=settings.policies, lookups=counted, kubernetes_version=chosen.version, feature_gates=settings.version.feature_gates, facts=cluster_facts(inner)
    )
    kubernetes.listeners.append(lambda fresh: ctx.follow_version(fresh.version))
    defaults = {"validate": "deny", "mutate": "on"}
    metrics.initialise([(r.name, ctx.actions.get(r.name, defaults[r.action])) for r in registry.rules()], __version__)
    actions: tuple[Action, ...] = ("validate", "mutate")
    quiet = logging.INFO if settings.review_log.log_every_review else logging.DEBUG
    return Reviewing(ctx, registry, {action: Series.of(action) for action in actions}, quiet), counted
