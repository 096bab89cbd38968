"""The chart, rendered and linted through helm-python-sdk (Helm's own Go library; no helm binary).

Each value set is rendered once per test session (`render` is cached by its values and namespace),
so the tests of one value set share a render. Only the calls the package's README documents are
used: Chart.load, Chart.validate_schema, Chart.render and lint."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import helm_python as helm
from support import yaml_documents

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "servinggate"
RELEASE = "servinggate"
NAMESPACE = "servinggate-system"


class Render:
    """One render: the objects by template, and the test hooks apart from what an install creates."""

    def __init__(self, manifests: dict[str, str]) -> None:
        self.text = "\n".join(manifests[k] for k in sorted(manifests))
        self.by_template = {k: yaml_documents(v) for k, v in manifests.items()}
        every = [d for docs in self.by_template.values() for d in docs]
        is_hook = lambda d: "helm.sh/hook" in ((d.get("metadata") or {}).get("annotations") or {})  # noqa: E731
        self.installed = [d for d in every if not is_hook(d)]
        self.hooks = [d for d in every if is_hook(d)]

    def find(self, kind: str, name: str) -> dict:
        hits = [d for d in self.installed if d["kind"] == kind and d["metadata"]["name"] == name]
        assert len(hits) == 1, f"{kind} {name}: {len(hits)} objects"
        return hits[0]

    def kinds(self) -> set[str]:
        return {d["kind"] for d in self.installed}

    def webhooks(self) -> dict[str, dict]:
        return {h["name"]: h for d in self.installed if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]}

    def container(self, deployment: str) -> dict:
        return self.find("Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]


@functools.cache
def _render(values_json: str, namespace: str) -> Render:
    values = json.loads(values_json)
    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema(values)
        return Render(chart.render(values, name=RELEASE, namespace=namespace, is_install=True))


def render(values: dict[str, Any] | None = None, namespace: str = NAMESPACE) -> Render:
    return _render(json.dumps(values or {}, sort_keys=True), namespace)


def lint(values: dict[str, Any] | None = None, namespace: str = NAMESPACE, kube_version: str | None = None) -> dict[str, Any]:
    return helm.lint(str(CHART), values or {}, strict=True, namespace=namespace, kube_version=kube_version)


def schema_refusal(values: dict[str, Any]) -> str:
    """The schema's message for `values`, or "" when they pass."""
    with helm.Chart.load(str(CHART)) as chart:
        try:
            chart.validate_schema(values)
        except helm.HelmValuesError as exc:
            return str(exc)
    return ""
