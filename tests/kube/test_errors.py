"""One line per API failure, saying what to fix (pure: no network)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, NewConnectionError, ReadTimeoutError

from webhook.kube import ApiCall, describe_api_error

SECRET = ApiCall("get", "secrets", "servinggate-system", "servinggate-webhook-tls")


def api_exception(status: int, reason: str, message: str = "") -> ApiException:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": status} if message else None
    return ApiException(status=status, reason=reason, body=json.dumps(body) if body else None)


def test_forbidden_names_the_verb_resource_and_namespace():
    exc = api_exception(
        403,
        "Forbidden",
        'secrets "servinggate-webhook-tls" is forbidden: User '
        '"system:serviceaccount:servinggate-system:servinggate-webhook" cannot get resource "secrets" '
        'in API group "" in the namespace "servinggate-system"',
    )
    line = describe_api_error(exc, SECRET)
    assert line.startswith("forbidden: system:serviceaccount:servinggate-system:servinggate-webhook cannot get secrets")
    assert "in namespace servinggate-system" in line and "RBAC" in line
    assert "\n" not in line


def test_forbidden_without_a_status_body_still_names_the_request():
    line = describe_api_error(
        ApiException(status=403, reason="Forbidden"), ApiCall("patch", "mutatingwebhookconfigurations", name="x", group="admissionregistration.k8s.io")
    )
    assert line.startswith("forbidden: cannot patch mutatingwebhookconfigurations.admissionregistration.k8s.io 'x' at cluster scope")


@pytest.mark.parametrize(
    "status, needle", [(401, "unauthorized"), (500, "API server error 500"), (503, "API server error 503"), (429, "throttled"), (404, "not found")]
)
def test_other_statuses(status, needle):
    line = describe_api_error(api_exception(status, "Whatever", "the server says so"), SECRET, host="https://10.0.0.1:6443")
    assert needle in line and "\n" not in line


def refused() -> MaxRetryError:
    conn = client.ApiClient().rest_client.pool_manager.connection_from_url("http://127.0.0.1:1")
    cause = NewConnectionError(conn, "Failed to establish a new connection: [Errno 111] Connection refused")
    return MaxRetryError(conn, "/api/v1/namespaces/x/secrets/y", cause)


def test_unreachable_names_the_host():
    line = describe_api_error(refused(), SECRET, host="http://127.0.0.1:1")
    assert line.startswith("API server unreachable at 127.0.0.1:1: connection refused")
    assert "get secrets" in line


def test_a_timeout_is_unreachable_too():
    conn = client.ApiClient().rest_client.pool_manager.connection_from_url("https://api.example:6443")
    line = describe_api_error(ReadTimeoutError(conn, "/", "read timed out"), SECRET)
    assert line.startswith("API server unreachable at api.example:6443: timed out")


def test_a_bare_socket_error():
    assert "connection refused" in describe_api_error(ConnectionRefusedError(111, "Connection refused"), SECRET, host="https://h:1")
    assert "timed out" in describe_api_error(TimeoutError("timed out"), SECRET, host="https://h:1")
