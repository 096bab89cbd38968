"""The auditor's reads: every object of a resource in pages (kube/reflector.py's `read`), never
one object at a time and never more than one page held. One of the two modules of `audit` that
import the Kubernetes client (writing.py is the other): it holds the list calls the auditor's
identity makes, and its RBAC follows them.

List items of built-in kinds come without `apiVersion` and `kind` (the API server writes them on
the list only); they are filled in from the list, so the rules see what a review would hand them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from kubernetes import client

from ..kube import ApiCall
from ..kube.reflector import ListWatch, NotServed, ReflectorMetrics, read
from ..policies.projections import KEPT
from .auditing import KindMissing

# cluster-scoped kinds the store keeps: listed whole even when one namespace is audited
CLUSTER_SCOPED = frozenset((e.group, e.plural) for e in KEPT if e.cluster_scoped)


class Lister:
    """A `Source` (auditing.py) over the API server, in one namespace or all of them."""

    def __init__(
        self, api_client: client.ApiClient, *, namespace: str = "", page_size: int = 500, timeout: float = 60, metrics: ReflectorMetrics | None = None
    ) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._host = str(getattr(api_client.configuration, "host", "") or "")
        self.namespace, self.page_size, self.timeout = namespace, page_size, timeout
        self.metrics = metrics

    def _list(self, group: str, version: str, plural: str) -> ListWatch:
        if not group and plural == "nodes":  # the one core kind the store keeps; cluster-scoped
            return ListWatch(ApiCall("list", plural), self._core.list_node, host=self._host)
        if self.namespace and (group, plural) not in CLUSTER_SCOPED:
            listing = functools.partial(self._custom.list_namespaced_custom_object, group, version, self.namespace, plural)
            return ListWatch(ApiCall("list", plural, self.namespace, group=group), listing, host=self._host)
        listing = functools.partial(self._custom.list_cluster_custom_object, group, version, plural)
        return ListWatch(ApiCall("list", plural, group=group), listing, host=self._host)

    def pages(self, group: str, version: str, plural: str) -> Iterator[list[dict]]:
        try:
            for page in read(self._list(group, version, plural), page_size=self.page_size, timeout=self.timeout, metrics=self.metrics):
                api_version = page.api_version or (f"{group}/{version}" if group else version)
                for item in page.items:
                    item.setdefault("apiVersion", api_version)
                    item.setdefault("kind", page.kind)
                    meta = item.get("metadata")
                    if isinstance(meta, dict):
                        meta.pop("managedFields", None)  # the largest part of most objects; no rule reads it
                yield page.items
        except NotServed:
            raise KindMissing(f"{plural}.{group}/{version}") from None
