"""The one quantity parser: Kubernetes' grammar, exact values, bounded input."""

from __future__ import annotations

from decimal import Decimal

import pytest

from webhook.quantity import MAX_DIGITS, parse_quantity
from webhook.scalein.accounting import quantity_units


@pytest.mark.parametrize(
    "text, value",
    [
        ("1", 1),
        ("0.8", Decimal("0.8")),
        ("500m", Decimal("0.5")),
        ("1k", 1000),
        ("1Ki", 1024),
        ("1.5Gi", 1610612736),
        ("1E", 10**18),
        ("1Ei", 2**60),
        ("1e3", 1000),
        ("1E3", 1000),
        ("2.5e-3", Decimal("0.0025")),
        ("+1k", 1000),
        (".5", Decimal("0.5")),
        ("5.", 5),
        ("-2", -2),
        ("100n", Decimal("1E-7")),
        (" 8 ", 8),
        (2, 2),
        (2.5, Decimal("2.5")),
    ],
)
def test_valid_quantities(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1i",
        "i",
        "1 Gi",
        "1GiB",
        "0x10",
        "١",
        "²",
        "1e",
        "1e" + "9" * 5000,
        "9" * 4400,
        "1" * (MAX_DIGITS + 9),
        True,
        None,
        [1],
        {"a": 1},
        float("inf"),
        float("nan"),
        10**100,
    ],
)
def test_not_quantities_or_unbounded(text):
    assert parse_quantity(text) is None


def test_scoring_rounds_up_and_treats_malformed_as_zero():
    assert quantity_units("500m") == 1 and quantity_units("2") == 2 and quantity_units("1k") == 1000
    assert quantity_units("bogus") == 0 and quantity_units("-1") == 0 and quantity_units("9" * 5000) == 0
