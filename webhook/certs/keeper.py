"""Self-managed serving certificates (`serve --cert-management self`).

The webhook keeps its CA and serving certificate in one Secret (type `kubernetes.io/tls` with
`tls.crt`, `tls.key`, `ca.crt`, and `ca.key` so that any replica can renew), writes the files the
server reads into `certs_dir`, and keeps the CA in the `caBundle` of its own webhook
configurations. Every replica runs the same loop; they agree through the API server:

- the Secret is created only if absent; a replica that loses the race (409 AlreadyExists)
  re-reads it and uses the winner's certificate;
- renewals write the Secret with its `resourceVersion` (optimistic concurrency): a replica that
  loses (409 Conflict) re-reads and uses what the other one wrote;
- when the CA itself is renewed, the old CA stays in `ca-previous.crt` and in `caBundle` until it
  expires, so replicas still serving a certificate of the old CA keep working;
- the `caBundle` is patched before new files are written, so the API server trusts a new CA
  before any replica presents a certificate it signed;
- a Secret without our `servinggate.io/managed-by` annotation was supplied by someone else: it
  is read, never written.

The decisions (is it ours, does it need renewal, what goes into the bundle, what to patch) are
pure functions in rotation.py; this module does the I/O, through the official `kubernetes` client
built by webhook/kube.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..errors import OperatorError
from ..kube import ApiCall, KubeAccessError, describe_api_error, load_api_client
from ..kube.responses import json_body
from .files import write_file
from .issuing import service_sans
from .rotation import (
    CA_CRT,
    MANAGED_BY_KEY,
    MANAGED_BY_VALUE,
    TLS_CRT,
    TLS_KEY,
    bundle_patch,
    decide,
    decode,
    disk_files,
    encode,
    is_ours,
    issue,
    trusted_bundle,
)
from .settings import KeeperSettings, webhook_configuration

log = logging.getLogger("servinggate.selfcerts")

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
RENEW_INTERVAL = 60.0  # seconds between checks when all is well (also how soon a recreated
# webhook configuration gets its caBundle back: three small reads a minute per replica)
RETRY_INTERVAL = 30.0  # seconds between checks after a failure or a missing configuration
ATTEMPTS = 5


SELF = "--cert-management self"


class SelfCertsError(OperatorError):
    """The certificate could not be set up (a foreign Secret we may not fix, a folder we cannot
    write, endless conflicts); the message says what to fix."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def api_client_for(settings: KeeperSettings) -> client.ApiClient:
    """The shared loader with `--kubeconfig`, its failure worded for `serve`."""
    try:
        return load_api_client(settings.kube.kubeconfig)
    except KubeAccessError as exc:
        raise KubeAccessError(f"{SELF} needs access to the API server (in-cluster or a kubeconfig): {exc}") from None


