"""Runtime values the interpreter adds to atoms, lists, dicts and graph nodes.

- `Function`: a `def`, closing over its defining environment *by reference*
  (docs/language.md), so rebinding a global after the definition is visible at the
  next call.
- `Applied`: the concrete result of `e(input)` (6.15). It is a plain list of the values
  (a list of atoms for an s-op, a list of rows of bools for a selector), so binding it
  binds the values (a documented divergence, 10.5); it also remembers what produced it,
  so the REPL can print it in the original's application format.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, TypeGuard

from . import ast
from ..core import graph
from .environment import Environment
from ..base.text import big_number


@dataclass(frozen=True, eq=False)
class Function:
    name: str
    params: tuple[str, ...]
    body: tuple[ast.Statement, ...]
    returns: tuple[ast.Expr, ...]
    closure: Environment
    creator: str  # "console" or the defining file's load name, for display
    span: ast.Span

    def describe(self) -> str:
        return f"{self.creator} function: {self.name}({', '.join(self.params)})"


class Applied(list):
    """Values of an s-op or selector applied to `input` (a list subclass: see above)."""

    def __init__(self, values: list, kind: Literal["s-op", "selector"], input: Any):
        super().__init__(values)
        self.kind = kind
        self.input = input


ATOM_TYPES = (bool, int, float, str, Fraction)


def is_atom(value: Any) -> bool:
    """The original's atoms: bool, int, float, str (and Fraction in exact mode)."""
    return isinstance(value, ATOM_TYPES)


def is_graph(value: Any) -> TypeGuard[graph.Node]:
    return isinstance(value, (graph.SOp, graph.Selector))


def kind_name(value: Any) -> str:
    """The original's general type names, for messages."""
    if isinstance(value, graph.SOp):
        return "s-op"
    if isinstance(value, graph.Selector):
        return "selector"
    if isinstance(value, Function):
        return "function"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    if is_atom(value):
        return "atom"
    return type(value).__name__


def describe(value: Any, cap: int | None = None) -> str:
    """A short description of a value for names and messages (the original's strdesc):
    graph nodes by name, strings quoted, lists/dicts recursively; a description longer
    than `cap` collapses to "(list)"/"(dict)"."""
    if is_graph(value):
        return node_name(value)
    if isinstance(value, Function):
        return value.describe()
    if isinstance(value, list):
        text = "[" + ", ".join(describe(v) for v in value) + "]"
        return "(list)" if cap is not None and len(text) > cap else text
    if isinstance(value, dict):
        text = "{" + ", ".join(f"{describe(k)}: {describe(v)}" for k, v in value.items()) + "}"
        return "(dict)" if cap is not None and len(text) > cap else text
    if isinstance(value, str):
        return f'"{value}"'
    return big_number(value) or str(value)


# The original caps display names at 30 characters, falling back to a generic name.
NAME_CAP = 30


def node_name(node: graph.Node) -> str:
    """A node's display name; an unnamed selector is "plain select", the name the
    original's `select` gives every selector it builds (composed ones included)."""
    if node.name is not None:
        return node.name
    return "s-op" if isinstance(node, graph.SOp) else "plain select"


def set_display_name(node: graph.Node, name: str) -> None:
    """Name a node for display, with the original's length cap."""
    if len(name) > NAME_CAP:
        name = "s-op" if isinstance(node, graph.SOp) else "sel"
    node.set_name(name)
