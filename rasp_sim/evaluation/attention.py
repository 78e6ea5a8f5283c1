"""Selectors as (batch, n, n) bool arrays and `aggregate` as a masked mean (6.4, 6.5).

Aggregate, per query q with S = the selected keys:

- |S| = 0: the default; |S| = 1: the selected value unchanged (a gather, any dtype);
- |S| >= 2: the mean `sum(S) * 1.0 / |S|` (or the `sum` extension's sum), allowed only if
  the whole value row type-checks int or float.

The means are **bit-equal** to the original's left-to-right Python `sum`, not merely close:

- int64 values, and float64 values that are all integers: the sum is exact (a float32
  or float64 BLAS matmul while max|v|·n fits the mantissa, 2^24 or 2^53, so that every
  partial sum in any order is an exactly representable integer; int64 arithmetic beyond
  that; for one value row shared by the whole batch that is constant or has few nonzero
  values, c·|S| or the selected columns added up, exact for the same reason), and
  `float(exact_sum) / |S|` is what Python's `int_sum * 1.0 / |S|` computes;
- other float64 values: a masked `np.cumsum` along the key axis, which NumPy accumulates
  strictly left to right (unlike `sum`/matmul, which use pairwise or BLAS order), plus
  0.0 (Python's sum starts from the int 0, so a sum is never -0.0);
- anything else (mixed int/float rows, big ints, exact-mode Fractions): object arrays
  reduced by Python's own `+`, sequentially, with `semantics.finish_mean`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import semantics
from ..base.limits import check_rational_sum
from .columns import (
    CHARACTERS,
    FLOAT32_EXACT_INT,
    FLOAT_EXACT_INT,
    INT64_MAX,
    MixedColumn,
    as_array,
    broadcast,
    constant,
    from_objects,
    int_bound,
    max_abs,
    mixed,
    numeric_parts,
)
from .elementwise import compare


def select(keys: Any, queries: Any, op: str, exact: bool) -> np.ndarray:
    """M[b, q, k] = keys[b, k] op queries[b, q]."""
    if keys.dtype.kind == queries.dtype.kind == "i":
        keys, queries = _narrow(keys, queries)
    return compare(op, keys[:, None, :], queries[:, :, None], exact)


def _narrow(keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer keys and queries in the narrowest integer type that holds both: the
    (b, n, n) comparison reads them n times each, and narrower lanes compare faster."""
    if keys.size == 0 or queries.size == 0:
        return keys, queries
    low = min(int(keys.min()), int(queries.min()))
    high = max(int(keys.max()), int(queries.max()))
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return keys.astype(dtype), queries.astype(dtype)
    return keys, queries


def aggregate(sel: np.ndarray, values: Any, default: Any, reduction: str, exact: bool) -> Any:
    """The aggregate column of `values` (b, n) through `sel` (b, n, n); either may have
    one row standing for the whole batch. A selector that is one row for a batch of value
    rows (it reads no input: e.g. reverse's) is counted once, and its aggregate is one
    gather (every query selects at most one key) or one matrix product."""
    count = row_counts(sel)
    none, multi = count == 0, count >= 2
    single = gather(values, sel.argmax(axis=-1))
    reduced = _reduce(sel, values, count, multi, reduction, exact) if multi.any() else None
    return assemble(single, reduced, default, none, multi, exact)


def gathered(values: Any, keys: np.ndarray, selected: np.ndarray, default: Any, exact: bool) -> Any:
    """The aggregate where every query selects at most one key: `keys` (b, n) is the key
    query q selects where `selected` is true, and no key elsewhere."""
    single = gather(values, keys)
    return assemble(single, None, default, ~selected, np.zeros_like(selected), exact)


