"""One existing object, judged as the webhook would judge its CREATE today: the validating rules
only (mutators change new objects; what they would have changed is not a finding), each under
its configured action, with lookups answered from the auditor's projections.

Pure: no API access, so the tests judge plain dicts and the auditor and the webhook cannot give
two answers for one object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..admission.decision import Decision
from ..admission.review import make_request
from ..policies import REGISTRY, Context, engine
from .kinds import AuditedKind

Result = Literal["fail", "warn"]  # a PolicyReport result: fail for deny-action findings, else warn


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    action: str  # deny, warn or audit: the rule's action, as configured
    result: Result
    field: str | None  # the field path, when the finding is about one
    message: str  # without the path, as the API server shows a cause


@dataclass(slots=True)
class Judged:
    """An object that has findings, named the way a PolicyReport's `resources[]` names it, and
    the resource it was listed as."""

    resource: str
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        """Whether the webhook would let it be created today."""
        return not any(f.result == "fail" for f in self.findings)

    def display(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


def findings_of(decision: Decision, actions: dict[str, str] | Any) -> list[Finding]:
    """The decision's findings: errors and a refusal fail; a rule set to `warn` or `audit` warns,
    and so does a rule's own warning (a lookup it could not make) whatever its action."""
    found = [Finding(e.rule, "deny", "fail", e.error.field, e.error.body()) for e in decision.errors]
    if decision.refusal is not None:
        found.append(Finding(decision.refusal.rule, "deny", "fail", None, decision.refusal.text))
    if decision.crash is not None:
        found.append(Finding(decision.crash.rule, "deny", "fail", None, "the rule raised an exception"))
    for notes in (decision.warnings, decision.audit):
        for note in notes:
            action = actions.get(note.rule, "deny")
            if note.error is not None:
                found.append(Finding(note.rule, action, "warn", note.error.field, note.error.body()))
            else:
                found.append(Finding(note.rule, action, "warn", None, note.text))
    return found


def judge(obj: dict[str, Any], kind: AuditedKind, ctx: Context) -> Judged | None:
    """The object's findings, or None when it has none (most objects: nothing is kept for them)."""
    req = make_request(obj, operation="CREATE", resource=(kind.group, kind.version, kind.resource), uid="audit")
    decision = engine.validate(req, ctx, REGISTRY)
    if decision.allowed and not decision.warnings and not decision.audit:
        return None
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return Judged(
        kind.resource,
        str(obj.get("apiVersion") or f"{kind.group}/{kind.version}"),
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(meta.get("uid") or ""),
        findings_of(decision, ctx.actions),
    )
