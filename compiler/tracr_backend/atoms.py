"""The atom-level functions of Map nodes, as the lowering hands them to tracr."""
from __future__ import annotations

from typing import Any, Callable

from rasp_sim import graph as g
from rasp_sim import semantics
from rasp_sim.errors import RaspError

from .bases import plain, typed


# Marks "not a constant" (a value may legitimately be None): _Translator.constant's answer.
NOT_CONSTANT = object()


def atom_function(node: g.Map) -> Callable[..., Any]:
    """The Map's operation on atoms, by rasp_sim.semantics (the one source of the rules)."""
    op, params = node.op, node.params
    if op == "where":
        return semantics.where
    if op in ("and", "or"):  # on s-ops these always give bools (LANGUAGE.md 6.3)
        return lambda a, b: semantics.sop_logic(op, a, b)
    if op == "lookup":
        return lambda x: semantics.index(params[0], x)
    if op == "member":
        return lambda x: semantics.member(x, params[0])
    if op == "assert":
        return lambda x: semantics.assertion(x, *params)
    if len(node.inputs) == 1:
        return lambda x: semantics.unary(op, x)
    return lambda a, b: semantics.binary(op, a, b)


def total(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` on stored categorical values (bases.typed), returning None where rasp-sim
    raises: the program is undefined on such inputs, and tracr maps None to no output
    direction (and skips it in value sets)."""
    def wrapped(*args: Any) -> Any:
        try:
            return typed(fn(*[plain(a) for a in args]))
        except RaspError:
            return None
    return wrapped