class CertKeeper:
    """Reads, creates and renews the Secret, keeps `caBundle` current, writes the files."""

    def __init__(self, settings: KeeperSettings, api_client: client.ApiClient, *, now: Callable[[], dt.datetime] = _now) -> None:
        self.settings = settings
        self.host = str(getattr(api_client.configuration, "host", "") or "")
        self.core = client.CoreV1Api(api_client)
        self.admission = client.AdmissionregistrationV1Api(api_client)
        self.now = now
        self.name = settings.certs.cert_secret_name
        self.namespace = settings.certs.service_namespace
        self.hosts = service_sans(settings.certs.service_name, settings.certs.service_namespace)
        self.renew_before = dt.timedelta(days=settings.certs.renew_before_days)

    @contextmanager
    def _api(self, verb: str, resource: str, name: str = "", *, expected: tuple[int, ...] = ()) -> Iterator[None]:
        """Run one API request: the statuses in `expected` reach the caller as `ApiException`
        (they are part of the protocol: 404 absent, 409 lost a race); any other failure, and any
        transport error, becomes a `KubeAccessError` saying what was refused or unreachable."""
        namespace = self.namespace if resource == "secrets" else ""
        group = "" if resource == "secrets" else "admissionregistration.k8s.io"
        try:
            yield
        except ApiException as exc:
            if exc.status in expected:
                raise
            raise KubeAccessError(describe_api_error(exc, ApiCall(verb, resource, namespace, name, group), self.host)) from exc
        except HTTPError as exc:
            raise KubeAccessError(describe_api_error(exc, ApiCall(verb, resource, namespace, name, group), self.host)) from exc

    # Secret ---------------------------------------------------------------------------------

    def _read_secret(self) -> dict[str, Any] | None:
        try:
            with self._api("get", "secrets", self.name, expected=(404,)):
                resp = self.core.read_namespaced_secret(self.name, self.namespace, _preload_content=False, _request_timeout=10)
        except ApiException:  # 404: not created yet
            return None
        return dict(json_body(resp))

    def _create_secret(self, data: Mapping[str, bytes]) -> dict[str, Any]:
        body: Any = {  # the client serialises a dict as is; its annotation asks for a V1Secret
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/name": "servinggate", "app.kubernetes.io/component": "webhook"},
                "annotations": {MANAGED_BY_KEY: MANAGED_BY_VALUE},
            },
            "type": "kubernetes.io/tls",
            "data": encode(data),
        }
        with self._api("create", "secrets", expected=(409,)):
            resp = self.core.create_namespaced_secret(self.namespace, body, _preload_content=False, _request_timeout=10)
        return dict(json_body(resp))

    def _update_secret(self, secret: Mapping[str, Any], data: Mapping[str, bytes]) -> dict[str, Any]:
        old = secret.get("data") or {}
        new = encode(data)
        changes: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
        changes.update({k: None for k in old if k not in new})  # merge patch: null removes a key
        body = {"metadata": {"resourceVersion": secret["metadata"]["resourceVersion"]}, "data": changes}
        with self._api("patch", "secrets", self.name, expected=(409,)):
            resp = self.core.patch_namespaced_secret(self.name, self.namespace, body, _content_type=MERGE_PATCH, _preload_content=False, _request_timeout=10)
        return dict(json_body(resp))

    def ensure_secret(self) -> dict[str, Any]:
        """The Secret as it should be now: created if absent, renewed if due (when ours)."""
        for _ in range(ATTEMPTS):
            secret = self._read_secret()
            now = self.now()
            if secret is None:
                try:
                    created = self._create_secret(issue({}, "ca", self.hosts, now))
                    log.info("created Secret %s/%s with a new CA and serving certificate", self.namespace, self.name)
                    return created
                except ApiException:  # 409: another replica created it first: use theirs
                    log.info("Secret %s/%s was created by another replica; reading it", self.namespace, self.name)
                    continue
            if not is_ours(secret):
                data = decode(secret)
                missing = [k for k in (TLS_CRT, TLS_KEY) if not data.get(k)]
                if missing:
                    raise SelfCertsError(
                        f"Secret {self.namespace}/{self.name} was not created by ServingGate (no {MANAGED_BY_KEY} annotation) "
                        f"and lacks {', '.join(missing)}; it is never overwritten: fix it or delete it"
                    )
                return secret
            action = decide(decode(secret), self.hosts, now, self.renew_before)
            if action == "keep":
                return secret
            try:
                updated = self._update_secret(secret, issue(decode(secret), action, self.hosts, now))
                what = {"ca": "renewed the CA and serving certificate", "leaf": "renewed the serving certificate", "prune": "dropped the expired previous CA"}[
                    action
                ]
                log.info("%s in Secret %s/%s", what, self.namespace, self.name)
                return updated
            except ApiException:  # 409: another replica renewed first: use theirs
                continue
        raise SelfCertsError(f"Secret {self.namespace}/{self.name}: gave up after {ATTEMPTS} conflicting attempts")

    # caBundle ------------------------------------------------------------------------------

    def _configuration_api(self, kind: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """The read and patch calls of the API that holds configurations of `kind` (from the setting)."""
        if kind == "mutating":
            return self.admission.read_mutating_webhook_configuration, self.admission.patch_mutating_webhook_configuration
        return self.admission.read_validating_webhook_configuration, self.admission.patch_validating_webhook_configuration

    def inject_bundle(self, bundle: bytes) -> bool:
        """Put `bundle` into our configurations. True when all of them are current."""
        complete = True
        for entry in self.settings.certs.webhook_config_names:
            try:
                kind, name = webhook_configuration(entry)
            except ValueError as exc:  # the flag parser refuses these; settings built in code may not
                raise SelfCertsError(f"--webhook-config-names: {exc}") from None
            read, patch = self._configuration_api(kind)
            resource = f"{kind}webhookconfigurations"
            for _ in range(ATTEMPTS):
                try:
                    with self._api("get", resource, name, expected=(404,)):
                        configuration = json_body(read(name, _preload_content=False, _request_timeout=10))
                except ApiException:
                    log.warning("webhook configuration %s not found; caBundle not injected yet", name)
                    complete = False
                    break
                body = bundle_patch(configuration, bundle, self.settings.certs.service_name, self.settings.certs.service_namespace)
                if body is None:
                    break
                try:
                    with self._api("patch", resource, name, expected=(409,)):
                        patch(name, body, _content_type=STRATEGIC_MERGE_PATCH, _preload_content=False, _request_timeout=10)
                    log.info("caBundle of %s set (%d webhook entries)", name, len(body["webhooks"]))
                    break
                except ApiException:  # 409: the configuration changed since we read it; read again
                    pass
            else:
                complete = False
        return complete

    # all of it -------------------------------------------------------------------------------

    def sync(self) -> bool:
        """One pass: Secret, then caBundle, then files. True when everything is current."""
        secret = self.ensure_secret()
        data = decode(secret)
        now = self.now()
        complete = True
        if data.get(CA_CRT):
            complete = self.inject_bundle(trusted_bundle(data, now))
        else:
            log.warning("Secret %s/%s has no ca.crt: caBundle left as it is", self.namespace, self.name)
        certs_dir = Path(self.settings.listener.certs_dir)
        for filename, (content, mode) in disk_files(data, now).items():
            path = certs_dir / filename
            try:
                if path.read_bytes() == content:
                    continue
            except OSError:
                pass
            try:
                write_file(path, content, mode)
            except OSError as exc:
                raise SelfCertsError(f"--certs-dir {certs_dir}: cannot write {filename}: {exc.strerror or exc}") from None
        return complete


def bootstrap(settings: KeeperSettings, api_client: client.ApiClient | None = None, *, now: Callable[[], dt.datetime] = _now) -> CertKeeper:
    """Before the server starts: a certificate in `certs_dir` and the CA in `caBundle`.

    Anything that stops it here is for the operator to fix (RBAC, the API server's address, a
    foreign Secret, the folder): it arrives as an `OperatorError` whose one line starts with the
    setting that asked for all this, so `serve` exits 2 without a traceback."""
    keeper = CertKeeper(settings, api_client if api_client is not None else api_client_for(settings), now=now)
    try:
        keeper.sync()
    except OperatorError as exc:
        message = str(exc)
        if message.startswith("--"):
            raise
        raise type(exc)(f"{SELF}: {message}") from exc
    return keeper


def start_renewer(
    settings: KeeperSettings,
    api_client: client.ApiClient | None = None,
    *,
    interval: float = RENEW_INTERVAL,
    retry_interval: float = RETRY_INTERVAL,
    stop: threading.Event | None = None,
    now: Callable[[], dt.datetime] = _now,
) -> threading.Thread:
    """A daemon thread that runs `sync` every `interval` seconds (sooner after a failure)."""
    keeper = CertKeeper(settings, api_client if api_client is not None else api_client_for(settings), now=now)
    stop = stop or threading.Event()

    def loop() -> None:
        wait = interval
        while not stop.wait(wait):
            try:
                wait = interval if keeper.sync() else retry_interval
            except OperatorError as exc:  # RBAC or the API server: the one line says it all
                log.warning("certificate check failed (%s); retrying in %.0f s", exc, retry_interval)
                wait = retry_interval
            except Exception:  # keep serving the current certificate; try again soon
                log.exception("certificate check failed; retrying in %.0f s", retry_interval)
                wait = retry_interval

    thread = threading.Thread(target=loop, name="servinggate-cert-renewer", daemon=True)
    thread.start()
    return thread
