"""tests/e2e: ServingGate beside the real Kthena and Volcano (docs/e2e.md).

They run only when SERVINGGATE_E2E_KUBECONFIG names a cluster's kubeconfig; without it every test
skips at once, and `./dev test` never needs a cluster. On the cluster, a test that needs Kthena,
Volcano, KWOK nodes, KServe or the CronHPA controller skips, naming the one that does not answer
(see `probe_stack` and `probe_autoscalers`). Our webhook and reconciler are started from this
checkout by the session, and stopped at its end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.clusterlock import ClusterLock, lock_dir_for
from support.e2e import AUTOSCALER_COMPONENTS, COMPONENTS, ENV, Cluster, OurReconciler, OurWebhook, kubeconfig_from_env, probe_autoscalers, probe_stack


@pytest.fixture(autouse=True)
def cluster_lock(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every e2e test holds the cluster shared; one marked `cluster_to_itself` (it restarts the API
    server or Kthena, or needs every NPU node of the cluster to be its own) holds it alone, whatever
    the number of workers (tests/support/clusterlock.py)."""
    kubeconfig = kubeconfig_from_env()
    if kubeconfig is None:
        yield
        return
    lock = ClusterLock(lock_dir_for(kubeconfig))
    with lock.exclusive() if request.node.get_closest_marker("cluster_to_itself") else lock.shared():
        yield


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    kubeconfig = kubeconfig_from_env()
    if kubeconfig is None:
        pytest.skip(f"{ENV} is not set: tests/e2e need a cluster with Kthena, Volcano and KWOK (docs/e2e.md)")
    return Cluster(kubeconfig)


@pytest.fixture(scope="session")
def stack(cluster: Cluster) -> dict[str, str | None]:
    """Which components answer: component -> None, or why it does not."""
    return probe_stack(cluster)


@pytest.fixture(scope="session")
def autoscalers(cluster: Cluster) -> dict[str, str | None]:
    """Whether KServe and the CronHPA controller answer (probed once, by the first test that needs one)."""
    return probe_autoscalers(cluster)


@pytest.fixture
def need(stack: dict[str, str | None], request: pytest.FixtureRequest) -> Callable[..., None]:
    """need("kthena", "kwok", "kserve", ...): skip, naming each component that does not answer."""

    def check(*components: str) -> None:
        unknown = set(components) - set(COMPONENTS) - set(AUTOSCALER_COMPONENTS)
        assert not unknown, unknown
        found = dict(stack)
        if set(components) & set(AUTOSCALER_COMPONENTS):
            found.update(request.getfixturevalue("autoscalers"))
        missing = [f"{c}: {found[c]}" for c in components if found[c]]
        if missing:
            pytest.skip("; ".join(missing))

    return check


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def servinggate(cluster: Cluster, workdir: Path) -> Iterator[OurWebhook]:
    """Our webhook, serving and registered (failurePolicy as generated: Fail)."""
    hook = OurWebhook(cluster, workdir).start()
    hook.register()
    try:
        yield hook
    finally:
        try:
            hook.unregister()  # retries while the API server is away
        finally:
            hook.stop()


@pytest.fixture(scope="session")
def reconciler(cluster: Cluster, workdir: Path) -> Iterator[OurReconciler]:
    rec = OurReconciler(cluster, workdir).start()
    try:
        yield rec
    finally:
        rec.stop()


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own, judged by our webhook; it and the nodes labelled for it go at the end."""
    prefix = "sg-" + request.node.name.split("[")[0].removeprefix("test_").replace("_", "-")[:30].rstrip("-")
    ns = cluster.namespace(prefix)
    try:
        yield ns
    finally:
        cluster.delete_namespace(ns)
        cluster.delete_nodes(ns)
