"""The Flask application: the review endpoints, health and readiness, every answer JSON.

A review request gets an AdmissionReview (HTTP 200) when it carried a uid, otherwise a
`Status`-shaped error with a 4xx code; no handler lets an exception reach Flask's HTML error
pages. `handle_review` (webhook/serving/reviewing.py) is the review endpoints' one function from a
request's content type and body to its `Reply`: their Flask routes call it, and so does the
worker (calls.py) from its own parse, through `WebhookFlask.direct_reply`.
"""

from __future__ import annotations

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
from ..serving.reviewing import JSON, Reply, assemble, handle_review, http_error, internal_error
from ..settings.serve import ServeSettings

ACTIONS: tuple[Action, ...] = ("validate", "mutate")


def response(reply: Reply) -> Response:
    """A reply on Flask's own path: the same status and fields as the worker's direct one."""
    return Response(reply.body, status=reply.code, mimetype=JSON)


def review_route(call: Any) -> Response:
    """The Flask route of a review endpoint (`call`: `handle_review` bound to its action)."""
    return response(call(request.content_type or "", request.get_data()))


def answer_http_exception(exc: HTTPException) -> Response:
    """Flask's own refusals (no route, wrong method) as JSON Status answers."""
    code = exc.code or 400
    if code == 405:
        allowed = ", ".join(sorted(exc.valid_methods or []))  # type: ignore[attr-defined]
        return response(http_error(Status(405, f"method {request.method} not allowed on {request.path}; allowed: {allowed}")))
    if code == 404:
        return response(http_error(Status(404, f"no such path {request.path}; reviews go to /validate or /mutate")))
    return response(http_error(Status(code, exc.description or exc.name)))


def readyz(certificates: CertificateSource, lookups: CountingLookups, kubernetes: Followed) -> Response:
    """Ready when the serving certificate is; the detail also tells the lookups' state and the
    Kubernetes version reviews are judged by (`kubernetes.current`, a kubeversion.Chosen)."""
    ok, detail = certificates.ready()
    cache = lookups.describe()  # shown, never a reason to be unready
    detail = f"{detail}; {cache}; " if cache else f"{detail}; "
    body = {"status": "ok" if ok else "not ready", "detail": detail + kubernetes.current.describe()}
    return response(Reply(200 if ok else 503, orjson.dumps(body)))


class WebhookFlask(Flask):
    """Flask, and the review endpoints' replies without its per-request machinery (`direct_reply`).

    Request context, routing, signals and hooks cost about as much CPU as a review itself
    (benchmarks/HISTORY.md), and a review uses none of them. The moment the application has a
    request hook (`before_request`, `after_request`, `teardown_request`, URL preprocessors),
    `direct_reply` declines every request, so a hook added later is never skipped silently.
    """

    reviews: dict[str, Any]  # path -> `handle_review` bound to its action

    def hooked(self) -> bool:
        funcs = (self.before_request_funcs, self.after_request_funcs, self.teardown_request_funcs, self.url_value_preprocessors)
        return any(any(by_blueprint.values()) for by_blueprint in funcs)

    def direct_reply(self, path: str, content_type: str, body: bytes, may_wait: bool = True) -> Reply | None:
        """The reply to a POST to a review path; None when Flask's own path must answer. With
        `may_wait` False (the worker's event loop) DEFERRED means the review needs a lookup that
        waits, and must run again on a thread."""
        call = self.reviews.get(path)
        if call is None or self.hooked():
            return None
        try:
            reply: Reply = call(content_type, body, may_wait)
        except Exception:
            reply = internal_error(f"POST {path}")
        return reply


def create_app(
    settings: ServeSettings | None = None,
    *,
    registry: Registry = REGISTRY,
    lookups: Lookups | None = None,
    certificates: CertificateSource | None = None,
    kubernetes: Followed | None = None,
) -> WebhookFlask:
    """The application; the `create_app` arguments replace what tests and benchmarks fake
    (`kubernetes`: by default kube/serverversion.FollowedVersion, which resolves `auto` from the
    API server now and again when the lookups' watch reconnects)."""
    settings = settings or ServeSettings()
    if kubernetes is None:
        from ..kube.serverversion import FollowedVersion

        kubernetes = FollowedVersion.of(settings.version.kubernetes_version, settings.kube.kubeconfig)
    reviewing, counted = assemble(settings, registry, lookups, kubernetes)
    certificates = certificates or CertificateSource.for_settings(settings.listener, on_load=metrics.certificate_loaded)

    app = WebhookFlask("servinggate")
    app.reviews = {f"/{action}": partial(handle_review, action, reviewing) for action in ACTIONS}
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False  # OPTIONS gets the JSON 405, not an empty 200
    app.extensions["servinggate"] = {"context": reviewing.ctx, "kubernetes": kubernetes}
    for path, call in app.reviews.items():
        app.add_url_rule(path, path[1:], partial(review_route, call), methods=["POST"])
    app.add_url_rule("/healthz", "healthz", lambda: response(Reply(200, b'{"status":"ok"}')), methods=["GET"])
    app.add_url_rule("/readyz", "readyz", partial(readyz, certificates, counted, kubernetes), methods=["GET"])
    app.register_error_handler(HTTPException, answer_http_exception)
    app.register_error_handler(Exception, lambda exc: response(internal_error(f"{request.method} {request.path}")))
    return app
