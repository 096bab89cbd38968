"""The objects `smoke` sends: each chosen so that exactly one outcome proves our webhook answered.

- The known-good ModelServing passes Kthena's CRD schema and every rule (tests run `check` on it).
- The known-bad one differs by one entry-template label that the ModelServing controller sets
  itself (`modelservings.reserved-labels`): the CRD schema accepts it and Kthena's own webhook does
  not look at it, so only our validating webhook refuses it.
- The pod carries `modelserving.volcano.sh/name` and no schedulerName, so the API server defaults
  it to `default-scheduler` and only our mutating webhook (`pods.default-scheduler`) changes it.
- The opt-in gang's pod (`servinggate.io/gang`, no schedulerName) gets the gang scheduler and its
  PodGroup annotation from our MutatingAdmissionPolicy where it is installed, else from the webhook.
"""

from __future__ import annotations

import copy
from typing import Any

from ..kthena import LABEL_NAME, MODELSERVING_API_VERSION
from ..policies.pods import GANG_LABEL

NAME = "servinggate-smoke"
BAD_RULE = "modelservings.reserved-labels"
# What our refusal names: the field the rule forbids (the message names fields, not rules).
BAD_FIELD = f"entryTemplate.metadata.labels[{LABEL_NAME}]"
DEFAULT_SCHEDULER = "default-scheduler"
IMAGE = "registry.k8s.io/pause:3.9"


def _restricted_container(name: str) -> dict[str, Any]:
    """A container that Pod Security `restricted` admits, should the namespace enforce it."""
    return {
        "name": name,
        "image": IMAGE,
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "16Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "runAsUser": 65535,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }


def good_modelserving(namespace: str) -> dict[str, Any]:
    role = {"name": "prefill", "replicas": 1, "workerReplicas": 0, "entryTemplate": {"spec": {"containers": [_restricted_container("entry")]}}}
    return {
        "apiVersion": MODELSERVING_API_VERSION,
        "kind": "ModelServing",
        "metadata": {"name": f"{NAME}-good", "namespace": namespace, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {"replicas": 1, "schedulerName": "volcano", "template": {"roles": [role]}},
    }


def bad_modelserving(namespace: str) -> dict[str, Any]:
    ms = copy.deepcopy(good_modelserving(namespace))
    ms["metadata"]["name"] = f"{NAME}-bad"
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["metadata"] = {"labels": {LABEL_NAME: "someone-else"}}
    return ms


def gang_pod(namespace: str) -> dict[str, Any]:
    pod = modelserving_pod(namespace)
    pod["metadata"] = {"name": f"{NAME}-gang-0", "namespace": namespace, "labels": {GANG_LABEL: NAME, "app.kubernetes.io/name": NAME}}
    return pod


def modelserving_pod(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{NAME}-0-prefill-0-0", "namespace": namespace, "labels": {LABEL_NAME: NAME, "app.kubernetes.io/name": NAME}},
        "spec": {
            "automountServiceAccountToken": False,
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [_restricted_container("entry")],
        },
    }
