"""The names the original's REPL gives s-ops built by operators, for display.

The original names every s-op an operator builds after its expression: `indices + 1` is
`( indices + 1 )`, `not b` is `( not b )`, `indicator(b)` is `I(b)`, a ternary
`x if c else y`; a name longer than 30 characters falls back to `s-op`
(`rasp_sim.language.values.set_display_name`). An operand is named by its own name (an s-op's
current display name) or, an atom, by `str`. Each function returns None where the
original gives no such name (atoms, selectors). The interpreter applies them only for a
host that displays them (the REPL); see `rasp_sim.language.interpreter.Host.names_expressions`.
"""
from __future__ import annotations

from typing import Any

from ..core import graph
from .values import Function, node_name


def _name(value: Any) -> str:
    if isinstance(value, (graph.SOp, graph.Selector)):
        return node_name(value)
    return value.name if isinstance(value, Function) else str(value)


def _has_sop(*values: Any) -> bool:
    return any(isinstance(v, graph.SOp) for v in values)


def binary(op: str, left: Any, right: Any) -> str | None:
    if not _has_sop(left, right) or _has_selector(left, right):
        return None
    if op in ("and", "or"):  # the original's own spelling: no space before ")"
        return f"( {_name(left)} {op} {_name(right)})"
    return f"( {_name(left)} {'pow' if op == '^' else op} {_name(right)} )"


def _has_selector(*values: Any) -> bool:
    return any(isinstance(v, graph.Selector) for v in values)


def unary(op: str, operand: Any) -> str | None:
    if not _has_sop(operand):
        return None
    return f"( {op} {_name(operand)} )"


def ternary(condition: Any, then: Any, otherwise: Any) -> str:
    return f"{_name(then)} if {_name(condition)} else {_name(otherwise)}"


def contains(item: Any, container: Any, container_variable: str | None) -> str | None:
    """`sop in list` is named `sop in l` (the list's variable, else its Python text);
    `atom in sop` is a comparison of an unnamed mean with 0."""
    if isinstance(item, graph.SOp):
        return f"{_name(item)} in {container_variable or str(container)}"
    if isinstance(container, graph.SOp):
        return "( s-op > 0 )"
    return None


def index(key: Any, target_variable: str | None, key_variable: str | None) -> str:
    """`s[i]`, `l[sop]`, `d[sop]`: the original names each side by its variable, or
    `out` (the name of an expression's value) when it is not a bare variable."""
    if isinstance(key, graph.SOp):
        return f"{target_variable or 'out'}[{key_variable or 'out'}]"
    return f"{target_variable or 'out'}[{key}]"


def builtin(name: str, args: list) -> str | None:
    if len(args) != 1 or not _has_sop(args[0]):
        return None
    if name == "round":
        return f"( round {_name(args[0])} )"
    if name == "indicator":
        return f"I({_name(args[0])})"
    return None
