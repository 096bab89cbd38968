"""The kinds `audit` lists: those a validating rule judges on CREATE, read from the rule registry.

A new rule on a new kind is audited (and, through tests/deploy/test_rbac.py, needs the auditor's
RBAC) without a change here. Rules only for UPDATE (an immutable field) or a subresource
(`scale`) judge a change, not an object, and have nothing to say about what already exists.
"""

from __future__ import annotations

from ..admission.review import GroupVersionResource
from ..policies import REGISTRY, Registry

# A listed resource is named as an admission request names it: group, version, plural.
AuditedKind = GroupVersionResource


def audited_kinds(registry: Registry = REGISTRY) -> tuple[AuditedKind, ...]:
    """Each resource once, in registration order, read in the newest version its rules are
    registered for (autoscaling/v2 for HorizontalPodAutoscalers)."""
    found: dict[tuple[str, str], AuditedKind] = {}
    for rule in registry.rules("validate"):
        t = rule.target
        if t.subresource or "CREATE" not in t.operations or (t.group, t.resource) in found:
            continue
        found[(t.group, t.resource)] = AuditedKind(t.group, t.versions[-1], t.resource)
    return tuple(found.values())
