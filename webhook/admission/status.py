"""metav1.Status: the one builder of the failure object every answer of ours carries.

Kubernetes puts the same object in two places: an AdmissionReview's `response.status` (without
`kind`/`apiVersion`/`metadata`) and the body of an HTTP error (with them). The server, its worker's
event loop, the review responses and `check` all describe failures with a `Status` and render it
here, so a code always gets the same reason and a 422 always lists its causes the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# HTTP code -> metav1.StatusReason (apimachinery's names). A code missing here reads as BadRequest,
# as kube-apiserver does for a 4xx it has no reason for.
REASONS: dict[int, str] = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "RequestTimeout",
    413: "RequestEntityTooLarge",
    414: "RequestURITooLong",
    415: "UnsupportedMediaType",
    417: "ExpectationFailed",
    422: "Invalid",
    431: "RequestHeaderFieldsTooLarge",
    500: "InternalError",
    501: "NotImplemented",
}


def reason_for(code: int) -> str:
    return REASONS.get(code, "BadRequest")


@dataclass(frozen=True, slots=True)
class Cause:
    """One entry of `details.causes`: the error type (`FieldValueInvalid`...), its text without the
    path, and the path as the API server prints it."""

    reason: str
    message: str
    field: str


@dataclass(frozen=True, slots=True)
class Details:
    """`details` of a 422: the object the errors are about and one cause per field error."""

    name: str
    group: str
    kind: str
    causes: tuple[Cause, ...] = ()


@dataclass(frozen=True, slots=True)
class Status:
    """A failure: code, message, the reason its code implies unless given, details for a 422."""

    code: int
    message: str
    reason: str = ""
    details: Details | None = field(default=None)

    @property
    def reason_text(self) -> str:
        return self.reason or reason_for(self.code)

    def review_dict(self) -> dict[str, Any]:
        """The shape of an AdmissionReview's `response.status`."""
        out: dict[str, Any] = {"status": "Failure", "code": self.code, "reason": self.reason_text, "message": self.message}
        if self.details is not None:
            d = self.details
            out["details"] = {
                "name": d.name,
                "group": d.group,
                "kind": d.kind,
                "causes": [{"reason": c.reason, "message": c.message, "field": c.field} for c in d.causes],
            }
        return out

    def http_dict(self) -> dict[str, Any]:
        """The body of an HTTP error answer: a whole metav1.Status object."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason_text,
            "code": self.code,
        }
