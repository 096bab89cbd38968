"""The API server's own version (`GET /version`): what `--kubernetes-version auto` resolves to.

`serve` and `audit` read it at start. `serve` reads it again in each worker when its lookups'
watch first connects, and each time the watch recovers from a failure (a control-plane upgrade
restarts the API server and breaks every watch, so a recovered watch is when a new version can
have appeared; a start that could not read it is corrected there too); `audit --every` before
the first run that follows a failed one. A `/version` that cannot be read never stops a start: the newest
supported version is taken, the lenient way (it knows the most fields, so it refuses the least),
with a warning. After a start, a failed re-read keeps the version already in use.

`/version` needs no permission (every authenticated or not user may read it through the
`system:public-info-viewer` role), so this adds nothing to the RBAC the manifests grant.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..kubeversion import Chosen, KubeVersion, from_answer, named, newest_instead
from .client import load_api_client
from .errors import ApiCall, KubeAccessError, describe_api_error
from .responses import json_body

log = logging.getLogger("servinggate.kubernetes-version")

TIMEOUT = 5.0  # seconds for the one GET (connect and read each); urllib3 does not retry it
_CALL = ApiCall("get", "version")


def read_version(api_client: client.ApiClient, timeout: float = TIMEOUT) -> Chosen:
    """The choice the API server's `/version` makes (VersionApi.get_code). Raises KubeAccessError
    with one line when it cannot be read or holds no version."""
    host = str(getattr(api_client.configuration, "host", "") or "")
    try:
        answer: Any = client.VersionApi(api_client).get_code(_request_timeout=timeout, _preload_content=False)
        return from_answer(json_body(answer))
    except (ApiException, HTTPError, OSError) as exc:
        raise KubeAccessError(f"GET /version: {describe_api_error(exc, _CALL, host)}") from None
    except ValueError as exc:  # not JSON, or JSON without a version
        raise KubeAccessError(f"GET /version: {' '.join(str(exc).split())[:200]}") from None


Connect = Callable[[], client.ApiClient]


def connecting(kubeconfig: str) -> Connect:
    """A fresh client per read, closed after it: the server reads at start in gunicorn's master,
    and no connection of the master's may be left for the forked workers to share."""
    return lambda: load_api_client(kubeconfig, retries=False)


def resolve(setting: KubeVersion | str, connect: Connect, *, shared: bool = False) -> Chosen:
    """The version to start with: the one named, else the API server's, else (no API
    configuration, an error, a timeout) the newest supported with a warning. Never raises.
    `shared`: `connect()` returns a client its caller keeps using (not closed here)."""
    chosen = named(setting)
    if chosen is not None:
        return chosen
    try:
        chosen = _read(connect, shared)
    except KubeAccessError as exc:
        chosen = newest_instead(str(exc))
        log.warning({"msg": "the Kubernetes version could not be read; judging by the newest supported", **chosen.log_fields()})
    return chosen


def _read(connect: Connect, shared: bool) -> Chosen:
    api_client = connect()
    try:
        return read_version(api_client)
    finally:
        if not shared:
            api_client.close()


class FollowedVersion:
    """`serve`'s version: chosen at start, read again by `refresh()` (called when the lookups'
    watch connects or recovers) while the setting is `auto`; each listener hears a change of
    minor, or the first version read after a lenient start."""

    def __init__(self, setting: KubeVersion | str, connect: Connect, *, shared: bool = False) -> None:
        self.setting = setting
        self._connect = connect
        self._shared = shared
        self._lock = threading.Lock()
        self.listeners: list[Callable[[Chosen], None]] = []
        self.current = resolve(setting, connect, shared=shared)

    @classmethod
    def of(cls, setting: KubeVersion | str, kubeconfig: str = "") -> FollowedVersion:
        """`serve`'s: each read on a client of its own (see `connecting`)."""
        return cls(setting, connecting(kubeconfig))

    @classmethod
    def on(cls, setting: KubeVersion | str, api_client: client.ApiClient) -> FollowedVersion:
        """`audit`'s: reads on the client the command uses anyway (it does not fork)."""
        return cls(setting, lambda: api_client, shared=True)

    def refresh(self) -> None:
        """Read `/version` again (only for `auto`); a failed read keeps the current version."""
        if named(self.setting) is not None:
            return
        try:
            fresh = _read(self._connect, self._shared)
        except KubeAccessError as exc:
            log.warning({"msg": "the Kubernetes version could not be read again; keeping the current one", "error": str(exc), **self.current.log_fields()})
            return
        with self._lock:
            before, self.current = self.current, fresh
        if fresh.version != before.version or before.lenient:
            what = "kubernetes version changed" if fresh.version != before.version else "kubernetes version read"
            log.info({"msg": what, "was": str(before.version), **fresh.log_fields()})
            for listener in list(self.listeners):
                listener(fresh)
