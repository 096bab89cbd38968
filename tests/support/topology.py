"""A small NPU cluster in two tier-1 HyperNodes under one tier-2 HyperNode, and builders for
more: the scale-in tests by HyperNode share them."""

from __future__ import annotations

ASCEND = "huawei.com/Ascend910"


def node(name: str, npus: int = 8, labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "status": {"allocatable": {"cpu": "96", ASCEND: str(npus)}}}


def pod(name: str, node_name: str, npus: int = 1, annotations: dict | None = None) -> dict:
    meta = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "resourceVersion": "1",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}],
    }
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {ASCEND: str(npus)}, "limits": {ASCEND: str(npus)}}}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def hypernode(name: str, tier: int, *members: dict, kind: str = "Node") -> dict:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": [{"type": kind, "selector": m} for m in members]},
    }


def exact(name: str) -> dict:
    return {"exactMatch": {"name": name}}


# hn-a: n1 full, n2 4/8 (12/16 used); hn-b: n3 4/8, n4 2/8 (6/16 used). n4's pods go first (the
# emptiest node); n2 and n3 are equally full: by node they tie, by HyperNode n3's go first (hn-b
# is the emptier HyperNode), and removing 6 pods empties hn-b.
NODES = [node("n1"), node("n2"), node("n3"), node("n4")]
PODS = (
    [pod(f"a1-{i}", "n1") for i in range(8)]
    + [pod(f"a2-{i}", "n2") for i in range(4)]
    + [pod(f"b3-{i}", "n3") for i in range(4)]
    + [pod(f"b4-{i}", "n4") for i in range(2)]
)
HYPERNODES = [
    hypernode("hn-a", 1, exact("n1"), exact("n2")),
    hypernode("hn-b", 1, {"regexMatch": {"pattern": "n[34]"}}),
    hypernode("spine", 2, exact("hn-a"), exact("hn-b"), kind="HyperNode"),
]
