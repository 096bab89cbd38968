"""Every contact with gunicorn's internals, in one place.

The worker (worker.py) stands on gunicorn's gthread worker and reads requests with gunicorn's own
HTTP/1.1 parser. gunicorn documents neither as an API, so every name used from it is taken here
and nowhere else, and `tests/server/test_gunicorn_adapter.py` checks that each one exists in the
installed gunicorn: an upgrade that renames one fails that test, not a production worker.
Mirrors gunicorn 27.0 (gunicorn/workers/gthread.py, gunicorn/http/*.py).
"""

from __future__ import annotations

import ssl
from typing import Any

from gunicorn import SERVER
from gunicorn import sock as gsock
from gunicorn import util
from gunicorn.config import Config
from gunicorn.http import errors as herrors
from gunicorn.http import get_parser
from gunicorn.http import message as hmessage
from gunicorn.http import wsgi
from gunicorn.http.body import LengthReader
from gunicorn.http.parser import RequestParser
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, TConn, ThreadWorker

__all__ = ["SERVER", "STOP_KEEPALIVE_LINGER", "LengthReader", "RequestParser", "TConn", "ThreadWorker", "get_parser", "gsock",
           "herrors", "util", "wsgi"]

# The status the worker answers for what gunicorn's parser refuses (gunicorn itself answers with
# an HTML page); the first class that matches wins.
_PARSE_ERRORS = ((herrors.InvalidResponseHeader, 500), (herrors.InvalidResponseHeaderName, 500), (herrors.ConfigurationProblem, 500),
                 (herrors.LimitRequestLine, 414), (herrors.LimitRequestHeaders, 431), (herrors.UnsupportedTransferCoding, 501),
                 (herrors.ExpectationFailed, 417), (herrors.ParseException, 400), (ssl.SSLError, 400))


def parse_error_status(exc: BaseException) -> int:
    """The HTTP status for an exception gunicorn's parser raised (500: not a parse error)."""
    return next((code for kind, code in _PARSE_ERRORS if isinstance(exc, kind)), 500)


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
