"""The auditor's reads: every object of a resource in pages (`limit`, then `continue` tokens),
never one object at a time. One of the two modules of `audit` that import the Kubernetes
client (writing.py is the other).

List items of built-in kinds come without `apiVersion` and `kind` (the API server writes them on
the list only); they are filled in from the list, so the rules see what a review would hand them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..kube import ApiCall, KubeAccessError, describe_api_error
from ..kube.responses import json_body
from ..policies.projections import KEPT
from .auditing import KindMissing

# cluster-scoped kinds the store keeps: listed whole even when one namespace is audited
CLUSTER_SCOPED = frozenset((e.group, e.plural) for e in KEPT if e.cluster_scoped)


class Lister:
    """A `Source` (auditing.py) over the API server, in one namespace or all of them."""

    def __init__(self, api_client: client.ApiClient, *, namespace: str = "", page_size: int = 500, timeout: float = 60) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._host = str(getattr(api_client.configuration, "host", "") or "")
        self.namespace, self.page_size, self.timeout = namespace, page_size, timeout

    def _page(self, group: str, version: str, plural: str, token: str) -> dict:
        options: dict[str, Any] = {"limit": self.page_size, "_preload_content": False, "_request_timeout": self.timeout}
        if token:
            options["_continue"] = token
        resp: Any
        try:
            if not group and plural == "nodes":  # the one core kind the store keeps; cluster-scoped
                resp = self._core.list_node(**options)
            elif self.namespace and (group, plural) not in CLUSTER_SCOPED:
                resp = self._custom.list_namespaced_custom_object(group, version, self.namespace, plural, **options)
            else:
                resp = self._custom.list_cluster_custom_object(group, version, plural, **options)
        except ApiException as exc:
            if exc.status == 404 and not token:
                raise KindMissing(f"{plural}.{group}/{version}") from None
            raise KubeAccessError(describe_api_error(exc, ApiCall("list", plural, self.namespace, group=group), self._host)) from None
        except (HTTPError, OSError) as exc:
            raise KubeAccessError(describe_api_error(exc, ApiCall("list", plural, self.namespace, group=group), self._host)) from None
        body: dict = json_body(resp)
        return body

    def pages(self, group: str, version: str, plural: str) -> Iterator[list[dict]]:
        token = ""
        while True:
            body = self._page(group, version, plural, token)
            kind = str(body.get("kind") or "").removesuffix("List")
            api_version = str(body.get("apiVersion") or (f"{group}/{version}" if group else version))
            items = [i for i in body.get("items") or () if isinstance(i, dict)]
            for item in items:
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                meta = item.get("metadata")
                if isinstance(meta, dict):
                    meta.pop("managedFields", None)  # the largest part of most objects; no rule reads it
            yield items
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return
