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
  `s or key0` and `round`; rasp_sim/core/library_patterns.py finds them): the number of keys
  each query of s selects, a row count.
- before width: the same of the library's sort selector `before` (below), whose keys
  (k, position) are all distinct: each query's rank among them, one stable argsort per
  input instead of the (batch, n, n) selector.
- sorted: the scatter of those ranks (the library's `sort`): the ranks are a
  permutation, and the key query q selects is the q-th of the stable order, so the
  result is that order's gather.
- equal width: the same of `s = select(k, q, ==)` (a histogram: how often each query's
  value occurs among the keys): each input's keys counted by value (a bincount of small
  integer codes) and each query's count looked up, O(n) per input instead of the O(n^2)
  selector, for ints, bools and strings (floats keep the selector: nan != nan).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np

from ..core import graph
from ..core.library_patterns import selector_width_of
from . import accelerate
from .attention import aggregate, gather, gathered, row_counts, select
from .columns import CHARACTERS, INT64_MAX, max_abs
from .elementwise import _string_ranks, compare

Kind = Literal["gather", "scatter", "sorted", "before", "width", "before width",
               "equal width"]


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
    if fused.kind == "gather" and inputs[0].dtype.kind == "i":  # first: reverse's, on one input
        assert isinstance(node, graph.Aggregate)
        return _gather(node, inputs[0], inputs[1], n, exact)
    if fused.kind == "width":
        return row_counts(inputs[0])
    if fused.kind == "equal width":
        return _equal_width(inputs[0], inputs[1], exact)
    if fused.kind == "before width":
        return _before_width(inputs[0], exact)
    if fused.kind == "before":
        return _before(inputs[0], exact)
    assert isinstance(node, graph.Aggregate)
    if fused.kind == "sorted":
        keys, values = inputs
        out = _sorted_values(keys) if values is keys else None
        if out is not None:  # `sort(k, k)`: the keys in ascending order
            return out
        order = _stable_order(keys)
        if order is not None:  # every query selects one key: no default to place
            return gather(values, order)
        inputs = [row_counts(_before(keys, exact)), values]
    indices = np.arange(n, dtype=np.int64)[None, :]
    if fused.kind == "gather":
        queries, values = inputs
        sel = select(indices, queries, "==", exact)
    else:
        keys, values = inputs
        if keys.dtype.kind == "i":
            out = _scatter(keys, values, n, node.default, exact)
            if out is not None:
                return out
        sel = select(keys, indices, "==", exact)
    return aggregate(sel, values, node.default, node.reduction, exact)


def _gather(node: graph.Aggregate, queries: np.ndarray, values: Any, n: int,
            exact: bool) -> Any:
    """`aggregate(select(indices, queries, ==), values)` for integer queries: query i
    selects key queries[i] where that is a position."""
    if _all_positions(queries, n):  # every query selects (reverse)
        return gather(values, queries)
    selected = _positions(queries, n)
    return gathered(values, np.where(selected, queries, 0), selected, node.default, exact)


def _positions(queries: np.ndarray, n: int) -> np.ndarray:
    """Where the integer queries are positions (in range(n))."""
    # both bounds in one comparison: a negative int64 read as a uint64 is above n
    return (queries.view(np.uint64) < n if queries.dtype == np.int64
            else (queries >= 0) & (queries < n))


# Whether a shared row of queries is all positions, by the row's identity (the row kept in
# the entry, so that its id is not reused): such a row is one of the engine's kept
# invariant values (evaluate.py's `_Invariants`: read-only, never changed), e.g.
# reverse's `length - indices - 1`, and the test, two NumPy calls, was 1.3 of the 10 us
# of a call on one input (docs/benchmarks.md).
_KNOWN_ROWS: dict[int, tuple[np.ndarray, int, bool]] = {}
_KNOWN_ROWS_LIMIT = 256


