"""The API server's Pod validation (kube-apiserver 1.28 to 1.37), ported to Python.

Kubernetes validates a Pod when it is created, never the pod template inside a custom resource;
a ModelServing whose template the API server would refuse is accepted, and its pods never
appear. This package lets the webhook and `check` refuse it up front, with the API server's own
messages. Validate prepared objects, as the API server does (the fields the minor does not know
dropped, the v1 defaults applied, the fields whose gate is off dropped; `drops.py`), with the
options of that minor (`options.options_for`, 1.28 when none is named):

    opts = options_for(KubeVersion(1, 30))
    errors = validate_pod_create(apply_pod_defaults(pod, opts), opts=opts)
    errors = validate_pod_template_spec(apply_template_defaults(t, opts), FieldPath.of("spec", "template"), opts=opts)

What differs between minors lives in one table, `versions.py`.

It sits below `policies` and imports only `admission` (field errors), `quantity`, `podrequests`
(the containers' aggregate requests, as the scheduler counts them) and `names` (apimachinery's
name formats).
"""

from .defaults import apply_pod_defaults, apply_pod_spec_defaults, apply_template_defaults, default_pod_spec
from .podspec import validate_pod_create, validate_pod_spec, validate_pod_template_spec

__all__ = [
    "apply_pod_defaults",
    "apply_pod_spec_defaults",
    "apply_template_defaults",
    "default_pod_spec",
    "validate_pod_create",
    "validate_pod_spec",
    "validate_pod_template_spec",
]
