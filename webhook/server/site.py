"""The one seam between the worker and the application: `Site`, the route table and the Flask
application behind it.

Every request the worker reads goes through `Site.answer`, on the event loop: found in the route
table by method and path, and given to its handler, whose one signature (`Handler`) takes the
parsed request (http1.HttpRequest) to the one answer type (`Answer`), or to `Later` when what is left
may wait (webhook/serving/answer.py); the worker writes every answer through the one head writer
(answers.py) and runs every `Later` in a thread.

- A route the table sends to Flask (`InFlask`) is registered on the Flask application by the Site,
  so Flask's URL map is the table's; Flask answers it in a thread, through WSGI (calls.py).
- HEAD is answered as GET (the worker writes the head alone).
- A path not in the table is a 404, a method its path does not take a 405 naming those it does:
  JSON Status bodies, as every error.
- A body over ON_LOOP_MAX is not handled on the loop: its handler is called in a thread.
- An exception from a handler, on the loop or later in a thread, is our own bug: logged with its
  traceback, answered 500 with a JSON Status.
- Flask's request hooks would see only what the table sends to Flask, never a review: the Site
  refuses to serve a Flask application that has one, or a route the table does not know
  (`check`, run when the Site is made and again when a worker starts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from flask import Flask

from ..admission.status import Status
from ..serving.answer import Answer, Later, settled
from ..serving.reviewing import http_error, internal_error
from .calls import call_wsgi, split_target
from .http1 import HttpRequest

ON_LOOP_MAX = 64 * 1024  # a body up to this size (a review is a few KiB) is handled on the loop

Handler = Callable[[HttpRequest], Answer | Later]


@dataclass(frozen=True, slots=True)
class InFlask:
    """A route the Flask application answers, with this view function."""

    view: Callable[..., Any]


class SiteError(Exception):
    """The Flask application and the route table disagree: the server does not start."""


def content_type(req: HttpRequest) -> str:
    """The request's Content-Type (the last, as in a WSGI environ), or ""."""
    found = [value for name, value in req.headers if name.lower() == b"content-type"]
    return found[-1].decode("latin-1") if found else ""


class Site:
    """What the worker serves: the route table ((method, path) -> handler, or `InFlask`) and the
    Flask application that answers the routes sent to it."""

    def __init__(self, flask: Flask, routes: Mapping[tuple[str, str], Handler | InFlask]):
        self.flask = flask
        self.handlers: dict[tuple[str, str], Handler] = {}
        self.methods: dict[str, list[str]] = {}  # path -> the methods the table takes on it
        self._raw: dict[tuple[bytes, bytes], Handler] = {}  # by the request's own bytes: no decoding for the usual target
        self._flask_endpoints: set[str] = set()
        for (method, path), route in routes.items():
            handler: Handler
            if isinstance(route, InFlask):
                endpoint = f"{method} {path}"
                flask.add_url_rule(path, endpoint, route.view, methods=[method], provide_automatic_options=False)
                self._flask_endpoints.add(endpoint)
                handler = self._in_flask
            else:
                handler = route
            self.handlers[(method, path)] = handler
            self._raw[(method.encode("latin-1"), path.encode("latin-1"))] = handler
            self.methods.setdefault(path, []).append(method)
        self.check()

    def check(self) -> None:
        """Raises SiteError when the Flask application has a request hook or a route not in the table."""
        flask = self.flask
        kinds: list[tuple[str, Mapping[Any, list[Any]]]] = [
            ("before_request", flask.before_request_funcs),
            ("after_request", flask.after_request_funcs),
            ("teardown_request", flask.teardown_request_funcs),
            ("url_value_preprocessor", flask.url_value_preprocessors),
        ]
        hooks = [kind for kind, by_blueprint in kinds if any(by_blueprint.values())]
        if hooks:
            raise SiteError(
                f"the Flask application has request hooks ({', '.join(hooks)}); they would never see a review, a 404 or a 405,"
                " which the route table answers without Flask: do their work in a handler of the route table (webhook/server/app.py)"
            )
        unknown = sorted(rule.rule for rule in flask.url_map.iter_rules() if rule.endpoint not in self._flask_endpoints)
        if unknown:
            raise SiteError(f"routes added to the Flask application outside the route table (webhook/server/app.py): {', '.join(unknown)}")

    def answer(self, req: HttpRequest) -> Answer | Later:
        """On the event loop, never waiting: the request's answer, or `Later` for a thread."""
        handler = self._raw.get((req.method, req.target)) or self._route(req)
        if len(req.body) > ON_LOOP_MAX:
            return Later(partial(self._in_thread, handler, req))
        try:
            result = handler(req)
        except Exception:
            return self._bug(req)
        return result if isinstance(result, Answer) else Later(partial(self._resumed, result, req))

    def _route(self, req: HttpRequest) -> Handler:
        """The handler of a target that is not a table key as it stands: decoded, HEAD as GET, else a 404 or 405."""
        method, path = req.method.decode("latin-1"), split_target(req.target)[0]
        handler = self.handlers.get((method, path))
        if handler is not None:
            return handler
        if method == "HEAD" and (get := self.handlers.get(("GET", path))) is not None:
            return lambda head: get(replace(head, method=b"GET"))
        allowed = self.methods.get(path)
        if allowed is None:
            return partial(refuse, Status(404, f"no such path {path}; reviews go to /validate or /mutate"))
        shown = ", ".join(sorted({*allowed, *(["HEAD"] if "GET" in allowed else [])}))
        return partial(refuse, Status(405, f"method {method} not allowed on {path}; allowed: {shown}"))

    def _in_flask(self, req: HttpRequest) -> Later:
        return Later(partial(call_wsgi, self.flask, req))

    def _in_thread(self, handler: Handler, req: HttpRequest) -> Answer:
        try:
            return settled(handler(req))
        except Exception:
            return self._bug(req)

    def _resumed(self, later: Later, req: HttpRequest) -> Answer:
        try:
            return later.resume()
        except Exception:
            return self._bug(req)

    def _bug(self, req: HttpRequest) -> Answer:
        return internal_error(f"{req.method.decode('latin-1')} {split_target(req.target)[0]}")


def refuse(status: Status, _req: HttpRequest) -> Answer:
    """The route table's own refusal (404, 405), counted as a request refused before review."""
    return http_error(status)
