"""One way to build an API client, shared by `serve` (lookups, certificates) and `reconcile`.

The order is the one operators expect from kubectl and client-go: a kubeconfig named on the
command line wins; inside a pod the service account is used; otherwise `KUBECONFIG` (read when
the client is built, not when `kubernetes` was imported, so tests and wrappers can set it late),
then `~/.kube/config`. When none of them is usable the caller gets one `KubeAccessError` whose
message says what was tried.
"""

from __future__ import annotations

import os

from kubernetes import client
from kubernetes import config as kube_config

from .errors import KubeAccessError


def _from_kubeconfig(path: str, configuration: client.Configuration) -> None:
    """Fill `configuration` from the kubeconfig at `path` (a `:`-separated list is merged)."""
    if not any(os.path.exists(p) for p in path.split(os.pathsep) if p):
        raise KubeAccessError(f"unusable kubeconfig {path}: no such file")
    try:
        kube_config.load_kube_config(config_file=path, client_configuration=configuration)
    except Exception as exc:  # whatever the library raises, the file is what to fix
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        if isinstance(exc, OSError) and exc.strerror:
            reason = exc.strerror
        raise KubeAccessError(f"unusable kubeconfig {path}: {reason}") from None


def load_api_client(kubeconfig: str = "", *, retries: bool = True) -> client.ApiClient:
    """An `ApiClient` for the first usable source: `kubeconfig`, the in-cluster service account,
    `$KUBECONFIG`, `~/.kube/config`. Raises `KubeAccessError` when none is usable.

    An explicit `kubeconfig` that cannot be used is an error even in a pod: silently talking to
    another cluster than the one the operator named would be worse than stopping.
    `retries=False`: urllib3 never tries a request again (a caller with a deadline, such as a
    review's lookups, must not wait for the library's three retries).
    """
    configuration = _configuration(kubeconfig)
    if not retries:
        configuration.retries = False  # read when the client builds its connection pool, below
    return client.ApiClient(configuration)


def _configuration(kubeconfig: str) -> client.Configuration:
    configuration = client.Configuration()
    if kubeconfig:
        _from_kubeconfig(kubeconfig, configuration)
        return configuration
    try:
        kube_config.load_incluster_config(client_configuration=configuration)
        return configuration
    except kube_config.ConfigException as exc:
        in_cluster = f"in-cluster: {exc}"
    path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    if not any(os.path.exists(p) for p in path.split(os.pathsep) if p):
        # Say what was tried rather than "no such file": the operator may not know either source.
        raise KubeAccessError(f"no usable Kubernetes API configuration ({in_cluster.rstrip('.')}; no kubeconfig at {path})")
    _from_kubeconfig(path, configuration)
    return configuration
