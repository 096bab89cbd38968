"""The AdmissionReview wire protocol: parsing requests, field errors, building responses.

Imports neither Flask nor the Kubernetes client, so the `check` CLI and tests use it as is.
"""

from .decision import Changes, Decision, RuleError, RuleNote, RuleVerdict, Verdict, allowed, denied, refused
from .fields import (
    BUILTIN,
    CEL,
    RULE,
    SCHEMA,
    FieldError,
    FieldPath,
    Key,
    duplicate,
    forbidden,
    internal,
    invalid,
    invalid_message,
    not_found,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)
from .outcome import status_of
from .responses import review_response
from .review import Request, ReviewError, make_request, parse_review

__all__ = [
    "BUILTIN",
    "CEL",
    "RULE",
    "SCHEMA",
    "FieldError",
    "FieldPath",
    "Key",
    "duplicate",
    "forbidden",
    "internal",
    "invalid",
    "invalid_message",
    "not_found",
    "not_supported",
    "required",
    "too_long",
    "too_many",
    "type_invalid",
    "Changes",
    "Decision",
    "RuleError",
    "RuleVerdict",
    "RuleNote",
    "Verdict",
    "allowed",
    "denied",
    "refused",
    "review_response",
    "status_of",
    "Request",
    "ReviewError",
    "make_request",
    "parse_review",
]
