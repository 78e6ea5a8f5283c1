"""The atom-level functions of Map nodes, as the lowering hands them to tracr."""
from __future__ import annotations

from typing import Any, Callable

from rasp_sim.core import atom_functions, semantics
from rasp_sim.core import graph as g
from rasp_sim.base.errors import RaspError

from .bases import plain, typed


# Marks "not a constant" (a value may legitimately be None): _Translator.constant's answer.
NOT_CONSTANT = object()


def atom_function(node: g.Map) -> Callable[..., Any]:
    """The Map's value at one position, from rasp_sim.core.atom_functions (the interpreter's
    table), as an element of an s-op: a value no sequence can hold (`(-1) ^ 0.5` is
    complex, a lookup table may hold a list) is the interpreter's type error there."""
    fn = atom_functions.atom_function(node.op, node.params)

    def element(*args: Any) -> Any:
        value = fn(*args)
        if semantics.atom_type(value) is None:
            semantics.sequence_type([value])  # raises the interpreter's error for it
        return value
    return element


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
