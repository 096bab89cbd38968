"""Objects for the audit tests: Kthena's gang example (valid) and copies broken the ways a CRD
lets through and our rules refuse."""

from __future__ import annotations

import copy

from support import load_admission

MS_GROUP = "workload.serving.volcano.sh"


def modelserving(name: str, namespace: str = "default", **breakage: bool) -> dict:
    """The gang example under another name; `upper_role=True` names a role `Prefill` (the CRD
    allows it, modelservings.kthena.role-names does not), `spaced_image=True` gives an image with
    a space (modelservings.kthena.images)."""
    ms = copy.deepcopy(load_admission("modelservings-create-gang-example-validating")["request"]["object"])
    ms["metadata"] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    roles = ms["spec"]["template"]["roles"]
    if breakage.get("upper_role"):
        old = roles[0]["name"]
        roles[0]["name"] = "Prefill"
        gang = ms["spec"]["template"].get("gangPolicy") or {}
        if old in (gang.get("minRoleReplicas") or {}):
            gang["minRoleReplicas"]["Prefill"] = gang["minRoleReplicas"].pop(old)
    if breakage.get("spaced_image"):
        roles[0]["entryTemplate"]["spec"]["containers"][0]["image"] = "nginx latest"
    return ms


def hpa(name: str, namespace: str = "default", min_replicas: int = 1, max_replicas: int = 4) -> dict:
    """An autoscaling/v2 HPA of a ModelServing, as a list item comes (no apiVersion or kind)."""
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-hpa-{name}"},
        "spec": {
            "scaleTargetRef": {"apiVersion": f"{MS_GROUP}/v1alpha1", "kind": "ModelServing", "name": "x"},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
        },
    }


def kubeconfig(api, tmp_path) -> str:
    return str(api.write_kubeconfig(tmp_path / "kubeconfig"))
