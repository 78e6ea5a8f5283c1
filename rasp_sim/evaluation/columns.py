"""Value columns: how a batch of s-op values is held as a NumPy array.

An s-op's value on a batch of b inputs of length n is a (b, n) array of one of these
dtypes, each standing for one homogeneous Python element type:

| dtype | Python elements |
|---|---|
| bool | bool |
| int64 | int (not bool) |
| float64 | float (never in exact mode) |
| str_ ('U') | str, none ending in NUL (NumPy drops trailing NULs) |
| object | anything else: mixed bool/int or int/float rows, big ints, Fractions, rows of
  different types |

Fast elementwise paths only ever see the first four; `from_objects` turns the object
results of the generic path back into the narrowest faithful dtype and type-checks each
row (one row = one input's sequence, LANGUAGE.md 6.2).
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .. import semantics

INT64_MAX = np.iinfo(np.int64).max
FLOAT_EXACT_INT = 2**53  # every int of at most this magnitude is an exact float64
FLOAT32_EXACT_INT = 2**24  # ... an exact float32
_NUMERIC = {bool, int, float}


def from_objects(arr: np.ndarray, *, exact: bool = False) -> np.ndarray:
    """The narrowest faithful column for an object array of atoms; rows type-checked."""
    if arr.dtype != object:
        return arr
    flat = arr.ravel()
    if exact:
        arr = object_column(map(semantics.to_exact, flat), arr.shape)
        flat = arr.ravel()
    types = set(map(type, flat))
    if len(types) == 1:
        (t,) = types
        if t is bool:
            return arr.astype(bool)
        if t is int:
            try:
                return arr.astype(np.int64)
            except OverflowError:
                pass
        elif t is float:
            return arr.astype(np.float64)
        elif t is str and not any(s.endswith("\0") for s in flat):
            return arr.astype(str)
    if arr.ndim == 2 and not types <= _NUMERIC:  # int/float rows always type-check
        for row in arr:
            semantics.sequence_type(row)
    return arr


def object_column(items: Iterable[Any], shape: tuple[int, ...]) -> np.ndarray:
    """An object array from atoms, element by element (NumPy would recurse into lists)."""
    out = np.empty(int(np.prod(shape)), dtype=object)
    for i, x in enumerate(items):
        out[i] = x
    return out.reshape(shape)


def constant(value: Any, shape: tuple[int, ...], *, exact: bool = False) -> np.ndarray:
    """An atom broadcast to a column (a `Full` node): a read-only view, never written."""
    one = from_objects(object_column([value], (1,) * len(shape)), exact=exact)
    return np.broadcast_to(one, shape)


def concat_rows(parts: list[np.ndarray]) -> np.ndarray:
    """Stack chunk results along the batch axis without NumPy's type promotion
    (int64 with float64 would silently turn ints into floats)."""
    if len({p.dtype.kind for p in parts}) == 1:
        return np.concatenate(parts)
    return np.concatenate([p.astype(object) for p in parts])


class MixedNumericColumn(np.ndarray):
    """An object column of ints (within 2^53) and floats that carries its float64 values,
    known when aggregate built it, so that `float_view` need not scan it again. Never
    written after it is built. Arrays derived from it (views, slices, ufunc results) are
    instances too but carry nothing: NumPy does not copy instance attributes, so they
    see the class default None."""

    as_float: np.ndarray | None = None


def mixed_numeric(arr: np.ndarray, as_float: np.ndarray) -> np.ndarray:
    """Object column `arr` (ints within 2^53 and floats), carrying its float64 values
    `as_float`."""
    column = arr.view(MixedNumericColumn)
    column.as_float = as_float
    return column


def float_view(arr: np.ndarray) -> np.ndarray | None:
    """An object column of ints and floats as float64, if that is lossless (every int
    within 2^53), else None. Ops whose result does not depend on which elements were
    ints (`/`, comparisons, `round`, arithmetic with a float column) use it."""
    if arr.dtype != object:
        return None
    known = getattr(arr, "as_float", None)
    if known is not None:
        return known
    flat = arr.ravel()
    if not set(map(type, flat)) <= _NUMERIC:
        return None
    try:
        as_float = arr.astype(np.float64)
    except OverflowError:  # an int beyond float range
        return None
    if np.all(np.abs(as_float) < FLOAT_EXACT_INT):  # then every int was below 2^53 too
        return as_float
    ints = np.fromiter((type(x) is not float for x in flat), bool, len(flat)).reshape(arr.shape)
    if np.any(np.abs(as_float[ints]) >= FLOAT_EXACT_INT):  # 2^53 + 1 rounds to 2^53
        return None
    return as_float


def truth(arr: np.ndarray) -> np.ndarray | None:
    """Python truthiness, elementwise, for the fast dtypes; None for other object arrays."""
    view = float_view(arr)
    if view is not None:
        arr = view
    kind = arr.dtype.kind
    if kind == "b":
        return arr
    if kind in "if":
        return arr != 0  # NaN is truthy in Python and != 0 here
    if kind == "U":
        return np.strings.str_len(arr) > 0
    return None


def max_abs(arr: np.ndarray) -> int:
    """max |x| of an int/bool array as a Python int (0 for an empty array)."""
    if arr.size == 0:
        return 0
    return max(abs(int(arr.max())), abs(int(arr.min())))

