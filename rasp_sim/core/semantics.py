"""The value rules of RASP on single atoms: the one source of truth (docs/language.md).

The interpreter uses them for atom arithmetic; `rasp_sim.core.atom_functions` makes them
the per-position function of every map op, which the vectorised evaluator
(`rasp_sim.evaluation.evaluate`) must agree with element by element (property-tested) and
the compiler uses as is.

Public API:

- `binary(op, a, b, *, exact=False)`: `+ - * / % ^ == != < > <= >=` and atom `and`/`or`
  with Python semantics (`^` is `pow`, `/` true division, `%` Python modulo, `1 and 2` = 2).
- `unary(op, a, *, exact=False)`: `not`, `neg`, `pos`, `round`, `indicator` and the
  extension maps `exp`, `log`, `sqrt`, `abs`. `rasp_round`, `indicator`, `truthy` as well.
- `sequence_type(values)`: the typing table of 6.2, "int" | "float" | "string" | "bool".
- `aggregate_one(selected, default, whole_column, *, reduction="mean", exact=False)`: one
  query's aggregate (6.5), plus the `sum` extension.
- `sop_logic`, `where`, `index`, `member`: the remaining per-position rules of maps.
- `assertion(condition, message, notes)`: the `assert` extension on one atom.
- `convert_token(kind, x, *, exact=False)`: `tokens_str/int/float/bool/asis` (5.1).
- `to_exact(x)`: the atom as exact mode sees it.

Failures raise `RaspRuntimeError` (what Python reports as ZeroDivisionError,
OverflowError, ValueError) or `RaspTypeError` (TypeError), without a span: the caller
attaches one with `.with_span`.

Exact mode: every float is replaced by the `Fraction` of its exact binary value and every
operation that would produce a float produces a `Fraction` instead (`1/3` = 1/3, `2^-1` =
1/2, an integer mean is a Fraction). Where the exact result is irrational (`sqrt(2)`,
`exp(1)`, `2^0.5`) exact mode raises a RaspTypeError rather than return a float.
A Fraction has the sequence type "float": exact mode replaces floats, so programs keep the
type labels (and displays) they have without it.
"""
from __future__ import annotations

import math
import operator
from fractions import Fraction
from typing import Any, Callable, Literal, Sequence

from ..base.errors import RaspProgramError, RaspResourceError, RaspRuntimeError, RaspTypeError
from ..base.limits import check_atom_operation
from ..base.text import big_number, short_repr

SeqType = Literal["int", "float", "string", "bool"]

_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": operator.mod,
    "^": pow,
}
COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


def _describe(x: Any) -> str:
    """An operand in a message: its short repr and type, or the size of a big number."""
    return big_number(x) or f"{short_repr(x, 40)} ({type(x).__name__})"


def python_error(exc: Exception, what: str) -> Exception:
    """Translate a Python exception raised while computing `what` into a RaspError."""
    if isinstance(exc, TypeError):
        return RaspTypeError(f"cannot compute {what}: {exc}")
    if isinstance(exc, ZeroDivisionError):
        return RaspRuntimeError(f"division by zero in {what}")
    if isinstance(exc, OverflowError):
        return RaspRuntimeError(f"numerical result out of range in {what}: {exc}")
    return RaspRuntimeError(f"{what} failed: {exc}")


def to_exact(x: Any) -> Any:
    """Exact mode's view of an atom: a float becomes the Fraction of its binary value."""
    if type(x) is float:
        if not math.isfinite(x):
            raise RaspTypeError(f"exact mode cannot represent {x!r}")
        return Fraction(x)
    return x


def _is_rational(x: Any) -> bool:
    return isinstance(x, (int, Fraction))  # bool is an int


def _exact_root(x: Fraction, k: int) -> Fraction | None:
    """The rational k-th root of x >= 0 if there is one, else None."""
    num, den = x.numerator, x.denominator
    rn, rd = _int_root(num, k), _int_root(den, k)
    if rn is None or rd is None:
        return None
    return Fraction(rn, rd)


