"""Resource limits on atom-level values, checked before the work is done.

Python would happily try to build `range(10 ^ 9)` or `"ab" * 10 ^ 10` (and run out of
memory minutes later) or compute `7 ^ (10 ^ 9)` (and never finish). The original
interpreter inherits that; rasp-sim refuses such values up front with a clear error.
S-op evaluation has its own, memory-based limit (`rasp_sim.evaluation.evaluate`).

Those limits are per value. `AtomBudget` adds one budget per program run: every list,
string and dict a program builds, and every loop iteration and function call it runs,
draws on it, so thirty lists each within the limits cannot together take 12 GB.

Exact mode's rationals are bounded too: squaring a fraction doubles the size of its
numerator and denominator, and so does `x + 1/x`, so forty such steps would never end.
Every rational operation is refused when a bound on its result's size, computed from the
operands' sizes alone, is above the limit. Maps on s-ops compute element by element
through `rasp_sim.core.semantics.binary`, so the same check covers them.
"""
from __future__ import annotations

import contextlib
import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Iterator

from .errors import RaspResourceError
from .text import big_number

# Longest list or string an atom operation may build (range, repetition, concatenation).
MAX_COLLECTION_LENGTH = 10_000_000
# Largest integer (in bits) a power or product may produce; 10^6 bits is about 300,000
# digits.
MAX_INT_BITS = 1_000_000
# Largest numerator or denominator (in bits) of a non-integral rational result. Lower than
# MAX_INT_BITS because every Fraction operation normalises with a gcd, whose cost is
# quadratic in the size: measured 0.016 s at 10^5 bits, 0.16 s at 3*10^5 bits and about
# 2 s at 10^6. 10^5 bits is about 30,000 digits, far above what exact linear algebra
# needs (an n x n inverse of float64 inputs stays below about 1,100 n bits).
MAX_FRACTION_BITS = 100_000
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


