"""The failure a decision answers with, as a typed `Status`: the one mapping from a decision to
code, reason, message and causes.

`responses.review_response` writes it into the AdmissionReview; `check` reads its message
directly, so the offline verdict and the webhook's answer cannot drift apart.
"""

from __future__ import annotations

from .decision import Decision
from .fields import invalid_message
from .review import Request
from .status import Cause, Details, Status


def status_of(req: Request, decision: Decision) -> Status | None:
    """None when the decision allows; else 500 for a crashed rule, 422 with one cause per field
    error, or 403 for a refusal not tied to a field."""
    if decision.crash is not None:
        message = f"internal error in rule {decision.crash.rule}; the webhook log has the details (review uid {req.uid})"
        return Status(500, message, "InternalError")
    if decision.errors:
        gvk = req.request_kind or req.kind
        errors = [e.error for e in decision.errors]
        causes = tuple(Cause(e.kind, e.body(), e.field) for e in errors)
        return Status(422, invalid_message(gvk.kind, gvk.group, req.name or "", errors), "Invalid", Details(req.name, gvk.group, gvk.kind, causes))
    if decision.refusal is not None:
        return Status(403, decision.refusal.text, "Forbidden")
    return None
