"""The value of every elementwise op (`graph.MapOp`) on one position's atoms: one table.

Both consumers take their per-position function from here, so they cannot drift apart:
- the interpreter's generic (object-array) path and selector comparisons
  (rasp_sim/evaluation/elementwise.py; its NumPy fast paths are property-tested against
  this table in tests/test_evaluate.py);
- the compiler (compiler/tracr_backend/atoms.py), which only adapts these functions to
  its stored values.

The rules themselves (errors, exact mode, resource limits) are `rasp_sim.core.semantics`'s.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

from . import semantics

# An entry builds the op's function from the Map's params and the exact-mode flag.
_Entry = Callable[[Sequence[Any], bool], Callable[..., Any]]

BINARY_OPS = ("+", "-", "*", "/", "%", "^", "==", "!=", "<", ">", "<=", ">=")
UNARY_OPS = ("not", "neg", "pos", "round", "indicator", "exp", "log", "sqrt", "abs")

def _operator(apply: Callable[..., Any], op: str) -> _Entry:
    """The entry of an arithmetic or comparison op: `apply(op, *atoms, exact=...)`."""
    return lambda params, exact: partial(apply, op, exact=exact)


_TABLE: dict[str, _Entry] = {
    **{op: _operator(semantics.binary, op) for op in BINARY_OPS},
    **{op: _operator(semantics.unary, op) for op in UNARY_OPS},
    # on s-ops `and`/`or` always give bools (docs/language.md), unlike atom `and`/`or`
    "and": lambda p, exact: partial(semantics.sop_logic, "and"),
    "or": lambda p, exact: partial(semantics.sop_logic, "or"),
    "where": lambda p, exact: semantics.where,
    "lookup": lambda p, exact: partial(semantics.index, p[0]),
    "member": lambda p, exact: lambda x: semantics.member(x, p[0]),
    "assert": lambda p, exact: lambda x: semantics.assertion(x, *p),
}

OPS = frozenset(_TABLE)


def atom_function(op: str, params: Sequence[Any] = (), *, exact: bool = False) -> Callable[..., Any]:
    """The function from one position's input atoms to the Map's value there.
    `params` are the Map's (a lookup table, a member list, an assert's message and notes);
    it raises the RaspError the interpreter reports (without a span)."""
    return _TABLE[op](params, exact)
