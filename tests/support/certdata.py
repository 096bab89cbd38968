"""What the certificate tests share: the namespace and names the keeper works with, a fixed
clock origin, and a webhook entry that belongs to someone else (never to be touched)."""

from __future__ import annotations

import datetime as dt

from webhook.certs.issuing import service_sans

NS, SECRET = "servinggate-system", "servinggate-webhook-tls"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
HOSTS = service_sans("servinggate-webhook", NS)
FOREIGN = {
    "name": "other.example.com",
    "admissionReviewVersions": ["v1"],
    "clientConfig": {"service": {"name": "other", "namespace": "elsewhere", "path": "/x", "port": 443}, "caBundle": "b3RoZXI="},
    "sideEffects": "None",
}
