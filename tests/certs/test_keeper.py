"""The in-cluster certificate keeper (webhook/certs/keeper.py) through the official client against
the fake API server: the Secret, the caBundle, renewals, races between replicas, and what the
operator sees when the API refuses. The pure decisions are tested in test_rotation.py."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import threading
from pathlib import Path

import pytest
from cryptography import x509
from kubernetes import client
from support import wait_for
from support.certdata import FOREIGN, HOSTS, NS, SECRET, T0

from webhook.certs import keeper, rotation
from webhook.certs.issuing import SERVING_DAYS, generate_ca, generate_serving
from webhook.config import compose
from webhook.errors import OperatorError
from webhook.kube import KubeAccessError
from webhook.servesettings import ServeSettings


def settings(certs_dir: Path) -> ServeSettings:
    return compose(ServeSettings, certs_dir=certs_dir, cert_management="self")


def certs_in(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem)


def bundles(api, kind: str, name: str) -> dict[str, bytes]:
    return {h["name"]: base64.b64decode(h["clientConfig"].get("caBundle", "")) for h in api.hook(kind, name)["webhooks"]}


@pytest.fixture
def cluster(fake_api, committed_configurations):
    """The fake API with our two webhook configurations installed (as `kubectl apply -k` does),
    plus a foreign entry in the validating one that must never be touched."""
    for doc in committed_configurations:
        doc = copy.deepcopy(doc)
        if doc["kind"] == "ValidatingWebhookConfiguration":
            doc["webhooks"].append(copy.deepcopy(FOREIGN))
        fake_api.put_hook(doc)
    return fake_api


def serving_matches(certs_dir: Path) -> tuple[x509.Certificate, list[x509.Certificate]]:
    leaf = x509.load_pem_x509_certificate((certs_dir / "tls.crt").read_bytes())
    cas = certs_in((certs_dir / "ca.crt").read_bytes())
    assert any(_issued_by(leaf, ca) for ca in cas)
    return leaf, cas


def _issued_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    return rotation.signed_by(leaf, ca)


def assert_our_bundles(api, expected: bytes) -> None:
    for kind, name in (("validating", "servinggate-validating"), ("mutating", "servinggate-mutating")):
        for hook, bundle in bundles(api, kind, name).items():
            if hook == FOREIGN["name"]:
                assert bundle == b"other"
            else:
                assert bundle == expected, hook


def managed_secret_data(now: dt.datetime) -> dict[str, bytes]:
    return rotation.issue({}, "ca", HOSTS, now)


def put_managed(api, data: dict[str, bytes]) -> dict:
    return api.put_secret(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": NS, "annotations": {rotation.MANAGED_BY_KEY: rotation.MANAGED_BY_VALUE}},
            "data": rotation.encode(data),
        }
    )


# ---- create ------------------------------------------------------------------------------------


def test_bootstrap_creates_the_secret_writes_files_and_injects_the_ca(cluster, api_client, tmp_path):
    certs = tmp_path / "certs"
    keeper.bootstrap(settings(certs), api_client, now=lambda: T0)

    secret = cluster.secret(NS, SECRET)
    assert secret["type"] == "kubernetes.io/tls"
    assert rotation.is_ours(secret)
    data = rotation.decode(secret)
    assert {"tls.crt", "tls.key", "ca.crt", "ca.key"} <= set(data)
    assert (certs / "tls.crt").read_bytes() == data["tls.crt"]
    assert (certs / "tls.key").read_bytes() == data["tls.key"]
    assert (certs / "tls.key").stat().st_mode & 0o777 == 0o600
    assert not (certs / "ca.key").exists()
    leaf, cas = serving_matches(certs)
    assert rotation.covers(leaf, HOSTS)
    assert [c.serial_number for c in cas] == [x509.load_pem_x509_certificate(data["ca.crt"]).serial_number]
    assert_our_bundles(cluster, data["ca.crt"])
    assert len(cluster.calls("POST", "/secrets$")) == 1


def test_a_second_start_reuses_the_secret_and_patches_nothing(cluster, api_client, tmp_path):
    keeper.bootstrap(settings(tmp_path / "a"), api_client, now=lambda: T0)
    before = len(cluster.requests)
    keeper.bootstrap(settings(tmp_path / "b"), api_client, now=lambda: T0 + dt.timedelta(days=1))
    later = cluster.requests[before:]
    assert [c.method for c in later] == ["GET", "GET", "GET"]
    assert (tmp_path / "a" / "tls.crt").read_bytes() == (tmp_path / "b" / "tls.crt").read_bytes()


# ---- the AlreadyExists race ----------------------------------------------------------------------


def test_losing_the_create_race_uses_the_winners_certificate(cluster, api_client, tmp_path):
    winner = managed_secret_data(T0)

    def another_replica_creates_first(api):
        put_managed(api, winner)
        return None  # then our POST proceeds and meets AlreadyExists

    cluster.before.append(("POST", "/secrets$", another_replica_creates_first))
    keeper.bootstrap(settings(tmp_path / "certs"), api_client, now=lambda: T0)

    assert [c.status for c in cluster.calls("POST", "/secrets$")] == [409]
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == winner["tls.crt"]
    assert rotation.decode(cluster.secret(NS, SECRET)) == winner
    assert_our_bundles(cluster, winner["ca.crt"])


def test_replicas_starting_together_end_with_one_certificate(cluster, fake_api, tmp_path):
    n = 4
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def start(i: int) -> None:
        api = client.ApiClient(fake_api.client_configuration)
        try:
            barrier.wait()
            keeper.bootstrap(settings(tmp_path / f"r{i}"), api, now=lambda: T0)
        except BaseException as exc:
            errors.append(exc)
        finally:
            api.close()

    threads = [threading.Thread(target=start, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    created = [c for c in cluster.calls("POST", "/secrets$") if c.status == 201]
    assert len(created) == 1
    stored = rotation.decode(cluster.secret(NS, SECRET))
    for i in range(n):
        assert (tmp_path / f"r{i}" / "tls.crt").read_bytes() == stored["tls.crt"]
    assert_our_bundles(cluster, stored["ca.crt"])


# ---- rotation ------------------------------------------------------------------------------------


def test_the_serving_certificate_is_renewed_before_expiry_under_the_same_ca(cluster, api_client, tmp_path):
    certs = tmp_path / "certs"
    keeper.bootstrap(settings(certs), api_client, now=lambda: T0)
    first = rotation.decode(cluster.secret(NS, SECRET))

    # 29 days before the 365-day serving certificate ends: inside the 30-day window.
    later = T0 + dt.timedelta(days=SERVING_DAYS - 29)
    hook_patches = len(cluster.calls("PATCH", "webhookconfigurations"))
    keeper.bootstrap(settings(certs), api_client, now=lambda: later)

    second = rotation.decode(cluster.secret(NS, SECRET))
    assert second["ca.crt"] == first["ca.crt"] and second["ca.key"] == first["ca.key"]
    assert second["tls.crt"] != first["tls.crt"]
    leaf, _ = serving_matches(certs)
    assert leaf.not_valid_after_utc > later + dt.timedelta(days=300)
    assert (certs / "tls.crt").read_bytes() == second["tls.crt"]
    assert len(cluster.calls("PATCH", "webhookconfigurations")) == hook_patches  # same CA: bundle untouched
    assert [c.status for c in cluster.calls("PATCH", "/secrets/")] == [200]


def test_a_renewal_that_loses_to_another_replica_keeps_theirs(cluster, api_client, tmp_path):
    certs = tmp_path / "certs"
    keeper.bootstrap(settings(certs), api_client, now=lambda: T0)
    later = T0 + dt.timedelta(days=SERVING_DAYS - 10)
    current = rotation.decode(cluster.secret(NS, SECRET))
    theirs = rotation.issue(current, "leaf", HOSTS, later)

    def another_replica_renews_first(api):
        secret = api.secret(NS, SECRET)
        secret["data"] = rotation.encode(theirs)
        api.put_secret(secret)  # new resourceVersion: our patch is now stale
        return None

    cluster.before.append(("PATCH", "/secrets/", another_replica_renews_first))
    keeper.bootstrap(settings(certs), api_client, now=lambda: later)

    assert [c.status for c in cluster.calls("PATCH", "/secrets/")] == [409]
    assert rotation.decode(cluster.secret(NS, SECRET)) == theirs
    assert (certs / "tls.crt").read_bytes() == theirs["tls.crt"]


def test_a_ca_rollover_keeps_both_cas_in_the_bundle_until_the_old_one_expires(cluster, api_client, tmp_path):
    certs = tmp_path / "certs"
    keeper.bootstrap(settings(certs), api_client, now=lambda: T0)
    old = rotation.decode(cluster.secret(NS, SECRET))
    old_ca = x509.load_pem_x509_certificate(old["ca.crt"])

    # Keep the serving certificate fresh until the CA itself gets close to its end.
    near_ca_end = old_ca.not_valid_after_utc - dt.timedelta(days=20)
    keeper.bootstrap(settings(certs), api_client, now=lambda: near_ca_end)

    new = rotation.decode(cluster.secret(NS, SECRET))
    new_ca = x509.load_pem_x509_certificate(new["ca.crt"])
    assert new_ca.serial_number != old_ca.serial_number
    assert [c.serial_number for c in certs_in(new["ca-previous.crt"])] == [old_ca.serial_number]
    leaf = x509.load_pem_x509_certificate(new["tls.crt"])
    assert rotation.signed_by(leaf, new_ca)

    bundle = rotation.trusted_bundle(new, near_ca_end)
    assert [c.serial_number for c in certs_in(bundle)] == [new_ca.serial_number, old_ca.serial_number]
    assert_our_bundles(cluster, bundle)
    # A replica that still serves the old certificate is trusted by the same bundle.
    old_leaf = x509.load_pem_x509_certificate(old["tls.crt"])
    assert any(rotation.signed_by(old_leaf, ca) for ca in certs_in(bundle))
    assert [c.serial_number for c in certs_in((certs / "ca.crt").read_bytes())] == [new_ca.serial_number, old_ca.serial_number]

    # Once the old CA has expired it leaves the Secret and the bundle.
    after = old_ca.not_valid_after_utc + dt.timedelta(days=1)
    keeper.bootstrap(settings(certs), api_client, now=lambda: after)
    final = rotation.decode(cluster.secret(NS, SECRET))
    assert "ca-previous.crt" not in final
    assert final["ca.crt"] == new["ca.crt"]
    assert_our_bundles(cluster, new["ca.crt"])


def test_the_renewer_thread_rotates_files_without_a_restart(cluster, api_client, tmp_path):
    certs = tmp_path / "certs"
    keeper.bootstrap(settings(certs), api_client, now=lambda: T0)
    first = (certs / "tls.crt").read_bytes()
    clock = {"now": T0 + dt.timedelta(days=SERVING_DAYS - 5)}
    stop = threading.Event()
    renewed = threading.Event()

    def now() -> dt.datetime:
        return clock["now"]

    original = keeper.CertKeeper.sync

    def observed(self):
        done = original(self)
        if (certs / "tls.crt").read_bytes() != first:
            renewed.set()
        return done

    keeper.CertKeeper.sync = observed  # type: ignore[method-assign]
    try:
        thread = keeper.start_renewer(settings(certs), api_client, interval=0.01, retry_interval=0.01, stop=stop, now=now)
        assert thread.daemon
        assert renewed.wait(30)
    finally:
        stop.set()
        keeper.CertKeeper.sync = original  # type: ignore[method-assign]
    thread.join(30)
    assert not thread.is_alive()
    assert (certs / "tls.crt").read_bytes() == rotation.decode(cluster.secret(NS, SECRET))["tls.crt"]


def test_the_bundle_is_injected_once_the_configuration_appears(fake_api, api_client, tmp_path, committed_configurations):
    kept = keeper.bootstrap(settings(tmp_path / "certs"), api_client, now=lambda: T0)
    assert not fake_api.hooks
    for doc in committed_configurations:
        fake_api.put_hook(doc)
    assert kept.sync() is True
    assert_our_bundles(fake_api, rotation.decode(fake_api.secret(NS, SECRET))["ca.crt"])


# ---- a Secret the user supplies -----------------------------------------------------------------


def test_a_manual_secret_is_never_overwritten_even_when_expiring(cluster, api_client, tmp_path):
    ca = generate_ca(now=T0 - dt.timedelta(days=3000))
    leaf = generate_serving(ca, HOSTS, days=30, now=T0 - dt.timedelta(days=25))  # 5 days left
    user = {"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem, "ca.crt": ca.cert_pem}
    cluster.put_secret(
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": SECRET, "namespace": NS}, "data": rotation.encode(user)}
    )
    certs = tmp_path / "certs"
    keeper.bootstrap(settings(certs), api_client, now=lambda: T0)

    assert not cluster.calls("POST", "/secrets") and not cluster.calls("PATCH", "/secrets")
    assert rotation.decode(cluster.secret(NS, SECRET)) == user
    assert (certs / "tls.crt").read_bytes() == leaf.cert_pem
    assert (certs / "ca.crt").read_bytes() == ca.cert_pem
    assert_our_bundles(cluster, ca.cert_pem)


def test_a_manual_secret_without_a_key_stops_the_start_and_stays_as_it_is(cluster, api_client, tmp_path):
    ca = generate_ca(now=T0)
    cluster.put_secret({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": NS}, "data": rotation.encode({"ca.crt": ca.cert_pem})})
    with pytest.raises(keeper.SelfCertsError, match="never overwritten"):
        keeper.bootstrap(settings(tmp_path / "certs"), api_client, now=lambda: T0)
    assert not cluster.calls("POST", "/secrets") and not cluster.calls("PATCH", "/secrets")


# ---- what the operator sees when the API refuses ------------------------------------------------


@pytest.mark.parametrize(
    "method, path, needle",
    [
        ("GET", r"/secrets/", "cannot get secrets 'servinggate-webhook-tls' in namespace servinggate-system"),
        ("POST", r"/secrets$", "cannot create secrets in namespace servinggate-system"),
        ("PATCH", r"validatingwebhookconfigurations/", "cannot patch validatingwebhookconfigurations.admissionregistration.k8s.io 'servinggate-validating'"),
    ],
)
def test_a_refused_request_stops_the_bootstrap_with_one_line(cluster, api_client, tmp_path, method, path, needle):
    cluster.fail(method, path, 403, "Forbidden", "forbidden")
    with pytest.raises(KubeAccessError) as info:
        keeper.bootstrap(settings(tmp_path / "certs"), api_client, now=lambda: T0)
    assert isinstance(info.value, OperatorError)
    assert str(info.value).startswith("--cert-management self: forbidden: ")
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_the_renewer_survives_a_refused_request(cluster, api_client, tmp_path):
    keeper.bootstrap(settings(tmp_path / "certs"), api_client, now=lambda: T0)
    cluster.fail("GET", r"/secrets/", 403, "Forbidden", "forbidden", times=2)
    stop = threading.Event()
    thread = keeper.start_renewer(settings(tmp_path / "certs"), api_client, interval=0.01, retry_interval=0.01, stop=stop, now=lambda: T0)
    try:
        assert wait_for(lambda: len(cluster.calls("GET", "/secrets/")) >= 4, what="reads after the refusals")
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(30)


# ---- which API holds a configuration: its kind is part of the setting ---------------------------


def test_a_configuration_named_without_its_kind_gets_its_bundle_through_the_right_api(fake_api, api_client, tmp_path, committed_configurations):
    for doc in committed_configurations:
        doc = copy.deepcopy(doc)
        if doc["kind"] == "MutatingWebhookConfiguration":
            doc["metadata"]["name"] = "gate-admission"
        fake_api.put_hook(doc)
    named = compose(
        ServeSettings,
        certs_dir=tmp_path / "certs",
        cert_management="self",
        webhook_config_names=("validating/servinggate-validating", "mutating/gate-admission"),
    )
    kept = keeper.bootstrap(named, api_client, now=lambda: T0)

    ca = rotation.decode(fake_api.secret(NS, SECRET))["ca.crt"]
    assert set(bundles(fake_api, "mutating", "gate-admission").values()) == {ca}
    assert set(bundles(fake_api, "validating", "servinggate-validating").values()) == {ca}
    assert [c.status for c in fake_api.calls("PATCH", "/mutatingwebhookconfigurations/gate-admission$")] == [200]
    assert not fake_api.calls("GET", "/validatingwebhookconfigurations/gate-admission")
    assert kept.sync() is True


@pytest.mark.parametrize("raw", ["servinggate-mutating", "admission/servinggate-mutating", "mutating/", "validating/a,b"])
def test_a_configuration_without_a_valid_kind_is_refused_at_start(raw):
    from webhook.config import ConfigError, load

    with pytest.raises(ConfigError) as info:
        load(ServeSettings, {"webhook_config_names": raw}, {})
    assert str(info.value).startswith("--webhook-config-names: invalid value")
    assert "validating/NAME or mutating/NAME" in str(info.value)


def test_the_default_names_both_committed_configurations_with_their_kinds(committed_configurations):
    kinds = {"ValidatingWebhookConfiguration": "validating", "MutatingWebhookConfiguration": "mutating"}
    assert set(ServeSettings().certs.webhook_config_names) == {f"{kinds[d['kind']]}/{d['metadata']['name']}" for d in committed_configurations}
