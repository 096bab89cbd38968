"""The cron dialect of the CronHPA controller, as its parser reads it.

A port of `cron.Parse` of github.com/ringtail/go-cron (parser.go, vendored by
AliyunContainerService/kubernetes-cronhpa-controller 31c63bed, whose executor adds every job
with it): five or six fields (seconds first; the day of week may be left off, and is then `*`),
`*` and `?` in any field, ranges, steps and lists, month and weekday names in any case, and the
descriptors (`@daily`, `@every 90s`, `@date 2030-01-01 10:00:00`, ...). A parser of its own (not a rule) so that it can be
tested alone and reused; it only says why a schedule would be refused, in the parser's words,
never computes run times.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from ..admission.gofmt import go_quote
from .common import parse_duration

_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
# (low, high, names) for second, minute, hour, day of month, month, day of week (spec.go's bounds)
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = ((0, 59, {}), (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))
_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_EVERY = "@every "
_DATE = "@date "  # go-cron's own: one moment, time.Parse("2006-01-02 15:04:05")
_DATETIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})", re.ASCII)
_GO_SPACE = " \t\n\v\f\r\x85\xa0"  # unicode.IsSpace for the Latin-1 range (strings.Fields); the rest is rare
_INT32_MAX = 2**31 - 1


class _Refused(Exception):
    pass


def _atoi(text: str) -> int:
    """strconv.Atoi: an optional sign and ASCII digits, within int64."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        raise _Refused(f"Failed to parse int from {text}: strconv.Atoi: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise _Refused(f"Failed to parse int from {text}: strconv.Atoi: parsing {go_quote(text)}: value out of range")
    return value


def _number(text: str) -> int:
    """mustParseInt: a non-negative int."""
    value = _atoi(text)
    if value < 0:
        raise _Refused(f"Negative number ({value}) not allowed: {text}")
    return value


def _int_or_name(text: str, names: dict[str, int]) -> int:
    found = names.get(text.lower()) if names else None
    return found if found is not None else _number(text)


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    """getRange: `*`/`?`, N, N-M, each with an optional /STEP (N/STEP runs to the field's end)."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise _Refused(f"Too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1])
        if len(low_and_high) == 1:
            end = high
    else:
        raise _Refused(f"Too many slashes: {expr}")
    if start < low:
        raise _Refused(f"Beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise _Refused(f"End of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise _Refused(f"Beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise _Refused(f"Step of range should be a positive number: {expr}")


def _go_datetime(text: str) -> bool:
    """Whether Go's time.Parse takes `text` in the layout "2006-01-02 15:04:05": each number of
    its exact width, and a day the month has."""
    m = _DATETIME.fullmatch(text)
    if not m:
        return False
    try:
        year, month, day, hour, minute, second = map(int, m.groups())
        datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def cron_problem(schedule: Any) -> str | None:
    """Why the CronHPA controller's parser refuses `schedule` (its own message), or None."""
    if not isinstance(schedule, str) or not schedule:
        return "Empty spec string"
    if schedule.startswith("@"):
        if schedule in _DESCRIPTORS:
            return None
        if schedule.startswith(_EVERY):
            # time.ParseDuration; go-cron's Every rounds anything under a second up to one
            return None if parse_duration(schedule[len(_EVERY) :]) is not None else f"Failed to parse duration {schedule}"
        if schedule.startswith(_DATE):
            return None if _go_datetime(schedule[len(_DATE) :]) else f"Failed to parse date {schedule}"
        return f"Unrecognized descriptor: {schedule}"
    fields = [f for f in "".join(" " if c in _GO_SPACE else c for c in schedule).split(" ") if f]
    if not 5 <= len(fields) <= 6:
        return f"Expected 5 to 6 fields, found {len(fields)}: {schedule}"
    try:
        for text, (low, high, names) in zip(fields, _BOUNDS):
            for expr in (part for part in text.split(",") if part):
                _range(expr, low, high, names)
    except _Refused as exc:
        return str(exc)
    return None


def target_size_problem(size: Any) -> str | None:
    """Why a job's targetSize cannot be what the controller scales to: an int32 (its Go type; a
    larger number fails to decode, and the CronHPA is then never read) and not below zero (no
    scale subresource takes negative replicas)."""
    if isinstance(size, bool) or not isinstance(size, int):
        return "must be an integer"
    if size < 0:
        return "must be greater than or equal to 0"
    if size > _INT32_MAX:
        return f"must be at most {_INT32_MAX} (an int32)"
    return None
