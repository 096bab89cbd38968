"""Writes the PolicyReports of a run (reports.py builds them): create where there is none,
update ours with the resourceVersion read (a 409 re-reads once and tries again), delete ours
where no finding is left. One of the two modules of `audit` that import the Kubernetes client.

Without the PolicyReport CRD (ServingGate does not ship it: wg-policy-prototypes publishes it and
Kyverno's chart installs it, docs/audit.md) `installed()` is False and the auditor writes nothing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..kube import ApiCall, KubeAccessError, describe_api_error
from ..kube.responses import json_body
from .reports import GROUP, MANAGED_BY, PLURAL, REPORT_NAME, VERSION


@dataclass(slots=True)
class Written:
    created: int = 0
    updated: int = 0
    deleted: int = 0


class ReportWriter:
    def __init__(self, api_client: client.ApiClient, *, namespace: str = "", timeout: float = 30) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._host = str(getattr(api_client.configuration, "host", "") or "")
        self.namespace, self.timeout = namespace, timeout

    def _failed(self, exc: BaseException, verb: str, namespace: str = "", name: str = "") -> KubeAccessError:
        return KubeAccessError(describe_api_error(exc, ApiCall(verb, PLURAL, namespace, name, GROUP), self._host))

    def _ours(self) -> dict[str, str]:
        """namespace -> resourceVersion of each report we wrote (in the audited namespace or all)."""
        selector = f"{MANAGED_BY[0]}={MANAGED_BY[1]}"
        found: dict[str, str] = {}
        token = ""
        while True:
            options: dict[str, Any] = {"label_selector": selector, "limit": 500, "_preload_content": False, "_request_timeout": self.timeout}
            if token:
                options["_continue"] = token
            if self.namespace:
                resp = self._custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, **options)
            else:
                resp = self._custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **options)
            body = json_body(resp)
            for item in body.get("items") or ():
                meta = item.get("metadata") or {}
                if meta.get("name") == REPORT_NAME:
                    found[str(meta.get("namespace") or "")] = str(meta.get("resourceVersion") or "")
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return found

    def installed(self) -> bool:
        """Whether the API server serves PolicyReports; raises KubeAccessError for other failures."""
        try:
            resp = self._custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=1, _preload_content=False, _request_timeout=self.timeout)
            json_body(resp)
        except ApiException as exc:
            if exc.status == 404:
                return False
            if exc.status == 403 and self.namespace:
                return True  # allowed in one namespace only; the writes will say if not
            raise self._failed(exc, "list") from None
        except (HTTPError, OSError) as exc:
            raise self._failed(exc, "list") from None
        return True

    def sync(self, wanted: dict[str, dict[str, Any]]) -> Written:
        """Make our reports exactly `wanted` (namespace -> report)."""
        done = Written()
        try:
            ours = self._ours()
        except (ApiException, HTTPError, OSError) as exc:
            raise self._failed(exc, "list", self.namespace) from None
        for namespace, body in wanted.items():
            if namespace in ours:
                self._update(namespace, body, ours[namespace])
                done.updated += 1
            else:
                self._create(namespace, body)
                done.created += 1
        for namespace in sorted(set(ours) - set(wanted)):
            try:
                self._custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, REPORT_NAME, _request_timeout=self.timeout)
            except ApiException as exc:
                if exc.status != 404:  # already gone is what we wanted
                    raise self._failed(exc, "delete", namespace, REPORT_NAME) from None
            except (HTTPError, OSError) as exc:
                raise self._failed(exc, "delete", namespace, REPORT_NAME) from None
            done.deleted += 1
        return done

    def _create(self, namespace: str, body: dict[str, Any]) -> None:
        try:
            self._custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 409:  # someone (another auditor) created it since we listed: update it
                self._update(namespace, body, self._read_version(namespace))
                return
            raise self._failed(exc, "create", namespace) from None
        except (HTTPError, OSError) as exc:
            raise self._failed(exc, "create", namespace) from None

    def _read_version(self, namespace: str) -> str:
        try:
            current = json_body(
                self._custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, REPORT_NAME, _preload_content=False, _request_timeout=self.timeout)
            )
        except (ApiException, HTTPError, OSError) as exc:
            raise self._failed(exc, "get", namespace, REPORT_NAME) from None
        return str((current.get("metadata") or {}).get("resourceVersion") or "")

    def _update(self, namespace: str, body: dict[str, Any], version: str, retry: bool = True) -> None:
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = version
        try:
            self._custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, REPORT_NAME, body, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 409 and retry:  # changed since we read it: read again, once
                self._update(namespace, body, self._read_version(namespace), retry=False)
                return
            raise self._failed(exc, "update", namespace, REPORT_NAME) from None
        except (HTTPError, OSError) as exc:
            raise self._failed(exc, "update", namespace, REPORT_NAME) from None
