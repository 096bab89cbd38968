"""Certificates for the webhook's HTTPS listener, from issuing them to keeping them current.

Split by what each part needs, so that the offline parts never pull in the Kubernetes client:

- `issuing`: create a CA and serving certificates signed by it (bytes in, bytes out);
- `files`: write them atomically, and the development pair `serve` creates when none exists;
- `rotation`: pure decisions of `--cert-management self` (renew what, trust which CAs, patch what);
- `keeper`: the in-cluster keeper that applies those decisions to a Secret and to the `caBundle`
  of our webhook configurations (the only part that talks to the API server);
- `cli`: `python -m webhook certs`.

The listener's side, which loads the files into a TLS context and reloads them when they change,
is webhook/certs/source.py: it serves whatever files are there, however they were made.
"""
