"""A new pod's spec judged as one Kubernetes minor's API server would judge it, for the tests that
replay upstream's behaviour minor by minor (tests/podvalidation/test_versions.py,
test_restart_resize.py)."""

from __future__ import annotations

import copy
from typing import Any

from webhook.admission.fields import FieldPath
from webhook.kubeversion import KubeVersion
from webhook.podvalidation.defaults import prepare_spec
from webhook.podvalidation.options import options_for
from webhook.podvalidation.podspec import pod_spec_errors

SPEC = FieldPath.of("spec")


def judge(spec: dict[str, Any], minor: int) -> tuple[list[tuple[str, str, str]], list[str]]:
    """What a `minor` API server says of a new pod with this spec: its errors (kind, field, body)
    and the fields it dropped before judging (paths under the spec)."""
    spec = copy.deepcopy(spec)
    opts = options_for(KubeVersion(1, minor))
    dropped = prepare_spec(spec, opts)
    errs = pod_spec_errors(spec, SPEC, is_pod=True, opts=opts)
    return [(e.kind, e.field, f"{e.field}: {e.body()}") for e in errs], [".".join(map(str, d.path)) for d in dropped]


def pod(*containers: dict[str, Any], inits: tuple[dict[str, Any], ...] = (), **spec: Any) -> dict[str, Any]:
    """A pod spec: `main` and any further containers (fields given), init containers `init-<i>`."""
    out: dict[str, Any] = {"containers": [{"name": "main", "image": "vllm:1", **c} for c in containers or ({},)], **spec}
    if inits:
        out["initContainers"] = [{"name": f"init-{i}", "image": "busybox:1", **c} for i, c in enumerate(inits)]
    return out
