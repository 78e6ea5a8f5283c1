"""What a tracr s-op can hold at one position, as rasp-sim needs to know it.

tracr's `rasp.evaluate` gives Python values, and `None` where an Aggregate selects nothing
(its default default) or where a Map or SequenceMap reads a None (it does not call the
function there). rasp-sim has no None: a converted s-op holds a *stand-in* there, a value
of the column's type that the s-op can never take otherwise (docs/tracr.md, "None").
A `Column` is the finite set of values an s-op can take over a vocabulary and a maximum
length (an over-approximation, as tracr's own value-set inference is), with the
stand-ins kept apart, so that every lookup table the converter writes covers every value
that can reach it, and a stand-in is never mistaken for a real value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from ..base.errors import RaspError

# Above this many values a column is refused: its tables would not fit a program
# (rasp_sim.base.source_limits.MAX_PROGRAM_TOKENS counts every key and value of them).
MAX_COLUMN_VALUES = 10_000


class ConversionError(RaspError):
    """A tracr program (or one of its s-ops) that rasp-sim cannot express: the message
    names the s-op by its tracr label, and the Python function by file and line."""

    kind = "cannot convert"


@dataclass(frozen=True)
class Column:
    real: frozenset  # the values tracr's evaluate can give here (never None)
    nulls: frozenset = frozenset()  # the stand-ins for tracr's None, disjoint from `real`
    # For a column of values that are not atoms (tuples: tracr's make_nary_sequencemap),
    # the values themselves; the column then holds their positions in this tuple.
    objects: tuple | None = None

    def tracr_value(self, value: Any) -> Any:
        """What tracr's evaluate holds where this column holds `value`."""
        if value in self.nulls:
            return None
        return value if self.objects is None else self.objects[value]

    @property
    def values(self) -> frozenset:
        return self.real | self.nulls

    @property
    def is_numeric(self) -> bool:
        """Every real value is a number or a bool (an empty column counts as numeric)."""
        return all(not isinstance(v, str) for v in self.real)


def atom(value: Any, label: str, context: str) -> Any:
    """`value` as a rasp-sim atom (NumPy scalars become Python's), or ConversionError naming
    the s-op `label` and where the value came from."""
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ConversionError(f"{label}: {context} gives {value!r}; rasp-sim atoms are finite "
                              "numbers, strings and bools")
    if isinstance(value, str) and any(c in value for c in '"\r\n'):
        raise ConversionError(f"{label}: {context} gives the string {value!r}; a RASP string "
                              "literal cannot hold a double quote or a line break")
    if isinstance(value, (bool, int, float, str)):
        return value
    raise ConversionError(f"{label}: {context} gives {value!r} (a {type(value).__name__}); "
                          "rasp-sim atoms are numbers, strings and bools")


def column(label: str, real: Iterable[Any], nulls: Iterable[Any] = (),
           objects: tuple | None = None) -> Column:
    """A column of these values, checked: one kind of value (strings, or numbers and
    bools: a rasp-sim sequence holds one type) and at most MAX_COLUMN_VALUES."""
    result = Column(frozenset(real), frozenset(nulls), objects)
    kinds = {isinstance(v, str) for v in result.real}
    if len(kinds) > 1:
        example = sorted(map(repr, result.real))[:6]
        raise ConversionError(f"{label} can hold both strings and numbers ({', '.join(example)}"
                              f", ...); a rasp-sim sequence holds one type of value")
    if len(result.values) > MAX_COLUMN_VALUES:
        raise ConversionError(f"{label} can take more than {MAX_COLUMN_VALUES:,} values over "
                              "this vocabulary and length: too many to tabulate")
    return result


def stand_in(real: frozenset, numeric: bool) -> Any:
    """A value outside `real` to stand for None: "None" (then "None_1", ...) in a string
    column; in a numeric one the integer below every value and below 0 (-1 usually)."""
    if not numeric:
        text, suffix = "None", 0
        while text in real:
            suffix += 1
            text = f"None_{suffix}"
        return text
    lowest = min((v for v in real), default=0)
    return min(math.floor(lowest), 0) - 1


def sort_key(value: Any) -> tuple:
    """An order for a column's values (numbers before strings) so the text is stable."""
    return (1, value, "") if isinstance(value, str) else (0, value, type(value).__name__)


def literal(value: Any) -> str:
    """`value` (an atom) as RASP source text that evaluates to exactly it."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return f'"{value}"'
    # the shortest repr of a float reads back bit-exact; a leading '-' is RASP's prefix
    # minus, which binds tighter than every binary operator (docs/language.md)
    return repr(value)


def means(values: frozenset, max_count: int, label: str) -> frozenset:
    """Every value tracr's Aggregate can give by averaging 2..max_count of `values` (numbers
    and bools): `sum(xs) / len(xs)`, summed left to right from 0 as Python's sum does. The
    sums of m values are built from the sums of m - 1, so every order of summation is
    covered, which makes the set exact for floats as well as for integers."""
    out: set = set()
    sums: set = {0 + v for v in values}
    for count in range(2, max_count + 1):
        sums = {s + v for s in sums for v in values}
        if len(sums) > MAX_COLUMN_VALUES:
            raise ConversionError(f"{label}: the means of up to {max_count} of its values are "
                                  f"more than {MAX_COLUMN_VALUES:,}: too many to tabulate")
        out.update(s / count for s in sums)
    return frozenset(out)


def lookup_text(name: str, mapping: dict[Any, Any]) -> str:
    """RASP text for the map `mapping[name]`: a list indexed by the s-op `name` where the
    keys are exactly 0..len-1 (half the tokens of a dict), else a dict literal; a value
    missing from either fails where it is looked up."""
    keys = sorted(mapping, key=sort_key)
    if all(type(k) is int for k in keys) and keys == list(range(len(keys))):
        return f"[{', '.join(literal(mapping[k]) for k in keys)}][{name}]"
    entries = ", ".join(f"{literal(k)}: {literal(mapping[k])}" for k in keys)
    return f"{{{entries}}}[{name}]"
