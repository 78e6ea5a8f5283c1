"""Resource limits on atom-level values, checked before the work is done.

Python would happily try to build `range(10 ^ 9)` or `"ab" * 10 ^ 10` (and run out of
memory minutes later) or compute `7 ^ (10 ^ 9)` (and never finish). The original
interpreter inherits that; rasp-sim refuses such values up front with a clear error.
S-op evaluation has its own, memory-based limit (`rasp_sim.evaluate`).
"""
from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

from .errors import RaspResourceError

# Longest list or string an atom operation may build (range, repetition, concatenation).
MAX_COLLECTION_LENGTH = 10_000_000
# Largest integer (in bits) a power may produce; 10^6 bits is about 300,000 digits.
MAX_INT_BITS = 1_000_000
# Decimal digits of the largest such integer (2^MAX_INT_BITS has 301,030).
MAX_INT_DIGITS = math.floor(MAX_INT_BITS * math.log10(2)) + 1
# Python refuses str(int) and int(str) beyond 4,300 digits by default; rasp-sim's values
# may have MAX_INT_DIGITS, and sums of such values a few more: twice that is allowed.
INT_TEXT_DIGITS = 2 * MAX_INT_DIGITS


def allow_int_text() -> None:
    """Let Python print and parse the integers the limits allow (never lowers a limit the
    host program set; 0 means none)."""
    current = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    if current and current < INT_TEXT_DIGITS:
        sys.set_int_max_str_digits(INT_TEXT_DIGITS)


def check_collection_length(length: int, what: str) -> None:
    """Refuse building a list or string of `length` elements."""
    if length > MAX_COLLECTION_LENGTH:
        raise RaspResourceError(
            f"{what} would have {length:,} elements, above the limit of "
            f"{MAX_COLLECTION_LENGTH:,} (rasp_sim.limits.MAX_COLLECTION_LENGTH)"
        )


def check_atom_operation(op: str, a: Any, b: Any) -> None:
    """Refuse `a op b` when Python would build a huge string, list or integer."""
    if op in ("*", "+"):
        if isinstance(a, (str, list)) or isinstance(b, (str, list)):
            check_collection_length(_result_length(op, a, b), f"{op} on a string or list")
            return
    if op in ("*", "^") and _is_integer(a) and _is_integer(b):
        size = _result_bits(op, int(a), int(b))
        if size > MAX_INT_BITS:
            raise RaspResourceError(
                f"{_short(a)} {op} {_short(b)} would have more than {MAX_INT_BITS:,} bits, "
                "above the limit (rasp_sim.limits.MAX_INT_BITS)"
            )
    if op == "^" and isinstance(a, Fraction) and _is_integer(b):
        for part in (a.numerator, a.denominator):
            check_atom_operation("^", part, b)


def _short(x: Any) -> str:
    value = int(x)
    return str(value) if value.bit_length() <= 64 else f"(an int of {value.bit_length():,} bits)"


def _is_integer(x: Any) -> bool:
    return isinstance(x, int) or (isinstance(x, Fraction) and x.denominator == 1)


def _result_length(op: str, a: Any, b: Any) -> int:
    if op == "+":
        return (len(a) if isinstance(a, (str, list)) else 0) + (
            len(b) if isinstance(b, (str, list)) else 0)
    sequence, count = (a, b) if isinstance(a, (str, list)) else (b, a)
    return len(sequence) * count if isinstance(count, int) else 0


def _result_bits(op: str, a: int, b: int) -> int:
    if op == "*":
        return a.bit_length() + b.bit_length()
    if b <= 0 or abs(a) <= 1:
        return 0
    return b * (abs(a).bit_length() - 1)  # a lower bound on the power's size
