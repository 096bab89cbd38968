"""The API server's Pod validation (kube-apiserver 1.28), ported to Python.

Kubernetes validates a Pod when it is created, never the pod template inside a custom resource;
a ModelServing whose template the API server would refuse is accepted, and its pods never
appear. This package lets the webhook and `check` refuse it up front, with the API server's own
messages. Validate defaulted objects, as the API server does:

    errors = validate_pod_create(apply_pod_defaults(pod))
    errors = validate_pod_template_spec(apply_template_defaults(t), FieldPath.of("spec", "template"))

It sits below `policies` and imports only `admission` (field errors) and `quantity`.
"""

from .defaults import apply_pod_defaults, apply_pod_spec_defaults, apply_template_defaults
from .podspec import validate_pod_create, validate_pod_spec, validate_pod_template_spec

__all__ = [
    "apply_pod_defaults", "apply_pod_spec_defaults", "apply_template_defaults",
    "validate_pod_create", "validate_pod_spec", "validate_pod_template_spec",
]
