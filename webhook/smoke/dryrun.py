"""The API calls of `smoke`: server-side dry-run creates (`dryRun=All`: admission runs in full,
nothing is stored). Each returns the HTTP status and the decoded body, a refusal included, so the
reading of the answer stays in verdicts.py (the client's own calls would raise on a refusal, and
the typed pod call would re-encode our object); a transport failure raises KubeAccessError."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client
from urllib3.exceptions import HTTPError

from ..kthena import MODELSERVING_GROUP, MODELSERVING_VERSION
from ..kube import ApiCall, KubeAccessError, describe_api_error
from ..policies.pods import MUTATING_POLICY_GROUP, MUTATING_POLICY_NAME, MUTATING_POLICY_VERSIONS
from .verdicts import UNREADABLE

TIMEOUT_SECONDS = 30


def _decoded(raw: Any) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {"message": str(raw)}


def _get(api: client.ApiClient, path: str) -> tuple[int, Any]:
    method, url, headers, body, post = api.param_serialize("GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    try:
        response = api.call_api(method, url, header_params=headers, body=body, post_params=post, _request_timeout=TIMEOUT_SECONDS)
        response.read()
    except (HTTPError, OSError) as exc:
        raise KubeAccessError(describe_api_error(exc, ApiCall("get", "mutatingadmissionpolicybindings"), api.configuration.host)) from None
    return int(response.status), _decoded(response.data)


def mutating_policy(api: client.ApiClient) -> str | None:
    """The version at which our opt-in gang's MutatingAdmissionPolicy binding is installed (v1
    looked up first); None when it is not (or not served); UNREADABLE when this user may not read
    it (the chart's test pod may only create ModelServings and pods)."""
    refused = False
    for version in MUTATING_POLICY_VERSIONS:
        status, _ = _get(api, f"/apis/{MUTATING_POLICY_GROUP}/{version}/mutatingadmissionpolicybindings/{MUTATING_POLICY_NAME}")
        if status == 200:
            return version
        refused |= status in (401, 403)
    return UNREADABLE if refused else None


def create(api: client.ApiClient, obj: dict[str, Any]) -> tuple[int, Any]:
    namespace = obj["metadata"]["namespace"]
    if obj["kind"] == "Pod":
        path, call = f"/api/v1/namespaces/{namespace}/pods", ApiCall("create", "pods", namespace)
    else:
        path = f"/apis/{MODELSERVING_GROUP}/{MODELSERVING_VERSION}/namespaces/{namespace}/modelservings"
        call = ApiCall("create", "modelservings", namespace, group=MODELSERVING_GROUP)
    method, url, headers, body, post = api.param_serialize(
        "POST",
        path,
        query_params=[("dryRun", "All")],
        body=obj,
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    try:
        response = api.call_api(method, url, header_params=headers, body=body, post_params=post, _request_timeout=TIMEOUT_SECONDS)
        response.read()
    except (HTTPError, OSError) as exc:  # no answer at all: the cluster cannot be reached
        raise KubeAccessError(describe_api_error(exc, call, api.configuration.host)) from None
    return int(response.status), _decoded(response.data)
