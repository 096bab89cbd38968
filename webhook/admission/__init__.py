"""The AdmissionReview wire protocol: parsing requests, field errors, building responses.

Imports neither Flask nor the Kubernetes client, so the `check` CLI and tests use it as is.
"""

from .fields import FieldError, FieldPath, duplicate, forbidden, invalid, not_supported, required, too_long
from .decision import Changes, Decision, RuleError, RuleNote, RuleVerdict, Verdict, allowed, denied, refused
from .responses import review_response
from .review import Request, ReviewError, make_request, parse_review

__all__ = [
    "FieldError", "FieldPath", "duplicate", "forbidden", "invalid", "not_supported", "required", "too_long",
    "Changes", "Decision", "RuleError", "RuleVerdict", "RuleNote", "Verdict", "allowed", "denied", "refused", "review_response",
    "Request", "ReviewError", "make_request", "parse_review",
]
