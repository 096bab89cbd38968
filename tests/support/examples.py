"""How many examples a property test draws, by the hypothesis profile the run chose.

Each property names the count CI draws (`examples(300)`); a local run (`dev`, the default) draws a
quarter of it, at least 25, so `./dev test` stays quick while CI (`.ci/run` sets
SERVINGGATE_HYPOTHESIS_PROFILE=ci) searches as widely as the test was written for. The profiles
themselves are registered in tests/conftest.py."""

from __future__ import annotations

import os

ENV = "SERVINGGATE_HYPOTHESIS_PROFILE"
PROFILES = ("dev", "ci")
LOCAL_SHARE, LOCAL_FLOOR = 4, 25


def profile() -> str:
    """The profile this run uses; an unknown name is an error, not a silent default."""
    name = os.environ.get(ENV, "dev")
    if name not in PROFILES:
        raise ValueError(f"{ENV}={name!r}: the hypothesis profiles are {', '.join(PROFILES)}")
    return name


def examples(ci_count: int) -> int:
    """`ci_count` in CI; locally a quarter of it, at least LOCAL_FLOOR (never more than asked)."""
    if profile() == "ci":
        return ci_count
    return min(ci_count, max(LOCAL_FLOOR, ci_count // LOCAL_SHARE))
