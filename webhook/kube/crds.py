"""The CustomResourceDefinitions the API server serves, listed once for `check --kubeconfig`:
the exact schemas, defaults and CEL rules of the user's Kthena and Volcano versions."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from .errors import ApiCall, KubeAccessError, describe_api_error
from .responses import json_body

GROUP, VERSION, PLURAL = "apiextensions.k8s.io", "v1", "customresourcedefinitions"
PAGE = 100  # a CRD can be megabytes (Kthena's ModelServing CRD among them): small pages


def list_crds(api_client: client.ApiClient) -> list[dict[str, Any]]:
    """Every CRD of the cluster, page by page. Raises KubeAccessError (one line) when they cannot be listed."""
    custom = client.CustomObjectsApi(api_client)
    host = str(getattr(api_client.configuration, "host", "") or "")
    found: list[dict[str, Any]] = []
    token = None
    while True:
        try:
            body = json_body(
                custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=PAGE, _continue=token, _preload_content=False, _request_timeout=(10, 60))
            )
        except (ApiException, HTTPError, OSError) as exc:
            raise KubeAccessError(describe_api_error(exc, ApiCall("list", PLURAL, group=GROUP), host)) from None
        found += [item for item in body.get("items") or () if isinstance(item, dict)]
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return found
