"""The PolicyReports an audit run leaves behind, as plain dicts (pure; writing.py sends them).

One `wgpolicyk8s.io/v1alpha2` PolicyReport named `servinggate` per namespace with findings
(every audited kind is namespaced), labelled `app.kubernetes.io/managed-by: servinggate` so the
writer finds its own and nobody else's. What Kyverno's users ran into decides the rest:

- a report is rebuilt from the run every time, so a fixed or deleted object leaves no stale
  result, and a namespace with no finding left has no report;
- at most MAX_RESULTS results per report (deny-action ones first): a report past etcd's request
  size limit cannot be written at all; the summary still counts every finding;
- no `pass` results: one per valid object is noise nobody reads, and size.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from .judging import Finding, Judged

GROUP, VERSION, PLURAL = "wgpolicyk8s.io", "v1alpha2", "policyreports"
API_VERSION = f"{GROUP}/{VERSION}"
REPORT_NAME = "servinggate"
SOURCE = "servinggate"
MANAGED_BY = ("app.kubernetes.io/managed-by", "servinggate")
MAX_RESULTS = 1000


def _result(j: Judged, f: Finding, seconds: int) -> dict[str, Any]:
    properties = {"action": f.action}
    if f.field:
        properties["field"] = f.field
    resource = {"apiVersion": j.api_version, "kind": j.kind, "namespace": j.namespace, "name": j.name}
    if j.uid:
        resource["uid"] = j.uid
    return {
        "source": SOURCE,
        "policy": f.rule,
        "rule": f.rule,
        "result": f.result,
        "scored": True,
        "message": f"{f.field}: {f.message}" if f.field else f.message,
        "resources": [resource],
        "properties": properties,
        "timestamp": {"seconds": seconds, "nanos": 0},
    }


def _order(pair: tuple[Judged, Finding]) -> tuple[bool, str, str, str, str]:
    j, f = pair
    return (f.result != "fail", j.kind, j.name, f.rule, f.field or "")


def report(namespace: str, found: list[tuple[Judged, Finding]], seconds: int) -> dict[str, Any]:
    """The report of one namespace (without a resourceVersion: the writer adds the one it read)."""
    found = sorted(found, key=_order)
    tally = Counter(f.result for _, f in found)
    return {
        "apiVersion": API_VERSION,
        "kind": "PolicyReport",
        "metadata": {"name": REPORT_NAME, "namespace": namespace, "labels": {MANAGED_BY[0]: MANAGED_BY[1]}},
        "summary": {"pass": 0, "fail": tally["fail"], "warn": tally["warn"], "error": 0, "skip": 0},
        "results": [_result(j, f, seconds) for j, f in found[:MAX_RESULTS]],
    }


def reports(judged: Iterable[Judged], seconds: int) -> dict[str, dict[str, Any]]:
    """namespace -> its report, for every namespace with a finding."""
    by_namespace: dict[str, list[tuple[Judged, Finding]]] = defaultdict(list)
    for j in judged:
        by_namespace[j.namespace].extend((j, f) for f in j.findings)
    return {ns: report(ns, found, seconds) for ns, found in sorted(by_namespace.items()) if found}
