"""Pods for the Pod validation tests: a valid Pod to change one field of, and its errors as text."""

from __future__ import annotations

import copy
from typing import Any

from webhook.podvalidation import apply_pod_defaults, validate_pod_create

BASE_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
}


def pod_with(**spec_fields: Any) -> dict[str, Any]:
    """The base Pod with some spec fields replaced."""
    pod = copy.deepcopy(BASE_POD)
    pod["spec"].update(spec_fields)
    return pod


def container_pod(**container_fields: Any) -> dict[str, Any]:
    """The base Pod with some fields of its one container replaced."""
    pod = copy.deepcopy(BASE_POD)
    pod["spec"]["containers"][0].update(container_fields)
    return pod


def errors_of(pod: dict[str, Any]) -> list[str]:
    """Every error of the defaulted Pod as the API server prints it (`field: body`)."""
    return [str(e) for e in validate_pod_create(apply_pod_defaults(pod))]