def assemble(
    single: Any, reduced: Any, default: Any, none: np.ndarray, multi: np.ndarray, exact: bool
) -> Any:
    """The aggregate column from its parts: `single` where one key is selected, `reduced`
    where several are (`multi`), the default where none is (`none`)."""
    if not none.any() and not multi.any():
        return single
    default_col = constant(default, (1, single.shape[-1]), exact=exact)
    none, multi = (np.broadcast_to(m, single.shape) for m in (none, multi))
    parts = [(~none & ~multi, single), (multi, reduced), (none, default_col)]
    merged = _merge_same_kind(parts)
    if merged is None:
        merged = _merge_numeric(parts)
    if merged is not None:
        return broadcast(merged, single.shape)
    out = single.astype(object)
    if reduced is not None:
        out[multi] = broadcast(reduced, single.shape)[multi].astype(object)
    out[none] = default_col[:1, :1].astype(object)[0, 0]
    return from_objects(out, exact=exact)


def row_counts(sel: np.ndarray) -> np.ndarray:
    """|S| per query: the selector's bytes added up (exact in uint8 while n < 256)."""
    if sel.shape[-1] < 256:
        return np.einsum("...k->...", sel.view(np.uint8)).astype(np.int64)
    return sel.sum(axis=-1)


def gather(values: Any, idx: np.ndarray) -> Any:
    """values[b, idx[b, q]] for every query, either operand one row for the batch."""
    if isinstance(values, MixedColumn):
        return mixed(gather(values.values, idx), gather(values.ints, idx))
    # ndarray.take: 1.5x NumPy's fancy indexing here, and without np.take's dispatch (a
    # few us on one input)
    if idx.shape[0] == 1:
        part = _progression(idx[0]) if values.shape[0] >= _SLICED_ROWS else None
        if part is not None:  # (reverse's flip) one strided copy: 2x `take` on <U1
            if values.dtype == CHARACTERS:  # copied as code points: NumPy's str copy is slower
                return values.view(np.uint32)[:, part].copy().view(CHARACTERS)
            return values[:, part].copy()
        return values.take(idx[0], axis=-1)
    if values.shape[0] == 1:
        return values[0].take(idx)
    # one gather from the flat values (np.take_along_axis builds an index array for every
    # axis: 4x slower for a batch of 10,000 at n = 64); every idx is in range(width)
    rows, width = values.shape
    return np.take(values.reshape(-1), idx + (np.arange(rows) * width)[:, None])


# A batch gather by one index row tries it as a slice from this many rows on: the test
# costs a few us, the slice saves ~0.02 us a row at n = 64 (docs/benchmarks.md)
_SLICED_ROWS = 256


def _progression(idx: np.ndarray) -> slice | None:
    """The slice that picks `idx` (an index row, every entry a position), if its entries
    step by one constant other than 0 (indices, reversed indices, every other one), else
    None."""
    if len(idx) < 2:
        return None
    start, step = int(idx[0]), int(idx[1]) - int(idx[0])
    if step == 0 or not np.array_equal(idx, np.arange(len(idx), dtype=np.int64) * step + start):
        return None
    stop = start + step * len(idx)
    return slice(start, stop if stop >= 0 else None, step)


def _merge_same_kind(parts: list[tuple[np.ndarray, Any]]) -> np.ndarray | None:
    """The result from its (where, column) parts when every part that is used somewhere
    has the same non-object dtype kind (then the element types are uniform and NumPy's
    `where` keeps the values), else None. Unused parts do not count: e.g. a column of
    float means with no single selection stays float64 though `single` holds ints."""
    used = [(mask, col) for mask, col in parts if col is not None and mask.any()]
    kinds = {col.dtype.kind for _, col in used}
    if len(kinds) != 1 or "O" in kinds:
        return None
    out = used[0][1]
    for mask, col in used[1:]:
        out = np.where(mask, col, out)
    return out


def _merge_numeric(parts: list[tuple[np.ndarray, Any]]) -> Any:
    """The result from its parts when each used one holds only ints (within 2^53) and
    floats: a mixed column, merged as float64 values and int masks; else None."""
    used = [(mask, numeric_parts(col)) for mask, col in parts if col is not None and mask.any()]
    if any(p is None for _, p in used):
        return None
    values, ints = used[0][1]  # type: ignore[misc]
    for mask, (v, i) in used[1:]:  # type: ignore[misc]
        values, ints = np.where(mask, v, values), np.where(mask, i, ints)
    return mixed(values, ints)


