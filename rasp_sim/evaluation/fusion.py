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
- width: the library's `selector_width(s)` (stdlib.rasp: a mean over `s or key0` and
  `round`): the number of keys each query of s selects, a row count.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np

from .. import graph
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


def _is_key0(node: Any) -> bool:
    return (_is_select(node, "==") and isinstance(node.keys, graph.Indices)
            and _is_full(node.queries, 0))


def _map(node: Any, op: str, arity: int) -> tuple[graph.SOp, ...] | None:
    if isinstance(node, graph.Map) and node.op == op and len(node.inputs) == arity:
        return node.inputs
    return None


def _width_of(node: graph.Node) -> Fused | None:
    """stdlib.rasp's selector_width: round(1 / aggregate(s or key0, indicator(indices ==
    0)) - 1 + aggregate(s and key0, 1, 0)), key0 = select(indices, 0, ==)."""
    rounded = _map(node, "round", 1)
    added = _map(rounded[0], "+", 2) if rounded else None
    minus = _map(added[0], "-", 2) if added else None
    if not (added and minus and _is_full(minus[1], 1)):
        return None
    divided = _map(minus[0], "/", 2)
    if not (divided and _is_full(divided[0], 1)):
        return None
    share, had = divided[1], added[1]
    if not (isinstance(share, graph.Aggregate) and isinstance(had, graph.Aggregate)):
        return None
    if share.reduction != "mean" or had.reduction != "mean" or not _is_full(had.values, 1):
        return None
    if not (type(had.default) is int and had.default == 0):
        return None
    plus, only = share.selector, had.selector
    if not (isinstance(plus, graph.SelectorOr) and isinstance(only, graph.SelectorAnd)):
        return None
    if plus.left is not only.left or not (_is_key0(plus.right) and _is_key0(only.right)):
        return None
    indicator = _map(share.values, "indicator", 1)
    first = _map(indicator[0], "==", 2) if indicator else None
    if not (first and isinstance(first[0], graph.Indices) and _is_full(first[1], 0)):
        return None
    return Fused("width", (plus.left,))


_MATCHERS: tuple[Callable[[graph.Node], Fused | None], ...] = (_gather_of, _before_of, _width_of)
