"""Every contact with gunicorn's internals, in one place.

The worker (worker.py, onloop.py, answering.py) stands on gunicorn's gthread worker, its
connection and response classes and its HTTP/1.1 parser; serving.py runs gunicorn as a library.
gunicorn documents little of this as an API, so every module-level name is imported here and
nowhere else, and every attribute and method used on gunicorn's objects is listed below.
`tests/server/test_gunicorn_adapter.py` checks that each exists in the installed gunicorn, so an
upgrade that renames one fails that test instead of a production worker.
Mirrors gunicorn 27.0 (gunicorn/workers/gthread.py, gunicorn/http/{message,parser,wsgi}.py).
"""

from __future__ import annotations

import ssl
from typing import Any

from gunicorn import SERVER, util
from gunicorn import sock as gsock
from gunicorn.app.base import BaseApplication
from gunicorn.config import Config
from gunicorn.glogging import Logger
from gunicorn.http import errors as herrors
from gunicorn.http import get_parser, wsgi
from gunicorn.http import message as hmessage
from gunicorn.http.body import LengthReader
from gunicorn.http.parser import RequestParser
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, TConn, ThreadWorker

__all__ = [
    "SERVER",
    "STOP_KEEPALIVE_LINGER",
    "BaseApplication",
    "Config",
    "LengthReader",
    "Logger",
    "RequestParser",
    "TConn",
    "ThreadWorker",
    "get_parser",
    "herrors",
    "wsgi",
]

# What the worker uses of gunicorn's objects (checked by tests/server/test_gunicorn_adapter.py).
# ThreadWorker: methods overridden or called, and attributes its __init__/init_process set.
WORKER_METHODS = (
    "init_process",
    "load_wsgi",
    "accept",
    "handle",
    "handle_error",
    "finish_request",
    "enqueue_req",
    "on_client_socket_readable",
    "murder_pending",
    "_cap_keepalive",
    "wait_for_and_dispatch_events",
)
WORKER_ATTRIBUTES = ("cfg", "log", "alive", "nr", "wsgi", "tpool", "poller", "method_queue", "keepalived_conns", "nr_conns", "max_keepalived")
# TConn: what a connection carries; the parser and its unreader; a parsed request; the response.
CONNECTION_ATTRIBUTES = ("sock", "client", "server", "parser", "initialized", "timeout")
CONNECTION_METHODS = ("set_timeout", "close")
PARSER_METHODS = ("finish_body",)
UNREADER_METHODS = ("unread", "take_buffered")
REQUEST_ATTRIBUTES = ("_expected_100_continue", "version")
RESPONSE_METHODS = ("start_response", "write", "close", "force_close", "should_close", "send_headers")
RESPONSE_ATTRIBUTES = ("req", "sock", "status", "status_code", "headers", "headers_sent", "upgrade", "chunked")
CONFIG_SETTINGS = (
    "is_ssl",
    "keepalive",
    "suppress_ragged_eofs",
    "proxy_protocol",
    "limit_request_line",
    "limit_request_fields",
    "limit_request_field_size",
    "http_parser",
)
LOGGER_ATTRIBUTES = ("error_log",)

# The status the worker answers for what gunicorn's parser refuses (gunicorn itself answers with
# an HTML page); the first class that matches wins.
_PARSE_ERRORS = (
    (herrors.InvalidResponseHeader, 500),
    (herrors.InvalidResponseHeaderName, 500),
    (herrors.ConfigurationProblem, 500),
    (herrors.LimitRequestLine, 414),
    (herrors.LimitRequestHeaders, 431),
    (herrors.UnsupportedTransferCoding, 501),
    (herrors.ExpectationFailed, 417),
    (herrors.ParseException, 400),
    (ssl.SSLError, 400),
)
ParseException = herrors.ParseException
NoMoreData = herrors.NoMoreData


def parse_error_status(exc: BaseException) -> int:
    """The HTTP status for an exception gunicorn's parser raised (500: not a parse error)."""
    return next((code for kind, code in _PARSE_ERRORS if isinstance(exc, kind)), 500)


def http_date(when: float) -> str:
    """An HTTP Date header's value, as gunicorn formats it."""
    return str(util.http_date(when))


def close_graceful(sock: Any) -> None:
    util.close_graceful(sock)


def tls_context(cfg: Any) -> ssl.SSLContext:
    """The SSLContext gunicorn gives a new connection (our `ssl_context` setting's, serving.py)."""
    context: ssl.SSLContext = gsock.ssl_context(cfg)
    return context


def gunicorn_config(**settings: Any) -> Any:
    """A gunicorn Config with these settings (tests and tools; the server builds its own)."""
    cfg = Config()
    for key, value in settings.items():
        cfg.set(key, value)
    return cfg


def request_parser(cfg: Any, source: Any, peer: Any) -> Any:
    """gunicorn's request parser over a socket or an iterable of byte strings."""
    return RequestParser(cfg, source, peer)


def uses_fast_parser(cfg: Any) -> bool:
    """Whether gunicorn reads requests with its C parser (gunicorn_h1c) under this config."""
    return bool(hmessage._check_fast_parser(cfg))