def _int_root(n: int, k: int) -> int | None:
    if n in (0, 1):
        return n
    if k >= n.bit_length():  # 2^k > n: no integer >= 2 is a k-th root (and this bounds the work)
        return None
    if k == 2:
        r = math.isqrt(n)
    else:  # Newton on integers, seeded from the float estimate
        r = int(round(n ** (1.0 / k))) if n.bit_length() < 1000 else 1 << (n.bit_length() // k)
        for _ in range(200):
            nxt = ((k - 1) * r + n // max(r, 1) ** (k - 1)) // k
            if abs(nxt - r) <= 1:
                break
            r = nxt
        for cand in (r - 1, r, r + 1):
            if cand >= 0 and cand**k == n:
                return cand
        return None
    return r if r * r == n else None


def _exact_pow(a: Any, b: Any) -> Any:
    if isinstance(b, int) or (isinstance(b, Fraction) and b.denominator == 1):
        b = int(b)
        if b < 0:
            if a == 0:
                raise ZeroDivisionError("0 cannot be raised to a negative power")
            return Fraction(a) ** b
        return a**b
    if isinstance(b, Fraction) and isinstance(a, (int, Fraction)) and a >= 0:
        root = _exact_root(Fraction(a), b.denominator)
        if root is not None:
            if b.numerator < 0 and root == 0:
                raise ZeroDivisionError("0 cannot be raised to a negative power")
            return root ** b.numerator
    raise RaspTypeError(
        f"exact mode cannot represent {_describe(a)} ^ {_describe(b)}: the result is not rational"
    )


def binary(op: str, a: Any, b: Any, *, exact: bool = False) -> Any:
    """`a op b` on atoms, Python semantics. Both operands are already evaluated (6.1)."""
    if op == "and":
        return a and b
    if op == "or":
        return a or b
    try:
        if op in COMPARISONS:
            return COMPARISONS[op](a, b)
        if exact:
            a, b = to_exact(a), to_exact(b)
        check_atom_operation(op, a, b, exact=exact)
        if exact and _is_rational(a) and _is_rational(b):
            if op == "/":
                return Fraction(a) / b
            if op == "^":
                return _exact_pow(a, b)
        return _ARITH[op](a, b)
    except (TypeError, ZeroDivisionError, OverflowError, ValueError) as exc:
        if isinstance(exc, TypeError):
            raise RaspTypeError(
                f"cannot apply {op} to {_describe(a)} and {_describe(b)}"
            ) from None
        raise python_error(exc, f"{_describe(a)} {op} {_describe(b)}") from None
    except MemoryError:  # e.g. "ab" * 2^62
        raise RaspResourceError(
            f"out of memory computing {_describe(a)} {op} {_describe(b)}"
        ) from None


def sop_logic(op: str, a: Any, b: Any) -> bool:
    """`and`/`or` between s-ops, per position: always a bool (6.3), unlike atom `and`."""
    return (bool(a) and bool(b)) if op == "and" else (bool(a) or bool(b))


def where(cond: Any, then: Any, otherwise: Any) -> Any:
    """One position of the s-op ternary `then if cond else otherwise` (6.7)."""
    return then if cond else otherwise


def index(table: Any, i: Any) -> Any:
    """`table[i]` for a list, string or dict and an atom index (6.8)."""
    if isinstance(table, dict):
        try:
            return table[i]
        except (KeyError, TypeError):
            raise RaspTypeError(f"index [ {i!r} ] not in dict.") from None
    if not isinstance(i, int):
        raise RaspTypeError(
            f"cannot index a {type(table).__name__} with {_describe(i)}: indices must be ints"
        )
    if not -len(table) <= i < len(table):
        raise RaspTypeError(
            f"index {i} out of range for {type(table).__name__} of length {len(table)}"
        )
    return table[i]


def member(x: Any, members: Any) -> bool:
    """`x in members`, Python membership (6.8)."""
    try:
        return x in members
    except TypeError as exc:
        raise RaspTypeError(f"cannot test {_describe(x)} for membership: {exc}") from None


def assertion(condition: Any, message: str, notes: Sequence[str] = ()) -> bool:
    """`assert(condition, message)` on one atom (an extension): True where the condition
    is truthy (as a ternary's), else the program's own error with `message`; `notes`
    say where in a library the assert is (the error is reported at the caller)."""
    if not condition:
        raise assertion_error(message, notes)
    return True


def assertion_error(message: str, notes: Sequence[str] = ()) -> RaspProgramError:
    error = RaspProgramError(message)
    error.notes = list(notes)
    return error


def indicator(x: Any) -> int:
    """1 where x is truthy, else 0 (6.3)."""
    return 1 if x else 0


def rasp_round(x: Any) -> int:
    """Python `round`: banker's rounding, to an int."""
    try:
        return round(x)
    except (TypeError, OverflowError, ValueError) as exc:
        raise python_error(exc, f"round({_describe(x)})") from None


def _exact_unary(op: str, x: Any) -> Any:
    """exp/log/sqrt of a rational in exact mode: exact or a clear refusal."""
    if op == "sqrt":
        if x < 0:
            raise RaspRuntimeError(f"sqrt({_describe(x)}) failed: math domain error")
        root = _exact_root(Fraction(x), 2)
        if root is not None:
            return root
    elif op == "exp" and x == 0:
        return Fraction(1)
    elif op == "log":
        if x <= 0:
            raise RaspRuntimeError(f"log({_describe(x)}) failed: math domain error")
        if x == 1:
            return Fraction(0)
    raise RaspTypeError(
        f"exact mode cannot represent {op}({_describe(x)}): the result is not rational"
    )


_UNARY: dict[str, Callable[[Any], Any]] = {
    "not": operator.not_,
    "neg": operator.neg,
    "pos": operator.pos,
    "round": rasp_round,
    "indicator": indicator,
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "abs": abs,
}


def unary(op: str, x: Any, *, exact: bool = False) -> Any:
    """The unary operators and extension maps on one atom."""
    if exact:
        x = to_exact(x)
        if op in ("exp", "log", "sqrt") and _is_rational(x):
            return _exact_unary(op, x)
    try:
        return _UNARY[op](x)
    except (TypeError, ZeroDivisionError, OverflowError, ValueError) as exc:
        if isinstance(exc, TypeError):
            raise RaspTypeError(f"cannot apply {op} to {_describe(x)}") from None
        raise python_error(exc, f"{op}({_describe(x)})") from None


# ------------------------------------------------------------------------------ typing


def atom_type(x: Any) -> SeqType | None:
    """The 6.2 label of one legal atom, or None if the atom is illegal in a sequence."""
    if isinstance(x, str):
        return "string"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, (float, Fraction)):
        return "float"
    return None


def sequence_type(values: Sequence[Any]) -> SeqType:
    """The type label of a whole column (6.2), or RaspTypeError."""
    types = set(map(type, values))  # at C speed; subclasses go element by element
    if types <= _LABEL_OF_TYPE.keys():
        return _sequence_label({_LABEL_OF_TYPE[t] for t in types}, values)
    labels: set[SeqType] = set()
    for v in values:
        label = atom_type(v)
        if label is None:
            raise RaspTypeError(
                "attempted to create sequence with illegal val types "
                f"(vals must be bool, float, int or string): {short_repr(list(values), 120)}"
            )
        labels.add(label)
    return _sequence_label(labels, values)


_LABEL_OF_TYPE: dict[type, SeqType] = {
    str: "string", bool: "bool", int: "int", float: "float", Fraction: "float"}


def _sequence_label(labels: set[SeqType], values: Sequence[Any]) -> SeqType:
    if len(labels) <= 1:
        return labels.pop() if labels else "string"  # the original's label for []
    if labels <= {"bool", "int"}:
        return "int"  # bool is a subclass of int
    if labels <= {"bool", "int", "float"}:
        return "float"  # the ints are kept as ints
    raise RaspTypeError(
        f"attempted to create sequence with vals of different types: {short_repr(list(values), 120)}"
    )


def check_numeric(whole_column: Sequence[Any], what: str = "average") -> None:
    """The >= 2-selected condition of 6.5: the entire column must type-check int/float."""
    try:
        label = sequence_type(whole_column)
    except RaspTypeError:
        label = None
    if label not in ("int", "float"):
        raise RaspRuntimeError(
            f"asked to {what} multiple values, but they are non-numbers: {short_repr(list(whole_column), 120)}"
        )


# --------------------------------------------------------------------------- aggregate


def aggregate_one(
    selected: Sequence[Any],
    default: Any,
    whole_column: Sequence[Any],
    *,
    reduction: Literal["mean", "sum"] = "mean",
    exact: bool = False,
) -> Any:
    """One query of `aggregate` (6.5): `selected` are the selected values in key order.

    0 selected: `default`; 1: that value unchanged; >= 2: `sum(...) * 1.0 / |S|` (Python's
    left-to-right sum from 0), or for the `sum` extension the sum itself. In exact mode the
    mean is the exact Fraction."""
    if not selected:
        return default
    if len(selected) == 1:
        return selected[0]
    check_numeric(whole_column, "average" if reduction == "mean" else "sum")
    try:
        # ints stay ints in a sum; in exact mode everything adds exactly
        total = sum(to_exact(v) for v in selected) if exact else sum(selected)
        return finish_mean(total, len(selected), exact=exact) if reduction == "mean" else total
    except OverflowError as exc:
        raise python_error(exc, "aggregate") from None


def finish_mean(total: Any, count: int, *, exact: bool = False) -> Any:
    """The mean from the sum: the original's `total * 1.0 / count`, or exact."""
    return Fraction(total) / count if exact else total * 1.0 / count


# ------------------------------------------------------------------------------ tokens

_CONVERT: dict[str, Callable[[Any], Any]] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
}


def convert_token(kind: str, x: Any, *, exact: bool = False) -> Any:
    """One input element as `tokens_<kind>` sees it (5.1): `int("1.5")` fails,
    `bool("0")` is True, `asis` returns it unchanged. In exact mode floats become Fractions,
    and `tokens_float` keeps an exact input (a Fraction) as it is rather than round it."""
    if exact and kind == "float" and isinstance(x, Fraction):
        return x
    if kind != "asis":
        try:
            x = _CONVERT[kind](x)
        except (TypeError, ValueError, OverflowError) as exc:
            raise python_error(exc, f"tokens_{kind} of {_describe(x)}") from None
    return to_exact(x) if exact else x
