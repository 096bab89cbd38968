"""What went wrong between us and the API server, in one line an operator can act on.

The official client reports a refused permission as a multi-line `ApiException` dump with HTTP
headers, and an unreachable server as a urllib3 `MaxRetryError` several causes deep. Neither
says what to change. `describe_api_error` needs only the exception and the call we were
making (`ApiCall`), so it is a pure function and is tested without a network.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from dataclasses import dataclass

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError, ProtocolError, SSLError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from ..errors import OperatorError


class KubeAccessError(OperatorError):
    """The API server cannot be used as configured (no credentials, refused permission,
    unreachable, failing). The message is one line naming what to fix, so the command that meets
    it at start-up exits 2 instead of printing the client's traceback."""


@dataclass(frozen=True)
class ApiCall:
    """The API call that failed, as RBAC sees it: verb, resource, and where. (Not a `Request`:
    that name is the admission request's, webhook/admission/review.py.)"""

    verb: str  # get, list, watch, create, patch, update, delete
    resource: str  # plural, e.g. secrets, validatingwebhookconfigurations
    namespace: str = ""  # "" for cluster-scoped objects or all namespaces
    name: str = ""
    group: str = ""  # "" for the core group

    def target(self) -> str:
        what = self.resource if not self.group else f"{self.resource}.{self.group}"
        if self.name:
            what += f" {self.name!r}"
        return what + (f" in namespace {self.namespace}" if self.namespace else " at cluster scope")


_USER = re.compile(r'User "([^"]+)"')


def _status_message(exc: ApiException) -> str:
    """The `message` of the Status object the API server sent, or "" when there is none."""
    try:
        body = json.loads(exc.body) if exc.body else {}
    except (TypeError, ValueError):
        return ""
    message = body.get("message") if isinstance(body, dict) else None
    return " ".join(str(message).split()) if message else ""


def _host_of(exc: BaseException, host: str) -> str:
    # urllib3 2.x: a NewConnectionError names its connection (`conn`); `pool` is deprecated there
    # (a FutureWarning) but the only name older errors (MaxRetryError) have.
    pool = getattr(exc, "conn", None) or getattr(exc, "pool", None)
    if pool is not None and getattr(pool, "host", None):
        port = getattr(pool, "port", None)
        return f"{pool.host}:{port}" if port else str(pool.host)
    return host.removeprefix("https://").removeprefix("http://").rstrip("/") or "the API server"


def _transport_reason(exc: BaseException) -> str:
    """Follow urllib3's wrapping down to the cause that says why there was no answer."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, (ConnectionRefusedError,)) or "Connection refused" in str(cause):
            return "connection refused"
        if isinstance(cause, (Urllib3Timeout, socket.timeout, TimeoutError)):
            return "timed out"
        if isinstance(cause, (SSLError, ssl.SSLError)):
            return f"TLS handshake failed ({str(cause).splitlines()[0][:120]})"
        if isinstance(cause, socket.gaierror) or "Name or service not known" in str(cause) or "nodename nor servname" in str(cause):
            return "host name does not resolve"
        nxt = getattr(cause, "reason", None)
        cause = nxt if isinstance(nxt, BaseException) else (cause.__cause__ or cause.__context__)
    if isinstance(exc, (NewConnectionError, MaxRetryError)):
        return "cannot connect"
    if isinstance(exc, ProtocolError):
        return "connection dropped"
    return type(exc).__name__


def describe_api_error(exc: BaseException, call: ApiCall, host: str = "") -> str:
    """One line that says what failed and what to fix, e.g.
    `forbidden: cannot get secrets 'x' in namespace servinggate-system (RBAC)`;
    `API server unreachable at 10.0.0.1:443: connection refused`."""
    if isinstance(exc, ApiException):
        status = exc.status or 0
        message = _status_message(exc)
        if status == 403:
            user = _USER.search(message)
            who = f"{user.group(1)} " if user else ""
            return f"forbidden: {who}cannot {call.verb} {call.target()} (RBAC: grant {call.verb} on {call.resource})"
        if status == 401:
            return f"unauthorized: the API server at {_host_of(exc, host)} rejected our credentials (expired token or wrong kubeconfig user)"
        if status == 404:
            return f"not found: {call.target()}"
        if status == 429:
            return f"throttled: the API server refused to {call.verb} {call.target()} (429 Too Many Requests)"
        if status >= 500:
            detail = f": {message}" if message else ""
            return f"API server error {status} {exc.reason or ''} at {_host_of(exc, host)} while trying to {call.verb} {call.target()}{detail}".replace(
                "  ", " "
            )
        detail = message or str(exc.reason or "")
        return f"cannot {call.verb} {call.target()}: HTTP {status} {detail}".rstrip()
    if isinstance(exc, (HTTPError, OSError)):
        return f"API server unreachable at {_host_of(exc, host)}: {_transport_reason(exc)} (while trying to {call.verb} {call.target()})"
    return f"cannot {call.verb} {call.target()}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
