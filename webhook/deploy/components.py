"""The opt-in kustomize components `python -m webhook manifests` writes next to the base.

- `components/without-match-conditions`: for API servers without webhook `matchConditions`
  (before 1.28, or the AdmissionWebhookMatchConditions feature gate off). It removes every
  entry's `matchConditions`, so those entries see all objects of their resources again; the
  rules give the same answers (a rule never relies on its condition), only the webhook's
  outage then blocks more writes.

  Each patch first tests the entry's name at its index, so a component that no longer fits
  the generated configurations fails `kubectl kustomize` instead of editing the wrong entry.
- `components/mutating-policy-v1` (Kubernetes 1.36+) and `components/mutating-policy-v1beta1`
  (1.34-1.35, with the feature gate and API version turned on): the opt-in gang's pod mutation as
  a MutatingAdmissionPolicy (mutationpolicy.py), which the API server runs itself, so an opt-in
  gang's pods are made right while the webhook is down.
- `components/cel-fallback-v1` (Kubernetes 1.30+) and `components/cel-fallback-v1beta1`
  (1.28-1.29, with the feature gate and API version turned on): the ValidatingAdmissionPolicies
  of fallback.py, for the rules CEL can express.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..policies.registry import Rule
from . import fallback, mutationpolicy
from .configurations import GANG_ENTRY, POLICY_REASON, REASON_PREFIX
from .yamlfile import HEADER, dump

COMPONENT_API = "kustomize.config.k8s.io/v1alpha1"
WITHOUT_MATCH_CONDITIONS = Path("components") / "without-match-conditions"


def _kustomization(comment: str, body: dict[str, Any]) -> str:
    doc = {"apiVersion": COMPONENT_API, "kind": "Component", **body}
    return dump([doc], HEADER + comment)


def without_match_conditions(configurations: list[dict[str, Any]]) -> str:
    patches = []
    for config in configurations:
        ops: list[dict[str, Any]] = []
        for i, hook in enumerate(config["webhooks"]):
            if hook.get("matchConditions"):
                ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": hook["name"]})
                ops.append({"op": "remove", "path": f"/webhooks/{i}/matchConditions"})
        if ops:
            group, _, version = config["apiVersion"].partition("/")
            target = {"group": group, "version": version, "kind": config["kind"], "name": config["metadata"]["name"]}
            patches.append({"target": target, "patch": yaml.safe_dump(ops, sort_keys=False, default_flow_style=False, width=120)})
    comment = (
        "# For API servers without webhook matchConditions (Kubernetes < 1.28, or the\n"
        "# AdmissionWebhookMatchConditions feature gate off): the entries below then receive every\n"
        "# object of their resources. The rules answer the same; only an outage of the webhook\n"
        "# refuses more writes (see docs/operations.md, When the webhook is down).\n"
    )
    return _kustomization(comment, {"patches": patches})


FALLBACK_NEEDS = {
    "v1": "# Kubernetes 1.30+ (ValidatingAdmissionPolicy is GA and on).\n",
    "v1beta1": (
        "# Kubernetes 1.28-1.29: the API server needs --feature-gates=ValidatingAdmissionPolicy=true\n"
        "# --runtime-config=admissionregistration.k8s.io/v1beta1=true (off by default).\n"
    ),
}


def cel_fallback(variant: str) -> str:
    comment = (
        "# The CEL fallback: ValidatingAdmissionPolicies the API server enforces by itself, for the\n"
        "# rules CEL can express, with the rules' messages. They still hold when the webhook is\n"
        "# bypassed. Opt in by listing this folder under `components:` in your overlay.\n"
    ) + FALLBACK_NEEDS[variant]
    return _kustomization(comment, {"resources": ["policies.yaml"]})


MUTATING_POLICY_NEEDS = {
    "v1": "# Kubernetes 1.36+ (MutatingAdmissionPolicy is GA and on; for 1.34-1.35 see mutating-policy-v1beta1).\n",
    "v1beta1": (
        "# Kubernetes 1.34-1.35: the API server needs --feature-gates=MutatingAdmissionPolicy=true\n"
        "# --runtime-config=admissionregistration.k8s.io/v1beta1=true (off by default).\n"
    ),
}


def gang_fails_open(configurations: list[dict[str, Any]]) -> dict[str, Any]:
    """The patch that turns the opt-in gang's webhook entry to Ignore, with its reason: the
    policy has made the pod right before the webhook is called (tested by name at its index,
    so a component that no longer fits fails `kubectl kustomize` instead of editing another)."""
    [config] = [c for c in configurations if c["kind"] == "MutatingWebhookConfiguration"]
    [index] = [i for i, hook in enumerate(config["webhooks"]) if hook["name"].split(".", 1)[0] == GANG_ENTRY]
    key = (REASON_PREFIX + GANG_ENTRY).replace("~", "~0").replace("/", "~1")
    ops = [
        {"op": "test", "path": f"/webhooks/{index}/name", "value": config["webhooks"][index]["name"]},
        {"op": "replace", "path": f"/webhooks/{index}/failurePolicy", "value": "Ignore"},
        {"op": "add", "path": f"/metadata/annotations/{key}", "value": f"Ignore: {POLICY_REASON}"},
    ]
    group, _, version = config["apiVersion"].partition("/")
    target = {"group": group, "version": version, "kind": config["kind"], "name": config["metadata"]["name"]}
    return {"target": target, "patch": yaml.safe_dump(ops, sort_keys=False, default_flow_style=False, width=120)}


def mutating_policy(variant: str, configurations: list[dict[str, Any]]) -> str:
    comment = (
        "# The opt-in gang's pod mutation (scheduler, PodGroup annotation, task spec) as a\n"
        "# MutatingAdmissionPolicy the API server runs by itself: an opt-in gang's pods are made\n"
        "# right while the webhook is down, so the webhook's opt-in gang entry fails open (Ignore).\n"
        "# Kthena's pods stay with the webhook (their owner decides).\n"
        "# Opt in by listing this folder under `components:` in your overlay.\n"
    ) + MUTATING_POLICY_NEEDS[variant]
    return _kustomization(comment, {"resources": ["policy.yaml"], "patches": [gang_fails_open(configurations)]})


def render(rules: list[Rule], configurations: list[dict[str, Any]]) -> dict[Path, str]:
    files = {WITHOUT_MATCH_CONDITIONS / "kustomization.yaml": without_match_conditions(configurations)}
    for variant in mutationpolicy.API_VERSIONS:
        folder = Path("components") / f"mutating-policy-{variant}"
        files[folder / "kustomization.yaml"] = mutating_policy(variant, configurations)
        files[folder / "policy.yaml"] = dump(mutationpolicy.policy_and_binding(version=variant), HEADER + MUTATING_POLICY_NEEDS[variant])
    for variant in fallback.API_VERSIONS:
        folder = Path("components") / f"cel-fallback-{variant}"
        files[folder / "kustomization.yaml"] = cel_fallback(variant)
        files[folder / "policies.yaml"] = dump(fallback.policies(rules, variant), HEADER + FALLBACK_NEEDS[variant])
    return files
