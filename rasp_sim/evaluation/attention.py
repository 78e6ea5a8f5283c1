"""Selectors as (batch, n, n) bool arrays and `aggregate` as a masked mean (6.4, 6.5).

Aggregate, per query q with S = the selected keys:

- |S| = 0: the default; |S| = 1: the selected value unchanged (a gather, any dtype);
- |S| >= 2: the mean `sum(S) * 1.0 / |S|` (or the `sum` extension's sum), allowed only if
  the whole value row type-checks int or float.

The means are **bit-equal** to the original's left-to-right Python `sum`, not merely close:

- int64 values: the sum is exact (float64 matmul while max|v|·n <= 2^53, where every
  partial sum is an exactly representable integer, so BLAS's summation order cannot
  matter; int64 arithmetic beyond that), and `float(exact_sum) / |S|` is what Python's
  `int_sum * 1.0 / |S|` computes;
- float64 values: a masked `np.cumsum` along the key axis, which NumPy accumulates strictly
  left to right (unlike `sum`/matmul, which use pairwise or BLAS order), plus 0.0 (Python's
  sum starts from the int 0, so a sum is never -0.0);
- anything else (mixed int/float rows, big ints, exact-mode Fractions): object arrays
  reduced by Python's own `+`, sequentially, with `semantics.finish_mean`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import semantics
from .columns import FLOAT_EXACT_INT, INT64_MAX, constant, from_objects, max_abs
from .elementwise import compare


def select(keys: np.ndarray, queries: np.ndarray, op: str, exact: bool) -> np.ndarray:
    """M[b, q, k] = keys[b, k] op queries[b, q]."""
    return compare(op, keys[:, None, :], queries[:, :, None], exact)


def aggregate(
    sel: np.ndarray, values: np.ndarray, default: Any, reduction: str, exact: bool
) -> np.ndarray:
    """The aggregate column of `values` (b, n) through `sel` (b, n, n)."""
    count = sel.sum(axis=-1)
    first = sel.argmax(axis=-1)
    single = np.take_along_axis(values, first, axis=-1)  # the selected key when |S| = 1
    none, multi = count == 0, count >= 2
    if not none.any() and not multi.any():
        return single
    reduced = _reduce(sel, values, count, multi, reduction, exact) if multi.any() else None
    default_col = constant(default, single.shape, exact=exact)
    if reduced is None or reduced.dtype == single.dtype:
        fill = single if reduced is None else np.where(multi, reduced, single)
        if fill.dtype.kind == default_col.dtype.kind and fill.dtype.kind != "O":
            return np.where(none, default_col, fill)
    out = single.astype(object)
    if reduced is not None:
        out[multi] = reduced.astype(object)[multi]
    out[none] = default_col.astype(object)[none]
    return from_objects(out, exact=exact)


def _reduce(
    sel: np.ndarray, values: np.ndarray, count: np.ndarray, multi: np.ndarray,
    reduction: str, exact: bool,
) -> np.ndarray:
    """Means (or sums) for every query; only the `multi` entries are used."""
    _check_numeric_rows(values, multi.any(axis=-1), reduction)
    kind = values.dtype.kind
    n = values.shape[-1]
    if kind == "i" and max_abs(values) * n <= INT64_MAX:
        if max_abs(values) * n <= FLOAT_EXACT_INT:
            sums = np.matmul(sel.astype(np.float64), values.astype(np.float64)[..., None])
            sums = sums[..., 0].astype(np.int64)
        else:
            sums = np.matmul(sel.astype(np.int64), values[..., None])[..., 0]
        if reduction == "sum":
            return sums
        if not exact:
            return sums.astype(np.float64) / np.maximum(count, 1)
        return _finish_objects(sums.astype(object), count, multi, exact)
    if kind == "f" and not exact:
        masked = np.where(sel, values[:, None, :], 0.0)
        sums = np.cumsum(masked, axis=-1)[..., -1] + 0.0
        return sums if reduction == "sum" else sums / np.maximum(count, 1)
    masked = np.where(sel, values.astype(object)[:, None, :], 0)
    sums = np.add.reduce(masked, axis=-1) + 0  # sequential for object arrays
    if reduction == "sum":
        return from_objects(sums, exact=exact)
    return _finish_objects(sums, count, multi, exact)


def _finish_objects(
    sums: np.ndarray, count: np.ndarray, multi: np.ndarray, exact: bool
) -> np.ndarray:
    out = np.zeros(sums.shape, dtype=object)
    finish = np.frompyfunc(lambda s, c: semantics.finish_mean(s, c, exact=exact), 2, 1)
    try:
        out[multi] = finish(sums[multi], count[multi])
    except OverflowError as exc:
        raise semantics.python_error(exc, "aggregate") from None
    return from_objects(out, exact=exact)


def _check_numeric_rows(values: np.ndarray, rows: np.ndarray, reduction: str) -> None:
    """6.5: averaging needs the entire value row to be int- or float-typed."""
    what = "average" if reduction == "mean" else "sum"
    if values.dtype.kind in "if":
        return
    for row in values[rows]:  # a bool or string row fails at once
        semantics.check_numeric(row.tolist(), what)
