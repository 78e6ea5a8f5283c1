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

from typing import Any

import numpy as np

from .. import semantics
from ..limits import check_rational_sum
from .columns import (
    FLOAT32_EXACT_INT,
    FLOAT_EXACT_INT,
    INT64_MAX,
    constant,
    from_objects,
    max_abs,
    mixed_numeric,
)
from .elementwise import compare


def select(keys: np.ndarray, queries: np.ndarray, op: str, exact: bool) -> np.ndarray:
    """M[b, q, k] = keys[b, k] op queries[b, q]."""
    return compare(op, keys[:, None, :], queries[:, :, None], exact)


def aggregate(
    sel: np.ndarray, values: np.ndarray, default: Any, reduction: str, exact: bool
) -> np.ndarray:
    """The aggregate column of `values` (b, n) through `sel` (b, n, n); either may have
    one row standing for the whole batch."""
    b = max(sel.shape[0], values.shape[0])
    sel = np.broadcast_to(sel, (b,) + sel.shape[1:])
    counted = _integral_counts_and_sums(sel, values)  # before broadcasting: see there
    values = np.broadcast_to(values, (b,) + values.shape[1:])
    count, sums = counted if counted is not None else (sel.sum(axis=-1), None)
    if sums is not None and values.dtype.kind == "i":
        single = sums  # the sum of one int is that int
    else:  # the selected key when |S| = 1
        single = np.take_along_axis(values, sel.argmax(axis=-1), axis=-1)
    none, multi = count == 0, count >= 2
    if not none.any() and not multi.any():
        return single
    reduced = _reduce(sel, values, count, sums, multi, reduction, exact) if multi.any() else None
    default_col = constant(default, single.shape, exact=exact)
    merged = _merge_same_kind(
        [(~none & ~multi, single), (multi, reduced), (none, default_col)])
    if merged is not None:
        return merged
    default_atom = default_col[:1, :1].astype(object)[0, 0]  # one atom, not a full column
    if _certainly_mixed(single, reduced, default_col, none, multi):
        return _mixed_column(single, reduced, default_col, default_atom, none, multi)
    out = single.astype(object)
    if reduced is not None:
        out[multi] = reduced[multi].astype(object)
    out[none] = default_atom
    return from_objects(out, exact=exact)


def _mixed_column(
    single: np.ndarray, reduced: np.ndarray | None, default_col: np.ndarray, default_atom: Any,
    none: np.ndarray, multi: np.ndarray,
) -> np.ndarray:
    """The object column of int single selections, float means and the default, built from
    its float64 values (recorded with it): every entry starts as that float, then the
    entries that are ints (usually few) are written over."""
    fill = single.astype(np.float64) if reduced is None else np.where(multi, reduced, single)
    as_float = np.where(none, default_col.astype(np.float64), fill) if none.any() else fill
    out = as_float.astype(object)
    ones = ~none & ~multi
    out[ones] = single[ones].astype(object)
    if default_col.dtype.kind == "i":
        out[none] = default_atom
    return mixed_numeric(out, as_float)


def _merge_same_kind(parts: list[tuple[np.ndarray, np.ndarray | None]]) -> np.ndarray | None:
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


def _certainly_mixed(
    single: np.ndarray, reduced: np.ndarray | None, default_col: np.ndarray,
    none: np.ndarray, multi: np.ndarray,
) -> bool:
    """True when the result holds both ints (within 2^53) and floats: then it is a legal
    float-typed column that no dtype narrower than object can hold, and its float64
    values can be recorded for later arithmetic."""
    if single.dtype.kind != "i" or max_abs(single) >= FLOAT_EXACT_INT:
        return False
    if (reduced is not None and reduced.dtype.kind != "f") or default_col.dtype.kind not in "if":
        return False
    ints = (~none & ~multi) | (none & (default_col.dtype.kind == "i"))
    floats = multi | (none & (default_col.dtype.kind == "f"))
    return bool(ints.any() and floats.any())


