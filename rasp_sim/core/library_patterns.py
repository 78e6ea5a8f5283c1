"""Recognising library patterns in the s-op graph: the standard library's `length` and
`selector_width` (the compiler lowers them to tracr's SelectorWidth; the evaluator counts
selector rows), and the library's `layer_norm` quotient (the compiler lowers it to a
LayerNorm block).

rasp-sim defines the first two in RASP (docs/language.md) with the BOS-less position-0 trick:
`length = round(1 / aggregate(full_s, indicator(indices == 0)))` and
`selector_width(sel) = round((1 / aggregate(sel or key0, indicator(indices == 0)) - 1)
+ aggregate(sel and key0, 1, 0))` with `key0 = select(indices, 0, ==)`. Compiled as written that
is a mean, a discretised 1/x and a rounding; tracr has the SelectorWidth primitive (one head
and one MLP) for exactly this value, so the translator lowers a recognised pattern to it
(validation re-checks it against the interpreter), and the evaluator computes it as the
number of keys each query selects (evaluation/fusion.py, tested against the nodes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeGuard

from rasp_sim.core import graph as g
from rasp_sim.core.atom_functions import atom_function
from rasp_sim.base.errors import RaspError


def selector_width_of(node: g.SOp) -> g.Selector | None:
    """The selector whose width `node` computes, if `node` is a library pattern for it."""
    return _length(node) or _selector_width(node)


def _full(node: g.Node, value: Any) -> bool:
    return isinstance(node, g.Full) and node.value == value and type(node.value) is not bool


def _map(node: g.Node, op: str, arity: int) -> TypeGuard[g.Map]:
    return isinstance(node, g.Map) and node.op == op and len(node.inputs) == arity


def _always(sel: g.Selector) -> bool:
    if not (isinstance(sel, g.Select) and isinstance(sel.keys, g.Full)
            and isinstance(sel.queries, g.Full)):
        return False
    try:
        return bool(atom_function(sel.op)(sel.keys.value, sel.queries.value))
    except RaspError:  # e.g. "a" < 0: the select fails on every input, selects nothing
        return False


def _is_first_position(node: g.Node) -> bool:
    """indicator(indices == 0)"""
    if not _map(node, "indicator", 1):
        return False
    test = node.inputs[0]
    return (_map(test, "==", 2) and isinstance(test.inputs[0], g.Indices)
            and _full(test.inputs[1], 0))


def _length(node: g.SOp) -> g.Selector | None:
    """round(1 / aggregate(<always-true select>, indicator(indices == 0))) -> that select."""
    if not _map(node, "round", 1) or not _map(node.inputs[0], "/", 2):
        return None
    one, mean = node.inputs[0].inputs
    if not (_full(one, 1) and isinstance(mean, g.Aggregate) and mean.reduction == "mean"):
        return None
    if _always(mean.selector) and _is_first_position(mean.values):
        return mean.selector
    return None


def _is_key0(sel: g.Node) -> bool:
    """select(indices, 0, ==)"""
    return (isinstance(sel, g.Select) and sel.op == "==" and isinstance(sel.keys, g.Indices)
            and _full(sel.queries, 0))


def _selector_width(node: g.SOp) -> g.Selector | None:
    """The stdlib's selector_width(sel) -> sel."""
    if not _map(node, "round", 1) or not _map(node.inputs[0], "+", 2):
        return None
    without, had = node.inputs[0].inputs
    if not (_map(without, "-", 2) and _full(without.inputs[1], 1)
            and _map(without.inputs[0], "/", 2) and _full(without.inputs[0].inputs[0], 1)):
        return None
    share = without.inputs[0].inputs[1]
    if not (isinstance(share, g.Aggregate) and isinstance(had, g.Aggregate)
            and share.reduction == had.reduction == "mean" and had.default == 0
            and isinstance(share.selector, g.SelectorOr)
            and isinstance(had.selector, g.SelectorAnd)
            and _is_first_position(share.values) and _full(had.values, 1)):
        return None
    sel, key0 = share.selector.left, share.selector.right
    if (_is_key0(key0) and had.selector.left is sel and _is_key0(had.selector.right)):
        return sel
    return None


@dataclass(frozen=True)
class LayerNormParts:
    """`(z - mean(sel, z)) / sqrt(mean(sel, dev * dev) + eps)`, dev the numerator."""

    values: g.SOp       # z
    selector: g.Selector
    eps: float


def layer_norm_of(node: g.SOp) -> LayerNormParts | None:
    """The parts of the library's layer_norm quotient (programs/attention.rasp), if `node`
    is one: dev / sqrt(var + eps) with dev = z - mu, mu = aggregate(sel, z, 0) and
    var = aggregate(sel, dev * dev, 0) over the same selector."""
    if not _map(node, "/", 2):
        return None
    dev, root = node.inputs
    if not (_map(dev, "-", 2) and _map(root, "sqrt", 1) and _map(root.inputs[0], "+", 2)):
        return None
    z, mu = dev.inputs
    var, eps = root.inputs[0].inputs
    if isinstance(var, g.Full):
        var, eps = eps, var
    if not (_mean(mu) and _mean(var) and var.selector is mu.selector and mu.values is z
            and _map(var.values, "*", 2) and all(x is dev for x in var.values.inputs)):
        return None
    if not (isinstance(eps, g.Full) and isinstance(eps.value, (int, float))
            and not isinstance(eps.value, bool) and 0 < eps.value < math.inf):
        return None
    return LayerNormParts(z, mu.selector, float(eps.value))


def _mean(node: g.Node) -> TypeGuard[g.Aggregate]:
    return (isinstance(node, g.Aggregate) and node.reduction == "mean" and node.default == 0
            and type(node.default) is not bool)
