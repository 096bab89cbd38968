"""Kubernetes resource quantities (`500m`, `1Gi`, `1E`, `2.5e3`): the one parser of the product.

Pure, so rules and the scoring model use it without the Kubernetes client (whose
`utils.parse_quantity` served as the reference for the grammar). Input is bounded: a number
with more than MAX_DIGITS digits or an exponent beyond MAX_EXPONENT is refused as unparsable
instead of being converted (Python refuses int() past 4,300 digits, and a 5,000-digit exponent
is no quantity anyone means).
"""

from __future__ import annotations

import re
from decimal import Context, Decimal, InvalidOperation
from typing import Any

MAX_DIGITS = 64
MAX_EXPONENT = 100

# <sign><digits>[.<digits>] then a binary SI suffix, a decimal SI suffix, or a decimal exponent.
# "E" alone is exa; "E" followed by digits is an exponent (the API server reads "1E3" as 1000).
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<decimal>[numkMGTPE]))?",
    re.ASCII,
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# Enough precision for MAX_DIGITS digits times 2^60, so results are exact.
_CONTEXT = Context(prec=MAX_DIGITS + 40)


def parse_quantity(value: Any) -> Decimal | None:
    """The quantity as an exact Decimal; None when it is not a quantity (or not a bounded one).

    Numbers (from JSON) are accepted as they are; booleans are not numbers here.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value) if len(str(abs(value))) <= MAX_DIGITS else None
    if isinstance(value, float):
        return Decimal(repr(value)) if value == value and abs(value) != float("inf") else None
    if not isinstance(value, str) or len(value) > MAX_DIGITS + 8:
        return None
    m = _QUANTITY.fullmatch(value.strip())
    if not m:
        return None
    try:
        number = Decimal(m["number"])
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
        return None
    if m["binary"]:
        return _CONTEXT.multiply(number, Decimal(1024) ** _BINARY[m["binary"]])
    if m["exp"]:
        exponent = int(m["exp"][1:])  # at most MAX_DIGITS + 8 characters: always convertible
        if abs(exponent) > MAX_EXPONENT:
            return None
        return _CONTEXT.scaleb(number, exponent)
    if m["decimal"]:
        return _CONTEXT.scaleb(number, _DECIMAL[m["decimal"]])
    return number
