"""`python -m webhook audit`: the objects already in a cluster, judged by today's rules.

`kinds` (what is listed: the registry's validating rules on CREATE), `listing` (paged lists from
the API server, through `kube.reflector`), `auditing` (one run: the projections the rules look up, then every kind page by
page), `judging` (one object, as the webhook would judge its CREATE; pure), `output` (text, json,
junit, sarif), `reports` (the PolicyReports of a run; pure) and `writing` (sending them),
`metrics`, `settings`, and `cli` (once, or `--every` with leader election). Only `listing` and
`writing` import the Kubernetes client.
"""

from .cli import EXIT_DENIED, EXIT_OK, EXIT_UNUSABLE, main

__all__ = ["EXIT_DENIED", "EXIT_OK", "EXIT_UNUSABLE", "main"]
