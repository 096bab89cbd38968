"""The Flask application factory: the review endpoints and health, as JSON.

Everything it answers is JSON: reviews (HTTP 200) when the request carried a uid, otherwise a
`Status`-shaped error with a 4xx code. No handler lets an exception reach Flask's HTML error
pages. A review goes from the request's body to its answer through webhook/serving/reviewing.py;
`read_body` is the HTTP step before it (framing to bytes). A review's `Reply` goes out through
Flask's own path as a `JsonAnswer`, or to the WSGI server as it is (`send`): the same status line
and headers either way, so a client cannot tell which path answered.
"""

from __future__ import annotations

import logging
import time
import traceback
from functools import partial
from typing import Any

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from ..admission.status import Status
from ..certs.serving import CertificateSource
from ..kubeversion import Followed
from ..policies import REGISTRY, Lookups, Registry
from ..policies.registry import Action
from ..serving import metrics
from ..serving.lookups import CountingLookups
from ..serving.reviewing import INTERNAL_ERROR, JSON, Reply, Reviewing, assemble, handle_review, http_error
from ..settings.serve import ServeSettings
from .answers import status_line

log = logging.getLogger("servinggate.server")


class JsonAnswer(Response):
    """A JSON answer sent as built. werkzeug's general path to the WSGI server (header fix-ups,
    ranges, conditional answers, iterable bodies) costs more per review than the rules do, and
    none of it applies to a body whose headers are always Content-Type and Content-Length."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response(status_line(self.status_code), self.headers.to_wsgi_list())
        return [self.get_data()]


def response(reply: Reply) -> Response:
    """A reply on Flask's own path."""
    return JsonAnswer(reply.body, status=reply.code, mimetype=JSON)


def send(reply: Reply, start_response: Any) -> list[bytes]:
    """A reply handed to the WSGI server directly."""
    start_response(status_line(reply.code), reply.headers())
    return [reply.body]


def json_response(body: Any, status: int = 200) -> Response:
    """A JSON answer on Flask's own path (health, readiness, Flask's errors)."""
    return response(Reply(status, orjson.dumps(body)))


def read_body(environ: dict[str, Any]) -> bytes | Status:
    """The body of a review request, or the Status that refuses it (400, 415).

    No size check here: the worker owns the body limit (`Limits` says why), so the whole
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


def answer_http_exception(exc: HTTPException) -> Response:
    """Flask's own refusals (no route, wrong method) as JSON Status answers."""
    code = exc.code or 400
    if code == 405:
        allowed = ", ".join(sorted(exc.valid_methods or []))  # type: ignore[attr-defined]
        return response(http_error(Status(405, f"method {request.method} not allowed on {request.path}; allowed: {allowed}")))
    if code == 404:
        return response(http_error(Status(404, f"no such path {request.path}; reviews go to /validate or /mutate")))
    return response(http_error(Status(code, exc.description or exc.name)))


def unexpected(method: str, path: str) -> Reply:
    """Our own bug, met outside a review's containment: logged, answered 500 as JSON."""
    log.error("unhandled error on %s %s:\n%s", method, path, traceback.format_exc())
    return Reply(500, orjson.dumps(Status(500, INTERNAL_ERROR).http_dict()))


def answer_unexpected(exc: Exception) -> Response:
    return response(unexpected(request.method, request.path))


def review_environ(action: Action, reviewing: Reviewing, environ: dict[str, Any], may_wait: bool = True) -> Reply:
    """/validate and /mutate, from the WSGI environ to the reply (both paths of `WebhookFlask`)."""
    started = time.perf_counter()
    body = read_body(environ)
    return http_error(body) if isinstance(body, Status) else handle_review(action, body, reviewing, started, may_wait)


def serve_review(action: Action, reviewing: Reviewing) -> Response:
    """The Flask view of /validate and /mutate."""
    return response(review_environ(action, reviewing, request.environ))


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
        return super().wsgi_app(environ, start_response) if reply is None else send(reply, start_response)


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
    reviewing, counted = assemble(settings, registry, lookups, kubernetes)
    ctx = reviewing.ctx
    certificates = certificates or CertificateSource.for_settings(settings.listener, on_load=metrics.certificate_loaded)
    actions: tuple[Action, ...] = ("validate", "mutate")

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