def _all_positions(queries: np.ndarray, n: int) -> bool:
    shared = queries.shape[0] == 1 and not queries.flags.writeable
    known = _KNOWN_ROWS.get(id(queries)) if shared else None
    if known is not None and known[0] is queries and known[1] == n:
        return known[2]
    answer = bool(np.count_nonzero(_positions(queries, n)) == queries.size)
    if shared:
        if len(_KNOWN_ROWS) >= _KNOWN_ROWS_LIMIT:
            _KNOWN_ROWS.clear()
        _KNOWN_ROWS[id(queries)] = (queries, n, answer)
    return answer


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


def _equal_width(keys: Any, queries: Any, exact: bool) -> np.ndarray:
    """row_counts(select(keys, queries, ==)): per query, how many keys equal it, from a
    count of each input's keys per value: a table (bincount) where inputs x values is
    small, else the sorted (input, value) pairs and a binary search."""
    if keys is queries and keys.shape[0] == 1 and keys.dtype == CHARACTERS:
        # one input's characters (a histogram called on one input): their code points
        # counted from 0, four NumPy calls where the general path takes ten (2.5 us less).
        # The count runs on the points clipped to the table's size, a cheaper bound than
        # their max (0.5 us): a clipped point fills the table's last slot, and the
        # general path takes over.
        points = keys.view(np.uint32)
        size = 4 * keys.shape[1] + 256
        counts = np.bincount(np.minimum(points[0], size))
        if len(counts) <= size:
            return counts.take(points)
    codes = _equality_codes(keys, queries)
    if codes is None:
        return row_counts(select(keys, queries, "==", exact))
    key_codes, query_codes, low, size = codes
    if key_codes.size >= accelerate.MIN_ELEMENTS:  # (no call at all for a small batch)
        counted = accelerate.equal_counts(key_codes, query_codes, low, size)
        if counted is not None:  # the compiled kernel (evaluation/accelerate.py)
            return counted
    rows, n = key_codes.shape
    batch = max(rows, query_codes.shape[0])
    # each (input, value) pair's number, input i's values from i * size on: one add of the
    # codes (any integer dtype) and an int64 column of offsets, which also takes off `low`
    offsets = (np.arange(batch if rows > 1 else 1, dtype=np.int64) * size - low)[:, None]
    key_slots = np.add(key_codes, offsets, dtype=np.int64)
    query_slots = key_slots if query_codes is key_codes else np.add(
        np.broadcast_to(query_codes, (batch, n)), offsets, dtype=np.int64)
    if rows * size <= 4 * key_codes.size + (1 << 16):
        # `take`: 1.5x fancy indexing on a batch
        return np.bincount(key_slots.reshape(-1), minlength=rows * size).take(query_slots)
    slots, counts = np.unique(key_slots, return_counts=True)
    at = np.minimum(np.searchsorted(slots, query_slots), slots.size - 1)
    return np.where(slots[at] == query_slots, counts[at], 0)


def _equality_codes(keys: Any, queries: Any) -> tuple[Any, Any, int, int] | None:
    """Integer codes for the keys and queries, equal exactly where the values are ==, and
    (low, size) with every code in range(low, low + size): the values themselves where
    they span a short range (single characters as their code points, bools as bytes),
    else their ranks among the distinct values (low 0); None for values whose == is not
    that of integer codes (floats, where nan != nan; objects and mixed columns; strings
    against numbers, which the selector compares). Where the keys and queries are one
    column, so are the codes."""
    same = keys is queries
    key_kind = keys.dtype.kind if isinstance(keys, np.ndarray) else "O"
    query_kind = key_kind if same else (
        queries.dtype.kind if isinstance(queries, np.ndarray) else "O")
    if key_kind == query_kind == "U":
        if keys.dtype == CHARACTERS and (same or queries.dtype == CHARACTERS):
            keys = keys.view(np.uint32)
            queries = keys if same else queries.view(np.uint32)
        else:
            keys, queries = _string_ranks(keys, queries)
    elif key_kind not in "bi" or query_kind not in "bi":
        return None
    if not (keys.size and queries.size):
        return None
    # bools as bytes: NumPy has no boolean subtraction
    columns = [c.view(np.uint8) if c.dtype.kind == "b" else c
               for c in ((keys,) if same else (keys, queries))]
    limit = 4 * keys.shape[-1] + 256
    low = min([int(column.min()) for column in columns])
    size = max([int(column.max()) for column in columns]) - low + 1
    if size > limit:
        values, ranks = np.unique(np.concatenate([c.reshape(-1) for c in columns]),
                                  return_inverse=True)
        low, size, ranks = 0, len(values), ranks.reshape(-1)
        columns = [ranks[:keys.size].reshape(keys.shape)]
        if not same:
            columns.append(ranks[keys.size:].reshape(queries.shape))
    return columns[0], columns[-1], low, size


