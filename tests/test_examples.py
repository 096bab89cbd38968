"""The hypothesis profiles: a local run draws a share of each property's examples, CI all of them."""

from __future__ import annotations

import pytest
from hypothesis import settings
from support import examples as ex


def test_a_local_run_draws_a_quarter_with_a_floor(monkeypatch):
    monkeypatch.delenv(ex.ENV, raising=False)
    assert ex.profile() == "dev"
    assert [ex.examples(n) for n in (500, 300, 100, 40, 10)] == [125, 75, 25, 25, 10]


def test_ci_draws_what_each_property_names(monkeypatch):
    monkeypatch.setenv(ex.ENV, "ci")
    assert [ex.examples(n) for n in (500, 300, 10)] == [500, 300, 10]


def test_an_unknown_profile_is_named(monkeypatch):
    monkeypatch.setenv(ex.ENV, "fast")
    with pytest.raises(ValueError, match="SERVINGGATE_HYPOTHESIS_PROFILE='fast': the hypothesis profiles are dev, ci"):
        ex.profile()


def test_the_loaded_profile_is_the_one_the_environment_names():
    """tests/conftest.py loads the profile at start-up; CI's prints the reproduction blob."""
    assert settings._current_profile == ex.profile()  # type: ignore[attr-defined]
    assert settings.get_profile("ci").print_blob is True
    assert settings.get_profile("dev").print_blob is False
