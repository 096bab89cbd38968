"""The cluster `check` judges against: none (files only), a recorded snapshot, or a live cluster.

`--cluster FILE` reads the snapshot format `plan --snapshot` reads (`{"nodes": NodeList,
"pods": PodList}`, or one `List` such as `kubectl get nodes,pods -A -o yaml` prints), extended:
any other top-level key may hold a List too, and the items may be of any kind the cluster-fact
rules read (Queues, HyperNodes, the PodGroup CRD, HPAs, ScaledObjects, CronHPAs,
AutoscalingPolicies). A kind the snapshot holds no object of is taken as not installed, so its
checks are skipped. `--kubeconfig PATH` lists the same kinds from the API server once, and its
CRDs (`cluster_crds`): with a cluster, `check` validates against the CRDs it serves.

Without either, the facts are quiet: `check` says nothing about a cluster it was not shown.
"""

from __future__ import annotations

from typing import Any

from ..config import DataFileError, read_data_file
from ..policies.clusterfacts import QUIET, ClusterFacts, store_of_objects
from ..policies.store import ProjectionStore

SNAPSHOT_FORMS = '{"nodes": NodeList, "pods": PodList, ...: List} or one List (kubectl get nodes,queues,hypernodes,... -A -o yaml)'


class ClusterSnapshotError(ValueError):
    """The snapshot is unusable: one line saying why (check exits 2)."""


def snapshot_objects(path: str) -> list[dict[str, Any]]:
    """Every object of a snapshot file (JSON or YAML)."""
    try:
        data = read_data_file(path)
    except DataFileError as exc:
        raise ClusterSnapshotError(f"--cluster {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ClusterSnapshotError(f"--cluster {path}: must be {SNAPSHOT_FORMS}")
    lists = [data] if isinstance(data.get("items"), list) else [v for v in data.values() if isinstance(v, dict)]
    objects = [i for lst in lists if isinstance(lst.get("items"), list) for i in lst["items"] if isinstance(i, dict) and i.get("kind")]
    if not objects:
        raise ClusterSnapshotError(f"--cluster {path}: no objects found; must be {SNAPSHOT_FORMS}")
    return objects


def cluster_facts(snapshot: str = "", kubeconfig: str = "") -> ClusterFacts:
    """The facts `check` judges against (see the module doc). Raises ClusterSnapshotError, or
    KubeAccessError for a cluster that cannot be read."""
    if snapshot:
        return ClusterFacts(store_of_objects(snapshot_objects(snapshot)))
    if kubeconfig:
        from ..kube.client import load_api_client
        from ..kube.watching import StoreWatcher

        store = ProjectionStore()
        StoreWatcher(load_api_client(kubeconfig), store).list_all()
        return ClusterFacts(store)
    return QUIET


def cluster_crds(kubeconfig: str) -> list[tuple[dict[str, Any], str]]:
    """The CRDs the cluster serves, each with where it came from. Raises KubeAccessError."""
    from ..kube.client import load_api_client
    from ..kube.crds import list_crds

    api_client = load_api_client(kubeconfig)
    where = f"the cluster ({getattr(api_client.configuration, 'host', '') or kubeconfig})"
    return [(crd, where) for crd in list_crds(api_client)]