def _reduce(
    sel: np.ndarray, values: Any, count: np.ndarray, multi: np.ndarray, reduction: str,
    exact: bool,
) -> Any:
    """Means (or sums) for every query; only the `multi` entries are used."""
    _check_numeric_rows(values, np.asarray(multi.any(axis=-1)), reduction)
    b, n = max(sel.shape[0], values.shape[0]), values.shape[-1]
    kind = values.dtype.kind
    sums: Any = None
    if kind == "i" and max_abs(values) * n <= FLOAT_EXACT_INT:
        sums = _float_sums(sel, values.astype(np.float64)).astype(np.int64)
    elif kind == "i" and max_abs(values) * n <= INT64_MAX:
        sums = np.matmul(sel.astype(np.int64), values[..., None])[..., 0]
    if sums is not None:
        if reduction == "sum":
            return sums
        if not exact:
            return sums / np.maximum(count, 1)  # float(sum) / |S|, as Python's sum * 1.0 / |S|
        return _finish_objects(sums.astype(object), count, multi, exact)
    parts = numeric_parts(values) if not exact else None
    if parts is not None and int_bound(values) * n <= FLOAT_EXACT_INT:
        # Every partial sum of the ints is exact in float64, so adding in float64 left to
        # right is Python's `sum` (int + float converts the int exactly).
        floats, ints = parts
        sums = _float_sums(sel, floats)
        if reduction == "mean":
            return sums / np.maximum(count, 1)
        if kind == "f":
            return sums
        return mixed(sums, _selects_no_float(sel, ints))
    objects = as_array(np.broadcast_to(as_array(values), (b,) + values.shape[1:]))
    sel = np.broadcast_to(sel, (b,) + sel.shape[1:])
    multi = np.broadcast_to(multi, (b,) + multi.shape[1:])
    count = np.broadcast_to(count, multi.shape)
    rows = multi.any(axis=-1)  # other rows may hold strings: only these are numeric
    if exact and objects.dtype.kind == "O":  # each input's whole row bounds any query's sum
        for row in objects[rows]:
            check_rational_sum(row.tolist(), "mean" if reduction == "mean" else "sum")
    masked = np.where(sel[rows], objects[rows].astype(object)[:, None, :], 0)
    sums = np.zeros(count.shape, dtype=object)
    sums[rows] = np.add.reduce(masked, axis=-1) + 0  # sequential for object arrays
    if reduction == "sum":
        return from_objects(sums, exact=exact)
    return _finish_objects(sums, count, multi, exact)


def _selects_no_float(sel: np.ndarray, ints: np.ndarray) -> np.ndarray:
    """Where a query selects only int values (their sum is an int): for a selector shared
    by the batch, a matrix product counting the selected floats."""
    floats = ~ints
    if sel.shape[0] == 1:
        return np.matmul(floats.astype(np.float32), sel[0].T.astype(np.float32)) == 0
    return ~(sel & floats[:, None, :]).any(axis=-1)