def _before_width(keys: Any, exact: bool) -> np.ndarray:
    """row_counts(_before(keys)): how many keys sort before each query, ties broken by
    position, which is each query's place in a stable sort of its input's keys."""
    order = _stable_order(keys)
    if order is None:
        return row_counts(_before(keys, exact))
    ranks = np.empty(order.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, np.arange(order.shape[-1], dtype=np.int64), axis=-1)
    return ranks


def _sorted_values(keys: Any) -> np.ndarray | None:
    """Each input's keys in ascending order, for keys that are also the values: keys that
    tie are the same value (ints, bools, single characters), so the stable order's gather
    is any sort's result, and NumPy's default sort (vectorised for 32- and 64-bit
    integers: 0.06 us an input at n = 64, against 0.27 for the stable argsort of one-byte
    codes, docs/benchmarks.md) gives it. None for keys NumPy orders otherwise (floats;
    strings longer than one character; objects and mixed columns)."""
    if keys.dtype == CHARACTERS:  # by code point, as Python orders one-character strs
        out = keys.view(np.uint32).copy()
    elif keys.dtype.kind in "iub":
        out = keys.copy()
    else:
        return None
    out.sort()  # (the method: np.sort's dispatch is half its cost on one input)
    return out.view(keys.dtype)


def _stable_order(keys: Any) -> np.ndarray | None:
    """Each input's positions in ascending order of the keys, ties by position (a stable
    sort), or None where NumPy's order is not RASP's (`_orderable_codes`)."""
    codes = _orderable_codes(keys)
    return None if codes is None else np.argsort(codes, axis=-1, kind="stable")


def _orderable_codes(keys: Any) -> np.ndarray | None:
    """Integers ordered as the keys are by < (strings by code point, bools as 0 and 1), or
    None for values whose < NumPy's sort does not follow (floats, where nan is unordered;
    objects and mixed columns)."""
    kind = keys.dtype.kind
    if kind == "U":
        return _string_ranks(keys, keys)[0]
    if kind == "b":
        return keys.astype(np.int64)
    return keys if kind in "iu" else None


def _before(keys: Any, exact: bool) -> np.ndarray:
    """M[q, k] = keys[k] < keys[q] or (keys[k] == keys[q] and k < q)."""
    n = keys.shape[-1]
    codes = _orderable_codes(keys)
    if codes is not None and (max_abs(codes.astype(np.int64)) + 1) * n <= INT64_MAX:
        combined = codes.astype(np.int64) * n + np.arange(n)
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
            width = _width_of(sel.keys)
            if width is not None and width.kind == "before width":
                return Fused("sorted", (width.inputs[0], node.values))
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
    if sel is None:
        return None
    before = _before_of(sel)
    if before is not None:
        return Fused("before width", before.inputs)
    if _is_select(sel, "=="):
        assert isinstance(sel, graph.Select)
        return Fused("equal width", (sel.keys, sel.queries))
    return Fused("width", (sel,))


_MATCHERS: tuple[Callable[[graph.Node], Fused | None], ...] = (_gather_of, _before_of, _width_of)
