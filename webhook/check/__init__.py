"""`python -m webhook check`: the API server's write path and the webhook's rules, offline.

`loading` (inputs to objects with line numbers), `catalog` (the CRDs given: cluster, cache, --crds; built-in
kinds), `structural` (decode, defaults, schema validation), `celrules` (x-kubernetes-validations),
`builtin` (built-in kinds), `pipeline` (the steps in the API server's order), `templates` (pods
of workloads), `reporting` (text, json, junit, sarif, github), `cli` (arguments, exit codes).
"""

from .cli import EXIT_DENIED, EXIT_OK, EXIT_UNUSABLE, main, run

__all__ = ["EXIT_DENIED", "EXIT_OK", "EXIT_UNUSABLE", "main", "run"]