def _reduce(
    sel: np.ndarray, values: np.ndarray, count: np.ndarray, sums: np.ndarray | None,
    multi: np.ndarray, reduction: str, exact: bool,
) -> np.ndarray:
    """Means (or sums) for every query; only the `multi` entries are used."""
    _check_numeric_rows(values, np.asarray(multi.any(axis=-1)), reduction)
    kind = values.dtype.kind
    if kind == "i" or (kind == "f" and not exact):
        if sums is None and kind == "i" and max_abs(values) * values.shape[-1] <= INT64_MAX:
            sums = np.matmul(sel.astype(np.int64), values[..., None])[..., 0]
        if sums is None and kind == "f":
            masked = np.where(sel, values[:, None, :], 0.0)
            sums = np.cumsum(masked, axis=-1)[..., -1] + 0.0  # strictly left to right
        if sums is not None:
            if reduction == "sum":
                return sums
            if not exact:
                return sums.astype(np.float64) / np.maximum(count, 1)
            return _finish_objects(sums.astype(object), count, multi, exact)
    rows = multi.any(axis=-1)  # other rows may hold strings: only these are numeric
    if exact and kind == "O":  # each input's whole row bounds what any query adds up
        for row in values[rows]:
            check_rational_sum(row.tolist(), "mean" if reduction == "mean" else "sum")
    masked = np.where(sel[rows], values[rows].astype(object)[:, None, :], 0)
    sums = np.zeros(count.shape, dtype=object)
    sums[rows] = np.add.reduce(masked, axis=-1) + 0  # sequential for object arrays
    if reduction == "sum":
        return from_objects(sums, exact=exact)
    return _finish_objects(sums, count, multi, exact)


# Up to this many nonzero values in a row for the whole batch, adding up the selector's
# columns is faster than casting the selector for a matrix product (measured at n = 64).
_GATHERED_KEYS = 8


def _integral_counts_and_sums(
    sel: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """|S| and the exact sums of an integer-valued column by BLAS products, or None.
    `values` may be one (1, n) row standing for the whole batch (then it is checked once).

    While max|v|·n fits the float mantissa, every partial sum in any order is an exactly
    representable integer, so the result equals the left-to-right sum."""
    if values.dtype.kind not in "if":
        return None
    if values.dtype.kind == "f":
        if not (np.all(np.isfinite(values)) and np.all(values == np.trunc(values))):
            return None
        bound = float(np.abs(values).max(initial=0.0)) * values.shape[-1]
    else:
        bound = max_abs(values) * values.shape[-1]
    if bound > FLOAT_EXACT_INT:
        return None
    counted = _counts_and_row_sums(sel, values) if values.shape[0] == 1 else None
    if counted is None:
        dtype = np.float32 if bound <= FLOAT32_EXACT_INT else np.float64
        # Two matrix-vector products: faster than one product with a (n, 2) matrix.
        cast = sel.astype(dtype)
        count = np.matmul(cast, np.ones(cast.shape[-1], dtype)).astype(np.int64)
        counted = count, np.matmul(cast, values.astype(dtype)[..., None])[..., 0]
    count, sums = counted
    return count, sums.astype(np.int64) if values.dtype.kind == "i" else sums.astype(np.float64) + 0.0


def _counts_and_row_sums(sel: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """|S| and the sums of one integral value row for the whole batch without casting the
    (b, n, n) selector to floats, or None: the counts add the selector's bytes (exact in
    uint8 while n < 256), and the sums are c·|S| for a constant row c, else the selected
    columns of the few nonzero values added up (exact: integers within 2^53)."""
    row, n = values[0], values.shape[-1]
    if n >= 256:
        return None
    nonzero = np.flatnonzero(row)
    constant_row = bool(np.all(row == row[0]))
    if not constant_row and len(nonzero) > _GATHERED_KEYS:
        return None
    count = np.einsum("...k->...", sel.view(np.uint8)).astype(np.int64)
    if constant_row:
        return count, count * row[0]
    sums = np.zeros(count.shape, row.dtype)
    for k in nonzero:
        sums += sel[..., k] * row[k]
    return count, sums


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
