"""Fused evaluation of a few graph patterns that the library builds often, computed from
the pattern's inputs without materialising its (batch, n, n) selectors where possible.
Each gives exactly the values (and types) of the unfused nodes; where a fast form does not
apply to the values at hand it computes the unfused nodes from the same inputs.

- gather: `aggregate(select(indices, q, ==), v)`: query i selects key q[i] if it is a
  position, else none: one gather (reverse, `x[i]`-style indexing).
- scatter: `aggregate(select(x, indices, ==), v)`: query i selects the keys k with
  x[k] == i; when no query selects two keys, a scatter of the positions and one gather
  (the last step of the library's `sort`).
- before: `select(k, k, <) or (select(k, k, ==) and select(indices, indices, <))` (the
  library's `sort`): one compare of the integer key k·n + index (strings by code point).
- width: the library's `selector_width(s)` and `length` (stdlib.rasp: a mean over
  `s or key0` and `round`; rasp_sim/library_patterns.py finds them): the number of keys
  each query of s selects, a row count.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np

from .. import graph
from ..library_patterns import selector_width_of
from .attention import aggregate, gathered, row_counts, select
from .columns import INT64_MAX, max_abs
from .elementwise import _string_ranks, compare

Kind = Literal["gather", "scatter", "before", "width"]


@dataclass(frozen=True)
class Fused:
    """A node computed by its pattern's fused form from `inputs` (not its children)."""

    kind: Kind
    inputs: tuple[graph.Node, ...]


def find(nodes: list[graph.Node]) -> dict[graph.Node, Fused]:
    """The fused forms of the nodes that match a pattern."""
    found = {}
    for node in nodes:
        for match in _MATCHERS:
            fused = match(node)
            if fused is not None:
                found[node] = fused
                break
    return found


def compute(fused: Fused, node: graph.Node, inputs: list[Any], n: int, exact: bool) -> Any:
    """The value of `node` from the values of `fused.inputs`."""
    if fused.kind == "width":
        return row_counts(inputs[0])
    if fused.kind == "before":
        return _before(inputs[0], exact)
    assert isinstance(node, graph.Aggregate)
    indices = np.arange(n, dtype=np.int64)[None, :]
    if fused.kind == "gather":
        queries, values = inputs
        if queries.dtype.kind == "i":
            selected = (queries >= 0) & (queries < n)
            return gathered(values, np.where(selected, queries, 0), selected, node.default, exact)
        sel = select(indices, queries, "==", exact)
    else:
        keys, values = inputs
        if keys.dtype.kind == "i":
            out = _scatter(keys, values, n, node.default, exact)
            if out is not None:
                return out
        sel = select(keys, indices, "==", exact)
    return aggregate(sel, values, node.default, node.reduction, exact)


def _scatter(keys: np.ndarray, values: Any, n: int, default: Any, exact: bool) -> Any:
    """`aggregate(select(keys, indices, ==), values)` when no query selects two keys: the
    key each query selects, by scattering the positions k to the queries keys[k]."""
    rows, positions = np.nonzero((keys >= 0) & (keys < n))
    slots = rows * n + keys[rows, positions]
    counts = np.bincount(slots, minlength=keys.shape[0] * n)
    if counts.max(initial=0) > 1:
        return None
    chosen = np.zeros(keys.shape[0] * n, dtype=np.int64)
    chosen[slots] = positions
    return gathered(values, chosen.reshape(keys.shape), counts.reshape(keys.shape) == 1, default, exact)


def _before(keys: Any, exact: bool) -> np.ndarray:
    """M[q, k] = keys[k] < keys[q] or (keys[k] == keys[q] and k < q)."""
    n = keys.shape[-1]
    kind = keys.dtype.kind
    if kind == "U":
        keys = _string_ranks(keys, keys)[0]
        kind = "i"
    elif kind == "b":
        keys = keys.astype(np.int64)
        kind = "i"
    if kind in "iu" and (max_abs(keys.astype(np.int64)) + 1) * n <= INT64_MAX:
        combined = keys.astype(np.int64) * n + np.arange(n)
        return select(combined, combined, "<", exact)
    indices = np.arange(n, dtype=np.int64)[None, :]
    return select(keys, keys, "<", exact) | (
        select(keys, keys, "==", exact) & select(indices, indices, "<", exact))


# ------------------------------------------------------------------------------ patterns


def _is_select(node: Any, op: str) -> bool:
    return isinstance(node, graph.Select) and node.op == op


def _is_full(node: Any, value: int) -> bool:
    return isinstance(node, graph.Full) and type(node.value) is int and node.value == value


def _gather_of(node: graph.Node) -> Fused | None:
    if isinstance(node, graph.Aggregate) and _is_select(node.selector, "=="):
        sel = node.selector
        assert isinstance(sel, graph.Select)
        if isinstance(sel.keys, graph.Indices):
            return Fused("gather", (sel.queries, node.values))
        if isinstance(sel.queries, graph.Indices):
            return Fused("scatter", (sel.keys, node.values))
    return None


def _before_of(node: graph.Node) -> Fused | None:
    if not isinstance(node, graph.SelectorOr):
        return None
    less, ties = node.left, node.right
    if not (_is_select(less, "<") and isinstance(ties, graph.SelectorAnd)):
        return None
    assert isinstance(less, graph.Select)
    key = less.keys
    if less.queries is not key:
        return None
    equal, earlier = ties.left, ties.right
    if not (_is_select(equal, "==") and _is_select(earlier, "<")):
        return None
    assert isinstance(equal, graph.Select) and isinstance(earlier, graph.Select)
    if equal.keys is not key or equal.queries is not key:
        return None
    if not (isinstance(earlier.keys, graph.Indices) and isinstance(earlier.queries, graph.Indices)):
        return None
    return Fused("before", (key,))


def _width_of(node: graph.Node) -> Fused | None:
    sel = selector_width_of(node) if isinstance(node, graph.SOp) else None
    return None if sel is None else Fused("width", (sel,))


_MATCHERS: tuple[Callable[[graph.Node], Fused | None], ...] = (_gather_of, _before_of, _width_of)
