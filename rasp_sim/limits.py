"""Resource limits on atom-level values, checked before the work is done.

Python would happily try to build `range(10 ^ 9)` or `"ab" * 10 ^ 10` (and run out of
memory minutes later) or compute `7 ^ (10 ^ 9)` (and never finish). The original
interpreter inherits that; rasp-sim refuses such values up front with a clear error.
S-op evaluation has its own, memory-based limit (`rasp_sim.evaluate`).
"""
from __future__ import annotations

from .errors import RaspResourceError

# Longest list or string an atom operation may build (range, repetition, concatenation).
MAX_COLLECTION_LENGTH = 10_000_000
# Largest integer (in bits) a power may produce; 10^6 bits is about 300,000 digits.
MAX_INT_BITS = 1_000_000


def check_collection_length(length: int, what: str) -> None:
    """Refuse building a list or string of `length` elements."""
    if length > MAX_COLLECTION_LENGTH:
        raise RaspResourceError(
            f"{what} would have {length:,} elements, above the limit of "
            f"{MAX_COLLECTION_LENGTH:,} (rasp_sim.limits.MAX_COLLECTION_LENGTH)"
        )


def check_int_power(base: int, exponent: int) -> None:
    """Refuse an integer power whose result would exceed MAX_INT_BITS bits."""
    if exponent <= 0 or abs(base) <= 1:
        return
    bits = exponent * (abs(base).bit_length() - 1)  # a lower bound on the result's size
    if bits > MAX_INT_BITS:
        raise RaspResourceError(
            f"{base} ^ {exponent} would have more than {MAX_INT_BITS:,} bits, above the "
            "limit (rasp_sim.limits.MAX_INT_BITS)"
        )
