"""The string formats Kthena's and Volcano's CRDs use (`date-time`, `uri`), checked as the API server's
format registry checks them; other formats are accepted (the API server knows more)."""

from __future__ import annotations

import re
from datetime import datetime

_BAD_URI = re.compile(r"[\x00-\x1f\x7f]|^:|%(?![0-9A-Fa-f]{2})")


def format_ok(fmt: str, value: str) -> bool:
    """The string formats those CRDs use; others are accepted (the API server knows more)."""
    if fmt == "date-time":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return False
        return "T" in value or "t" in value or " " in value
    if fmt == "uri":  # Go's url.Parse refuses little: control characters, no scheme before ':', bad escapes
        return not _BAD_URI.search(value)
    return True
