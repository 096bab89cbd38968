"""AdmissionReview responses, built from the engine's typed decisions.

Only this module writes the wire response, so the contract (uid echoed, same apiVersion, patch
only when non-empty, status codes) lives in one place; `review_response` is the one function the
server and `check` both call.
"""

from __future__ import annotations

import base64
from typing import Any

import jsonpatch
from jsonpointer import escape
import orjson

from .decision import Decision, RuleNote
from .fields import FieldError
from .review import Request

MAX_WARNING_LENGTH = 120


def clip_warning(text: str) -> str:
    """Kubernetes asks for warnings of at most 120 characters; longer ones are shortened, not dropped."""
    text = " ".join(text.split())
    if len(text) <= MAX_WARNING_LENGTH:
        return text
    return text[: MAX_WARNING_LENGTH - 1] + "…"


def _dedupe(warnings: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for w in warnings:
        seen.setdefault(clip_warning(w), None)
    return list(seen)


def _envelope(api_version: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


def _kind_group(req: Request) -> str:
    kind = (req.request_kind or req.kind).kind
    group = (req.request_kind or req.kind).group
    return f"{kind}.{group}" if group else kind


def invalid_message(req: Request, errors: list[FieldError]) -> str:
    """apimachinery's NewInvalid wording: `Kind.group "name" is invalid: [e1, e2]`."""
    rendered = [str(e) for e in errors]
    body = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    return f'{_kind_group(req)} "{req.name or ""}" is invalid: {body}'


def status_invalid(req: Request, errors: list[FieldError]) -> dict[str, Any]:
    kind = (req.request_kind or req.kind)
    return {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": invalid_message(req, errors),
        "details": {
            "name": req.name,
            "group": kind.group,
            "kind": kind.kind,
            "causes": [{"reason": e.kind, "message": e.body(), "field": e.field} for e in errors],
        },
    }


def _diff(src: Any, dst: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(src, dict) and isinstance(dst, dict):
        for key, value in src.items():
            if key not in dst:
                ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
            elif value is not dst[key] and value != dst[key]:
                _diff(value, dst[key], f"{path}/{escape(key)}", ops)
        for key, value in dst.items():
            if key not in src:
                ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": value})
    elif isinstance(src, list) and isinstance(dst, list):
        # Lists rarely change in a mutation; jsonpatch finds the minimal edit within this one.
        for op in jsonpatch.make_patch(src, dst).patch:
            op["path"] = path + op["path"]
            if "from" in op:
                op["from"] = path + op["from"]
            ops.append(op)
    else:
        ops.append({"op": "replace", "path": path, "value": dst})


def make_patch(original: dict[str, Any] | None, edited: dict[str, Any] | None) -> list[dict[str, Any]]:
    """RFC 6902 operations that turn `original` into `edited`, computed by diff, never by hand.

    Equal subtrees are skipped with one C-level `==` each, so the cost follows the size of the
    change rather than of the object (jsonpatch alone walks every list of the pod: ~0.7 ms).
    """
    ops: list[dict[str, Any]] = []
    if original is None or edited is None or original == edited:
        return ops
    _diff(original, edited, "", ops)
    return ops


def review_response(req: Request, decision: Decision) -> dict[str, Any]:
    """The AdmissionReview answer for a decision: the one place a Decision becomes wire JSON."""
    if decision.crash is not None:
        message = f"internal error in rule {decision.crash.rule}; the webhook log has the details (review uid {req.uid})"
        return error_response(req.uid, req.api_version, 500, message, "InternalError")
    response: dict[str, Any] = {"uid": req.uid, "allowed": decision.allowed}
    if decision.errors:
        response["status"] = status_invalid(req, [e.error for e in decision.errors])
    elif decision.refusal is not None:
        response["status"] = {"status": "Failure", "code": 403, "reason": "Forbidden", "message": decision.refusal.text}
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
    return _envelope(
        api_version,
        {
            "uid": uid,
            "allowed": False,
            "status": {"status": "Failure", "code": code, "reason": reason, "message": message},
        },
    )
