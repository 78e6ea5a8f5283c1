"""The text of a drawn node: its name, and the operation it computes written out with
its operands, constants folded in (`draw` draws no node for a constant).

An operand is written as its name when it has one, its value when it is a constant
(`graph.Full`), and `·` otherwise (an unnamed intermediate: the arrow shows where it
comes from). So `opp_index = length - indices - 1` is two boxes, `length - indices` and
`opp_index` over `· - 1`.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from ..core import graph
from ..language.analyse import node_label
from ..base.text import short_repr

_OPERAND_CHARS = 16  # a constant longer than this (a lookup table) is cut
_FLOAT_DIGITS = 4  # significant digits of a float in a label (computation keeps them all)
_INFIX = {"+", "-", "*", "/", "%", "^", "==", "!=", "<", ">", "<=", ">=", "and", "or"}
_PREFIX = {"neg": "-", "pos": "+", "not": "not "}
_SELECTOR_WORDS: dict[type, str] = {graph.SelectorAnd: "and", graph.SelectorOr: "or"}


def shown(value: Any, limit: int) -> str:
    """`value` as a label writes it: at most `limit` characters, floats rounded to
    _FLOAT_DIGITS significant digits (`2.609`, not `2.6088593650139136`)."""
    return short_repr(_rounded(value, limit), limit)


def _rounded(value: Any, items: int) -> Any:
    """`value` with its floats rounded, NumPy values as Python's; a container keeps its
    first `items` elements (each takes a character or more, so the label is cut there
    anyway, and a column may have millions)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float):
        return float(f"{value:.{_FLOAT_DIGITS}g}")
    if isinstance(value, (list, tuple)):
        return type(value)(_rounded(v, items) for v in value[:items])
    if isinstance(value, dict):
        return {k: _rounded(v, items) for k, v in list(value.items())[:items]}
    return value


def operand(node: graph.Node) -> str:
    """How `node` is written where it is used."""
    if isinstance(node, graph.Full):
        if isinstance(node.value, Fraction):  # exact mode's constants, as written: 1/10
            return str(node.value)
        return shown(node.value, _OPERAND_CHARS)
    if node.name or isinstance(node, (graph.Tokens, graph.Indices)):
        return node_label(node)
    return "·"


def operation(node: graph.Node, name_of: Callable[[graph.Node], str] = operand) -> str:
    """The operation `node` computes, over its operands as `name_of` writes them."""
    if isinstance(node, graph.Map):
        args = [name_of(child) for child in node.inputs]
        if node.op in _INFIX and len(args) == 2:
            return f"{args[0]} {node.op} {args[1]}"
        if node.op in _PREFIX:
            return _PREFIX[node.op] + args[0]
        if node.op == "where":
            return f"{args[1]} if {args[0]} else {args[2]}"
        if node.op == "lookup":
            return f"{shown(node.params[0], _OPERAND_CHARS)}[{args[0]}]"
        if node.op == "member":
            return f"{args[0]} in {shown(node.params[0], _OPERAND_CHARS)}"
        if node.op == "assert":
            return f"assert({args[0]})"
        return f"{node.op}({', '.join(args)})"
    if isinstance(node, graph.Select):
        return f"select({name_of(node.keys)}, {name_of(node.queries)}, {node.op})"
    if isinstance(node, graph.Aggregate):
        word = "aggregate" if node.reduction == "mean" else f"aggregate {node.reduction}"
        default = "" if node.default == 0 else f", {shown(node.default, _OPERAND_CHARS)}"
        return f"{word}({name_of(node.selector)}, {name_of(node.values)}{default})"
    if type(node) in _SELECTOR_WORDS:
        left, right = node.children()
        return f"{name_of(left)} {_SELECTOR_WORDS[type(node)]} {name_of(right)}"
    if isinstance(node, graph.SelectorNot):
        return f"not {name_of(node.operand)}"
    return node_label(node)


def node_text(node: graph.Node) -> str:
    """A node's label: its name (if any) over its operation; an input is its name."""
    if isinstance(node, (graph.Tokens, graph.Indices, graph.Full)):
        return node_label(node)
    text = operation(node)
    return f"{node.name}\n{text}" if node.name and node.name != text else text
