"""What rules and the engine return: typed verdicts and decisions, never wire JSON.

A rule returns a `Verdict` (field errors, warnings, a refusal). The engine collects the verdicts
of every rule that ran into a `Decision`, each finding tagged with the rule that made it;
`outcome.status_of` says what failure it answers with (for the server and `check` alike) and
`responses.review_response` writes the AdmissionReview response.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .fields import FieldError


@dataclass(slots=True)
class Verdict:
    """What one validating rule found: field errors (422), a refusal not tied to a field (403), warnings."""

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refusal: str | None = None

    @property
    def allowed(self) -> bool:
        return not self.errors and self.refusal is None


def allowed(*warnings: str) -> Verdict:
    return Verdict(warnings=list(warnings))


def denied(*errors: FieldError, warnings: list[str] | None = None) -> Verdict:
    return Verdict(errors=list(errors), warnings=list(warnings or []))


def refused(message: str, *, warnings: list[str] | None = None) -> Verdict:
    return Verdict(refusal=message, warnings=list(warnings or []))


@dataclass(slots=True)
class Changes:
    """What one mutating rule did: `made` says what it changed (recorded in the review's audit
    annotations and log line, not shown to the client), `warnings` are problems the client
    should fix (shown by kubectl)."""

    made: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """How one rule judged one request, under its enforcement action (for metrics and logs)."""

    rule: str
    action: str  # deny | warn | audit (validating), on (mutating)
    passed: bool


@dataclass(frozen=True, slots=True)
class RuleError:
    """A field error, tagged with the rule that found it."""

    rule: str
    error: FieldError


@dataclass(frozen=True, slots=True)
class RuleNote:
    """A warning or a refusal message, tagged with the rule that gave it; `error` keeps the field
    error behind a finding softened to a warning or an audit note (its path, for `check`)."""

    rule: str
    text: str
    error: FieldError | None = None


@dataclass(slots=True)
class Decision:
    """The engine's answer to one request at one endpoint.

    `crash` is set when a rule raised: the request is denied with code 500 and the rule named,
    because a rule that cannot decide must not let a change through unchecked.
    """

    action: Literal["validate", "mutate"]
    rules: tuple[str, ...] = ()  # the rules that ran, in order
    errors: list[RuleError] = field(default_factory=list)
    warnings: list[RuleNote] = field(default_factory=list)
    refusal: RuleNote | None = None
    edited: dict[str, Any] | None = None  # mutate: the object as the mutators left it
    patch: list[dict[str, Any]] = field(default_factory=list)  # mutate: RFC 6902, original -> edited
    crash: RuleNote | None = None
    audit: list[RuleNote] = field(default_factory=list)  # findings of rules in `audit` mode
    changes: list[RuleNote] = field(default_factory=list)  # what mutators changed
    verdicts: list[RuleVerdict] = field(default_factory=list)
    # a lookup would have waited where the review may not (Context.may_wait): no answer, the
    # review runs again where it may wait
    deferred: bool = False

    def add(self, rule: str, verdict: Verdict, action: str = "deny") -> None:
        """Record a validating rule's verdict under its enforcement action: `deny` denies,
        `warn` turns each finding into a warning naming the rule, `audit` records it only."""
        self.verdicts.append(RuleVerdict(rule, action, verdict.allowed))
        if not verdict.errors and not verdict.warnings and verdict.refusal is None:
            return  # the common case, nothing found: no lists to build
        self.warnings += [RuleNote(rule, w) for w in verdict.warnings]
        if action == "deny":
            self.errors += [RuleError(rule, e) for e in verdict.errors]
            if verdict.refusal is not None and self.refusal is None:
                self.refusal = RuleNote(rule, verdict.refusal)
            return
        found = [RuleNote(rule, str(e), e) for e in verdict.errors]
        if verdict.refusal is not None:
            found.append(RuleNote(rule, verdict.refusal))
        (self.warnings if action == "warn" else self.audit).extend(found)

    def add_changes(self, rule: str, changes: Changes) -> None:
        self.verdicts.append(RuleVerdict(rule, "on", True))
        self.changes += [RuleNote(rule, c) for c in changes.made]
        self.warnings += [RuleNote(rule, w) for w in changes.warnings]

    @property
    def decided_by(self) -> list[str]:
        """The rules whose findings shaped the answer (denied, warned, audited or changed), in order."""
        notes = [e.rule for e in self.errors] + [n.rule for n in (self.warnings + self.audit + self.changes)]
        if self.refusal is not None:
            notes.append(self.refusal.rule)
        return list(dict.fromkeys(notes))

    @property
    def matched(self) -> bool:
        return bool(self.rules)

    @property
    def allowed(self) -> bool:
        return not self.errors and self.refusal is None and self.crash is None

    @property
    def code(self) -> int:
        if self.crash is not None:
            return 500
        if self.errors:
            return 422
        return 403 if self.refusal is not None else 200
