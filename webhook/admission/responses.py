"""AdmissionReview responses, built from the engine's typed decisions.

Only this module writes the wire response, so the contract (uid echoed, same apiVersion, patch
only when non-empty, status codes) lives in one place. What a decision's status says comes from
`outcome.status_of`, which `check` reads too.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from .decision import Decision, RuleNote
from .outcome import status_of
from .review import Request
from .status import Status

# The API server may truncate a warning over 256 characters (the admission response's `warnings`
# documentation asks for 120 "if possible"): a path-prefixed finding rarely fits in 120, and its
# reason is at its end.
MAX_WARNING_LENGTH = 256


# What a clipped warning keeps of its start (the rule and the field path); the rest of the room
# goes to its end, where the reason is.
WARNING_HEAD = 120


def clip_warning(text: str) -> str:
    """A warning longer than the API server keeps is shortened, not dropped. The middle goes, so
    the rule, the path and the reason stay: a warning cut at its end would name a field and not
    say what is wrong with it."""
    text = " ".join(text.split())
    if len(text) <= MAX_WARNING_LENGTH:
        return text
    return text[:WARNING_HEAD] + "…" + text[len(text) - (MAX_WARNING_LENGTH - WARNING_HEAD - 1) :]


def _dedupe(warnings: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for w in warnings:
        seen.setdefault(clip_warning(w), None)
    return list(seen)


def _envelope(api_version: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


def review_response(req: Request, decision: Decision) -> dict[str, Any]:
    """The AdmissionReview answer for a decision: the one place a Decision becomes wire JSON."""
    status = status_of(req, decision)
    if decision.crash is not None and status is not None:  # a crash answers with its status alone
        return _envelope(req.api_version, {"uid": req.uid, "allowed": False, "status": status.review_dict()})
    response: dict[str, Any] = {"uid": req.uid, "allowed": decision.allowed}
    if status is not None:
        response["status"] = status.review_dict()
    if decision.patch and decision.allowed:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(decision.patch)).decode("ascii")
    if decision.warnings:
        response["warnings"] = _dedupe([warning_text(w) for w in decision.warnings])
    notes = audit_annotations(decision)
    if notes:
        response["auditAnnotations"] = notes
    return _envelope(req.api_version, response)


def warning_text(note: RuleNote) -> str:
    """A warning as the client sees it, naming the rule: `servinggate [rule]: ...`."""
    text = note.text.removeprefix("servinggate: ")
    return f"servinggate [{note.rule}]: {text}"


MAX_ANNOTATION_CHARS = 1024


def _joined(notes: list[str]) -> str:
    text = "; ".join(notes)
    return text if len(text) <= MAX_ANNOTATION_CHARS else text[: MAX_ANNOTATION_CHARS - 1] + "…"


def audit_annotations(decision: Decision) -> dict[str, str]:
    """What the API server's audit log records for this review. It prefixes each key with the
    webhook's name (e.g. `pods-modelserving.mutate.servinggate.io/changes`): `rules` lists the
    rules that ran; `audit` holds the findings of rules in audit mode; `changes` what the
    mutators changed. A review no rule ran for carries none."""
    notes = {"rules": ",".join(decision.rules)} if decision.rules else {}
    if decision.audit:
        notes["audit"] = _joined([f"[{n.rule}] {n.text}" for n in decision.audit])
    if decision.changes:
        notes["changes"] = _joined([f"[{n.rule}] {n.text}" for n in decision.changes])
    return notes


def error_response(uid: str, api_version: str, code: int, message: str, reason: str) -> dict[str, Any]:
    """A review answer that denies because the webhook could not decide (bad review, rule crash)."""
    return _envelope(api_version, {"uid": uid, "allowed": False, "status": Status(code, message, reason).review_dict()})
