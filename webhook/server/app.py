"""The application: the route table, every path the admission port answers, in one place
(`create_app`), and the Flask application behind it; every answer JSON.

A review request (POST /validate, /mutate) gets an AdmissionReview (HTTP 200) when it carried a
uid, otherwise a `Status`-shaped error with a 4xx code, from `handle_review`
(webhook/serving/reviewing.py), on the worker's event loop and without Flask. Flask answers the
kubelet's probes (probes.py) in a thread; no Flask view lets an exception reach Flask's HTML
error pages. What the table does not know is a JSON 404 or 405 (site.py).
"""

from __future__ import annotations

from functools import partial

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from ..admission.status import Status
from ..certs.source import CertificateSource
from ..kubeversion import Followed
from ..policies import REGISTRY, Lookups, Registry
from ..policies.registry import Action
from ..servesettings import ServeSettings
from ..serving import metrics
from ..serving.answer import Answer, Later
from ..serving.lookups import CountingLookups
from ..serving.probes import HEALTHY, readiness
from ..serving.reviewing import Reviewing, assemble, handle_review, http_error, internal_error
from .http1 import HttpRequest
from .site import InFlask, Site, content_type


def response(answer: Answer) -> Response:
    """An `Answer` as a Flask view returns it."""
    return Response(answer.body, status=answer.code, content_type=answer.content_type, headers=list(answer.fields))


def review(action: Action, reviewing: Reviewing, req: HttpRequest) -> Answer | Later:
    """The handler of a review endpoint."""
    return handle_review(action, reviewing, content_type(req), req.body)


def answer_http_exception(exc: HTTPException) -> Response:
    """A refusal raised inside Flask (the table sends Flask only its own routes) as a JSON Status."""
    return response(http_error(Status(exc.code or 400, exc.description or exc.name)))


def readyz(certificates: CertificateSource, lookups: CountingLookups, kubernetes: Followed) -> Response:
    """probes.readiness, with what a worker adds: its lookups' state and the Kubernetes version
    reviews are judged by (`kubernetes.current`, a kubeversion.Chosen)."""
    return response(readiness(certificates, lookups.describe(), kubernetes.current.describe()))


def create_app(
    settings: ServeSettings | None = None,
    *,
    registry: Registry = REGISTRY,
    lookups: Lookups | None = None,
    certificates: CertificateSource | None = None,
    kubernetes: Followed | None = None,
) -> Site:
    """The application; the `create_app` arguments replace what tests and benchmarks fake
    (`kubernetes`: by default kube/serverversion.FollowedVersion, which resolves `auto` from the
    API server now and again when the lookups' watch reconnects)."""
    settings = settings or ServeSettings()
    if kubernetes is None:
        from ..kube.serverversion import FollowedVersion

        kubernetes = FollowedVersion.of(settings.version.kubernetes_version, settings.kube.kubeconfig)
    reviewing, counted = assemble(settings, registry, lookups, kubernetes)
    certificates = certificates or CertificateSource.for_settings(settings.listener, on_load=metrics.certificate_loaded)

    flask = Flask("servinggate", static_folder=None)
    flask.extensions["servinggate"] = {"context": reviewing.ctx, "kubernetes": kubernetes}
    flask.register_error_handler(HTTPException, answer_http_exception)
    flask.register_error_handler(Exception, lambda exc: response(internal_error(f"{request.method} {request.path}")))
    return Site(
        flask,
        {
            ("POST", "/validate"): partial(review, "validate", reviewing),
            ("POST", "/mutate"): partial(review, "mutate", reviewing),
            ("GET", "/healthz"): InFlask(lambda: response(HEALTHY)),
            ("GET", "/readyz"): InFlask(partial(readyz, certificates, counted, kubernetes)),
        },
    )