@contextlib.contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """Raise Python's recursion limit to `limit` while the block runs, for a walk whose
    depth was bounded first (never lowered; restored afterwards)."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(max(saved, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


def check_collection_length(length: int, what: str) -> None:
    """Refuse building a list or string of `length` elements."""
    if length > MAX_COLLECTION_LENGTH:
        raise RaspResourceError(
            f"{what} would have {length:,} elements, above the limit of "
            f"{MAX_COLLECTION_LENGTH:,} (rasp_sim.base.limits.MAX_COLLECTION_LENGTH)"
        )


# One program run's budget (`AtomBudget`). Loop and comprehension iterations cost 2-15 us
# each (measured, 2-core machine): a million is a few seconds of work. A function call
# costs about ten (24 us measured), and counts as CALL_ITERATIONS.
MAX_ITERATIONS = 1_000_000
CALL_ITERATIONS = 10
# Elements of the lists, strings and dicts built: as many as one list at the limit.
MAX_PROGRAM_ELEMENTS = MAX_COLLECTION_LENGTH
# The values a program builds stay in memory while its s-ops are evaluated, which
# --memory-limit bounds: they may take this fraction of it (256 MiB of the default 4 GiB).
ATOM_MEMORY_SHARE = 16
# Bytes per element, as CPython allocates them (measured with tracemalloc): a list's
# pointer to an element it shares (`+`, `*`); a pointer and a fresh int or float (range,
# a literal, a comprehension); a dict's table entry with its spare room, and a fresh key
# and value (84 measured); a character of an ASCII string, of any other string at most.
SHARED_ELEMENT_BYTES = 8
LIST_ELEMENT_BYTES = 40
DICT_ENTRY_BYTES = 96
ASCII_CHARACTER_BYTES = 1
WIDE_CHARACTER_BYTES = 4


@dataclass
class AtomBudget:
    """What one program run may spend on atom-level values: steps (loop and comprehension
    iterations, function calls), elements and bytes of the lists, strings and dicts it
    builds. Everything built counts, even if it is dropped later: a budget of work, simple
    to predict, which the interpreter renews for each program it runs (a file with what
    it loads, a statement at the REPL prompt). Each `spend_*` refuses before the work."""

    memory_limit: int  # --memory-limit (Interpreter(memory_limit=)), in bytes
    steps: int = 0
    elements: int = 0
    bytes: int = 0

    @property
    def max_bytes(self) -> int:
        return self.memory_limit // ATOM_MEMORY_SHARE

    def renew(self) -> None:
        """A new program run starts with the whole budget."""
        self.steps = self.elements = self.bytes = 0

    def spend_steps(self, count: int, what: str) -> None:
        """Refuse `what` (a loop of `count` iterations, a call of CALL_ITERATIONS) past
        MAX_ITERATIONS."""
        if self.steps + count > MAX_ITERATIONS:
            raise RaspResourceError(
                f"{what} would take the program past {MAX_ITERATIONS:,} iterations (loops, "
                "comprehensions and function calls together), its budget "
                f"(rasp_sim.base.limits.MAX_ITERATIONS); {self.steps:,} already run")
        self.steps += count

    def spend_elements(self, count: int, size: int, what: str) -> None:
        """Refuse building `what`, `count` elements of `size` bytes in all, past the run's
        element or byte budget."""
        if self.elements + count > MAX_PROGRAM_ELEMENTS:
            raise RaspResourceError(
                f"{what} of {count:,} elements would take the program's lists, strings "
                f"and dicts past {MAX_PROGRAM_ELEMENTS:,} elements, their budget "
                f"(rasp_sim.base.limits.MAX_PROGRAM_ELEMENTS); {self.elements:,} already built")
        if self.bytes + size > self.max_bytes:
            limit = _size_text(self.memory_limit)
            raise RaspResourceError(
                f"{what} of {count:,} elements (about {_size_text(size)}) would take the "
                f"program's lists, strings and dicts past {_size_text(self.max_bytes)}, their "
                f"budget (1/{ATOM_MEMORY_SHARE} of the memory limit, {limit}); "
                f"{_size_text(self.bytes)} already built; raise it with --memory-limit "
                "(Python: Interpreter(memory_limit=))")
        self.elements += count
        self.bytes += size

    def spend_operation(self, op: str, a: Any, b: Any) -> None:
        """Spend on `a op b` if it builds a string or list (`+`, `*`), before it does."""
        if _builds_sequence(op, a, b):
            length = _checked_length(op, a, b)  # the value's own limit first
            self.spend_elements(length, length * _element_bytes(a, b), f"this {op}")


def _element_bytes(a: Any, b: Any) -> int:
    """Bytes per element of a `+` or `*` of a string or list: a list shares its elements."""
    strings = [x for x in (a, b) if isinstance(x, str)]
    if not strings:
        return SHARED_ELEMENT_BYTES
    return max(ASCII_CHARACTER_BYTES if s.isascii() else WIDE_CHARACTER_BYTES for s in strings)


def _size_text(size: int) -> str:
    """A size as --memory-limit is written: 256.0 MiB, 4.0 GiB."""
    return f"{size / 2**30:,.1f} GiB" if size >= 2**30 else f"{size / 2**20:,.1f} MiB"


def check_atom_operation(op: str, a: Any, b: Any, *, exact: bool = False) -> None:
    """Refuse `a op b` when Python would build a huge string, list, integer or rational.
    `exact`: exact mode, where `/` and negative powers of ints give Fractions."""
    if _builds_sequence(op, a, b):
        _checked_length(op, a, b)
        return
    if not (_is_rational(a) and _is_rational(b)):
        return
    if _is_integer(a) and _is_integer(b) and (op in ("+", "-", "%", "*") or (op == "^" and b >= 0)):
        # an integer result: only products and powers can grow faster than a bit a step
        if op in ("*", "^") and _result_bits(op, int(a), int(b)) > MAX_INT_BITS:
            raise RaspResourceError(
                f"{_short(a)} {op} {_short(b)} would have more than {MAX_INT_BITS:,} bits, "
                "above the limit (rasp_sim.base.limits.MAX_INT_BITS)"
            )
        return
    size = _fraction_bits(op, a, b, exact)
    if size is not None and size > MAX_FRACTION_BITS:
        raise RaspResourceError(
            f"{_short(a)} {op} {_short(b)} would have a numerator or denominator of up to "
            f"{size:,} bits, above the limit of {MAX_FRACTION_BITS:,} "
            "(rasp_sim.base.limits.MAX_FRACTION_BITS)"
        )


def check_rational_sum(values: Iterable[Any], what: str) -> None:
    """Refuse an exact sum (or mean) of `values` whose result could exceed
    MAX_FRACTION_BITS, before adding: its denominator divides the product of the distinct
    denominators, and its numerator is at most the count times the largest |value| times
    that product. (The operands are each within the limit; it is their sum that can grow,
    layer after layer, like repeated squaring.)"""
    denominators: set[int] = set()
    largest = count = 0
    for v in values:
        if isinstance(v, Fraction):
            denominators.add(v.denominator)
            largest = max(largest, abs(v.numerator).bit_length() - v.denominator.bit_length())
        elif isinstance(v, int):
            largest = max(largest, abs(v).bit_length())
        count += 1
    size = sum(d.bit_length() for d in denominators) + largest + count.bit_length() + 1
    if size > MAX_FRACTION_BITS:
        raise RaspResourceError(
            f"the exact {what} of {count:,} rationals ({len(denominators):,} distinct "
            f"denominators) could have a numerator or denominator of up to {size:,} bits, "
            f"above the limit of {MAX_FRACTION_BITS:,} (rasp_sim.base.limits.MAX_FRACTION_BITS)")


def _builds_sequence(op: str, a: Any, b: Any) -> bool:
    return op in ("*", "+") and (isinstance(a, (str, list)) or isinstance(b, (str, list)))


def _checked_length(op: str, a: Any, b: Any) -> int:
    """The length of the string or list `a op b` builds, refused past
    MAX_COLLECTION_LENGTH (a negative count builds an empty one)."""
    length = max(0, _result_length(op, a, b))
    check_collection_length(length, f"{op} on a string or list")
    return length


def _is_rational(x: Any) -> bool:
    return isinstance(x, (int, Fraction))  # bool is an int


def _is_integer(x: Any) -> bool:
    return isinstance(x, int) or (isinstance(x, Fraction) and x.denominator == 1)


def _short(x: Any) -> str:
    """An operand as arithmetic is written: 7, (1/3), or the size of a big number."""
    big = big_number(x)
    if big is not None:
        return f"({big})"
    return f"({x})" if isinstance(x, Fraction) and x.denominator != 1 else str(int(x))


def _result_length(op: str, a: Any, b: Any) -> int:
    if op == "+":
        return (len(a) if isinstance(a, (str, list)) else 0) + (
            len(b) if isinstance(b, (str, list)) else 0)
    sequence, count = (a, b) if isinstance(a, (str, list)) else (b, a)
    return len(sequence) * count if isinstance(count, int) else 0


def _result_bits(op: str, a: int, b: int) -> int:
    if op == "*":
        return a.bit_length() + b.bit_length()
    return int(b * _log2(a)) if b > 0 else 0  # the power's size, to within a bit


def _log2(x: int) -> float:
    return math.log2(abs(x)) if x else 0.0


def _parts(x: Any) -> tuple[int, int]:
    """The sizes in bits of x's numerator and denominator."""
    x = Fraction(x)
    return abs(x.numerator).bit_length(), x.denominator.bit_length()


def _fraction_bits(op: str, a: Any, b: Any, exact: bool) -> int | None:
    """An upper bound on the larger of the numerator's and the denominator's size of
    `a op b` (for powers: the size, to within a bit), or None when the result is not a rational (a float) or cannot grow."""
    fractions = exact or isinstance(a, Fraction) or isinstance(b, Fraction)
    if not fractions:
        return None  # ints: `/` and negative powers give floats
    (na, da), (nb, db) = _parts(a), _parts(b)
    if op == "*":
        return max(na + nb, da + db)
    if op == "/":
        return max(na + db, da + nb)
    if op in ("+", "-", "%"):  # over the common denominator da * db
        return max(max(na + db, nb + da) + 1, da + db)
    if op == "^" and (exact or _is_integer(b)):
        # (n/d)^(p/q) is (n^(1/q) / d^(1/q))^p when the roots exist (exact mode)
        b, a = Fraction(b), Fraction(a)
        return int(abs(b) * max(_log2(a.numerator), _log2(a.denominator)))
    return None