def _float_sums(sel: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Python's left-to-right sums (from the int 0) of the selected float64 values.

    Integer values with max|v|·n within the mantissa: every partial sum in any order is an
    exactly representable integer, so a BLAS product (float32 while it fits 2^24) gives
    the left-to-right sum. A selector shared by the batch takes one (b, n) x (n, n)
    product; one value row shared by the batch, constant or with few nonzero values, is
    summed from the selector's columns. Other floats through a shared selector: the
    selected values added one key at a time in key order (one gather of the whole batch
    per step, as many steps as the widest query selects). Otherwise a masked `np.cumsum`
    along the key axis, which NumPy accumulates strictly left to right (unlike
    `sum`/matmul). Both add 0.0 first: a sum from the int 0 is never -0.0."""
    n = values.shape[-1]
    integral = bool(np.all(np.isfinite(values)) and np.all(values == np.trunc(values)))
    bound = float(np.abs(values).max(initial=0.0)) * n if integral else math.inf
    if bound <= FLOAT_EXACT_INT:
        if sel.shape[0] == 1:
            return np.matmul(values, sel[0].T.astype(np.float64)) + 0.0
        if values.shape[0] == 1:
            sums = _row_sums(sel, values[0])
            if sums is not None:
                return sums + 0.0
        dtype = np.float32 if bound <= FLOAT32_EXACT_INT else np.float64
        product = np.matmul(sel.astype(dtype), values.astype(dtype)[..., None])[..., 0]
        return product.astype(np.float64) + 0.0
    if sel.shape[0] == 1:
        return _ordered_sums(sel[0], values)
    b = max(sel.shape[0], values.shape[0])
    masked = np.where(sel, np.broadcast_to(values, (b,) + values.shape[1:])[:, None, :], 0.0)
    return np.cumsum(masked, axis=-1, out=masked)[..., -1] + 0.0


def _ordered_sums(sel: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Left-to-right sums of `values` (b, n) through one (n, n) selector: step j adds the
    j-th selected key of every query that selects more than j keys (queries selecting one
    key or none are the aggregate's gather or default, and are left at 0)."""
    counts = sel.sum(axis=-1)
    width = int(counts.max(initial=0))
    keys = np.argsort(~sel, axis=-1, kind="stable")[:, :width]  # selected keys, in order
    multi = np.flatnonzero(counts >= 2)
    multi = multi[np.argsort(-counts[multi], kind="stable")]  # widest first: step j adds
    active = np.searchsorted(-counts[multi], -np.arange(width), side="left")  # to a prefix
    # keys-major, so each step gathers and adds whole contiguous rows (3x the columns)
    by_key = np.ascontiguousarray(values.T)
    partial = np.zeros((len(multi), values.shape[0]))
    for j in range(width):
        partial[:active[j]] += by_key[keys[multi[:active[j]], j]]
    sums = np.zeros((values.shape[0], sel.shape[0]))
    sums[:, multi] = partial.T
    return sums


# Up to this many nonzero values in a row for the whole batch, adding up the selector's
# columns is faster than casting the selector for a matrix product (measured at n = 64).
_GATHERED_KEYS = 8


def _row_sums(sel: np.ndarray, row: np.ndarray) -> np.ndarray | None:
    """The sums of one integral value row for the whole batch without casting the
    (b, n, n) selector to floats, or None: c·|S| for a constant row c, else the selected
    columns of the few nonzero values added up (exact: integers within 2^53)."""
    nonzero = np.flatnonzero(row)
    if np.all(row == row[0]):
        return row_counts(sel) * row[0]
    if len(nonzero) > _GATHERED_KEYS:
        return None
    sums = np.zeros(sel.shape[:-1])
    for k in nonzero:
        sums += sel[..., k] * row[k]
    return sums


def _finish_objects(
    sums: np.ndarray, count: np.ndarray, multi: np.ndarray, exact: bool
) -> np.ndarray:
    out = np.zeros(sums.shape, dtype=object)
    count, multi = np.broadcast_to(count, sums.shape), np.broadcast_to(multi, sums.shape)
    finish = np.frompyfunc(lambda s, c: semantics.finish_mean(s, c, exact=exact), 2, 1)
    try:
        out[multi] = finish(sums[multi], count[multi])
    except OverflowError as exc:
        raise semantics.python_error(exc, "aggregate") from None
    return from_objects(out, exact=exact)


def _check_numeric_rows(values: Any, rows: np.ndarray, reduction: str) -> None:
    """6.5: averaging needs the entire value row to be int- or float-typed; `rows` are the
    (selector) rows where some query selects several keys."""
    what = "average" if reduction == "mean" else "sum"
    if values.dtype.kind in "if" or isinstance(values, MixedColumn) or not rows.any():
        return
    objects = np.asarray(values)
    checked = objects if len(rows) == 1 else objects[rows] if len(objects) > 1 else objects[:1]
    for row in checked:  # a bool or string row fails at once
        semantics.check_numeric(row.tolist(), what)
