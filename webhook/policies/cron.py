"""The cron dialect of the CronHPA controller: six fields, seconds first, plus descriptors.

A parser of its own (not a rule) so that it can be tested alone and reused; it only says why a
schedule is invalid, it never computes run times.
"""

from __future__ import annotations

import re
from typing import Any

from .common import parse_duration

_MONTHS = {m: i + 1 for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
_DAYS = {d: i for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split())}
# (low, high, names, '?' allowed) for second, minute, hour, day of month, month, day of week
_CRON_FIELDS: tuple[tuple[str, int, int, dict[str, int], bool], ...] = (
    ("second", 0, 59, {}, False),
    ("minute", 0, 59, {}, False),
    ("hour", 0, 23, {}, False),
    ("day of month", 1, 31, {}, True),
    ("month", 1, 12, _MONTHS, False),
    ("day of week", 0, 6, _DAYS, True),
)
_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_RANGE = re.compile(r"([^-/]+)(?:-([^-/]+))?(?:/([0-9]+))?", re.ASCII)


def _cron_value(text: str, names: dict[str, int]) -> int | None:
    if text.isascii() and text.isdigit():  # Go's cron parser reads ASCII digits only
        return int(text) if len(text) <= 9 else None
    return names.get(text.upper())


def cron_problem(schedule: Any) -> str | None:
    """Why a 6-field cron spec (seconds first, as the CronHPA controller parses it) is invalid."""
    if not isinstance(schedule, str) or not schedule.strip():
        return "schedule must be a non-empty cron expression"
    text = schedule.strip()
    if text.startswith("@"):
        if text in _DESCRIPTORS:
            return None
        if text.startswith("@every "):
            seconds = parse_duration(text[len("@every ") :].strip())
            return None if seconds is not None and seconds > 0 else "@every needs a positive duration such as 30s or 5m"
        return f"unknown descriptor {text.split()[0]}"
    fields = text.split()
    if len(fields) != 6:
        return f"expected 6 fields (second minute hour day-of-month month day-of-week), found {len(fields)}"
    for field_text, (label, low, high, names, question) in zip(fields, _CRON_FIELDS):
        for part in field_text.split(","):
            if part in ("*", "?") or (part.startswith(("*/", "?/")) and part[2:].isascii() and part[2:].isdigit()):
                if part.startswith("?") and not question:
                    return f"'?' is not allowed in the {label} field"
                if part[2:] == "0":
                    return f"step of the {label} field must be positive"
                continue
            m = _RANGE.fullmatch(part)
            if not m:
                return f"invalid {label} field {field_text!r}"
            start = _cron_value(m.group(1), names)
            end = _cron_value(m.group(2), names) if m.group(2) is not None else start
            if start is None or end is None:
                return f"invalid {label} field {field_text!r}"
            if not (low <= start <= high and low <= end <= high):
                return f"{label} {field_text!r} is out of range {low}-{high}"
            if start > end:
                return f"{label} range {part!r} is backwards"
            if m.group(3) is not None and not m.group(3).strip("0"):
                return f"step of the {label} field must be positive"
    return None
