"""The kubelet's probes, one answer each on both ports that serve them: the admission port (a
worker answers) and the master's plain-HTTP metrics port (for clusters whose admission port asks
every client for a certificate, which the kubelet does not present).

`/healthz`: the process answers. `/readyz`: ready (200) exactly while the serving certificate is
loaded and not expired, else 503; nothing else ever makes the webhook unready, since with
`failurePolicy: Fail` an unready webhook refuses every write in its scope. Its `detail` starts
with the certificate; a worker adds what only it knows (its lookups' state, the Kubernetes
version reviews are judged by), which the master does not have.
"""

from __future__ import annotations

from typing import Any

import orjson

from .answer import Answer

HEALTHY = Answer(200, b'{"status":"ok"}')


def readiness(certificates: Any, *details: str) -> Answer:
    """`/readyz` on either port (`certificates`: a certs.source.CertificateSource); `details`
    are shown after the certificate's state and never decide it (empty ones are left out)."""
    ok, detail = certificates.ready()
    body = {"status": "ok" if ok else "not ready", "detail": "; ".join([detail, *filter(None, details)])}
    return Answer(200 if ok else 503, orjson.dumps(body))
