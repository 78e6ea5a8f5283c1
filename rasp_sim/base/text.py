"""Values shortened for messages and labels: one rule for every error and drawing.

Python refuses to print an int of more than 4300 digits (repr raises ValueError), and a
long value would bury the message it appears in, so numbers above BIG_NUMBER_BITS are
described by their size ("an int of 20,001 bits"), also inside lists, and every text is
cut to its caller's limit with "..." where it was cut.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable

# 2^128 has 39 digits: larger numbers are described by size, not printed.
BIG_NUMBER_BITS = 128


def shorten(text: str, limit: int) -> str:
    """`text`, cut to at most `limit` characters with "..." at the end where it was cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def big_number(x: Any) -> str | None:
    """The size of an int or Fraction too big to print usefully, else None."""
    if isinstance(x, bool) or not isinstance(x, (int, Fraction)):
        return None
    numerator, denominator = abs(x.numerator).bit_length(), x.denominator.bit_length()
    if x.denominator == 1:
        return f"an int of {numerator:,} bits" if numerator > BIG_NUMBER_BITS else None
    if numerator + denominator <= BIG_NUMBER_BITS:
        return None
    return f"a fraction with a {numerator:,}-bit numerator and a {denominator:,}-bit denominator"


def short_repr(value: Any, limit: int) -> str:
    """repr(value) for a message, at most `limit` characters (NumPy arrays and scalars as
    their Python values); big numbers by their size."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    return shorten(_repr(value, limit), limit)


def _repr(value: Any, budget: int) -> str:
    """repr with big numbers described; a container stops once past `budget` characters
    (the rest would be cut anyway, and a column may have millions of elements)."""
    big = big_number(value)
    if big is not None:
        return big
    if isinstance(value, (list, tuple)):
        items = _items(value, budget, lambda v: _repr(v, budget))
        if isinstance(value, list):
            return f"[{items}]"
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, dict):
        return "{" + _items(value.items(), budget,
                            lambda kv: f"{_repr(kv[0], budget)}: {_repr(kv[1], budget)}") + "}"
    return repr(value)


def _items(items: Iterable[Any], budget: int, text_of: Callable[[Any], str]) -> str:
    parts: list[str] = []
    length = 0
    for item in items:
        if length > budget:
            break
        parts.append(text_of(item))
        length += len(parts[-1]) + 2
    return ", ".join(parts)
