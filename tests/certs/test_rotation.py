"""Rotation decisions (webhook/certs/rotation.py): pure functions of bytes, dicts and a clock, so
certificates are walked through years of their life without an API server."""

from __future__ import annotations

import copy
import datetime as dt

from cryptography import x509
from support.certdata import FOREIGN, HOSTS, NS, T0

from webhook.certs import rotation
from webhook.certs.issuing import CA_DAYS, SERVING_DAYS


def managed_secret_data(now: dt.datetime) -> dict[str, bytes]:
    return rotation.issue({}, "ca", HOSTS, now)


def test_decide():
    data = managed_secret_data(T0)
    window = dt.timedelta(days=30)
    assert rotation.decide(data, HOSTS, T0, window) == "keep"
    assert rotation.decide(data, HOSTS, T0 + dt.timedelta(days=SERVING_DAYS - 31), window) == "keep"
    assert rotation.decide(data, HOSTS, T0 + dt.timedelta(days=SERVING_DAYS - 29), window) == "leaf"
    assert rotation.decide(data, HOSTS, T0 + dt.timedelta(days=CA_DAYS - 29), window) == "ca"
    assert rotation.decide(data, HOSTS + ["renamed.servinggate-system.svc"], T0, window) == "leaf"
    assert rotation.decide({k: v for k, v in data.items() if k != "ca.key"}, HOSTS, T0, window) == "ca"
    other = managed_secret_data(T0)
    assert rotation.decide({**data, "tls.crt": other["tls.crt"], "tls.key": other["tls.key"]}, HOSTS, T0, window) == "leaf"


def test_bundle_patch_touches_only_our_entries_and_only_when_needed(committed_configurations):
    config = copy.deepcopy(committed_configurations[0])
    config["metadata"]["resourceVersion"] = "7"
    config["webhooks"].append(copy.deepcopy(FOREIGN))
    patch = rotation.bundle_patch(config, b"CA", "servinggate-webhook", NS)
    assert patch["metadata"] == {"resourceVersion": "7"}
    ours = [h["name"] for h in config["webhooks"] if h["name"] != FOREIGN["name"]]
    assert [e["name"] for e in patch["webhooks"]] == ours
    assert all(e == {"name": e["name"], "clientConfig": {"caBundle": "Q0E="}} for e in patch["webhooks"])
    for hook in config["webhooks"][:-1]:
        hook["clientConfig"]["caBundle"] = "Q0E="
    assert rotation.bundle_patch(config, b"CA", "servinggate-webhook", NS) is None


def test_decide_prunes_an_expired_previous_ca():
    old = managed_secret_data(T0)
    rolled = rotation.issue(old, "ca", HOSTS, T0 + dt.timedelta(days=100))
    window = dt.timedelta(days=30)
    assert rotation.decide(rolled, HOSTS, T0 + dt.timedelta(days=101), window) == "keep"
    old_end = x509.load_pem_x509_certificate(old["ca.crt"]).not_valid_after_utc
    data = dict(rolled)
    # Renewed serving certificate so that only the previous CA's expiry is due.
    data.update({k: v for k, v in rotation.issue(rolled, "leaf", HOSTS, old_end).items() if k.startswith("tls.")})
    assert rotation.decide(data, HOSTS, old_end + dt.timedelta(days=1), window) == "prune"
    assert "ca-previous.crt" not in rotation.issue(data, "prune", HOSTS, old_end + dt.timedelta(days=1))
