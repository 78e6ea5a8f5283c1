"""Value columns: how a batch of s-op values is held as a NumPy array.

An s-op's value on a batch of b inputs of length n is a (b, n) array of one of these
dtypes, each standing for one homogeneous Python element type:

| dtype | Python elements |
|---|---|
| bool | bool |
| int64 | int (not bool) |
| float64 | float (never in exact mode) |
| str_ ('U') | str, none ending in NUL (NumPy drops trailing NULs) |
| `MixedColumn` | int and float (every int within 2^53): float64 values and an is-int mask |
| object | anything else: mixed bool/int rows, ints beyond 2^53 among floats, big ints,
  Fractions, strings with numbers, rows of different types |

Fast elementwise and aggregate paths see the first five; `from_objects` turns the object
results of the generic path back into the narrowest faithful column and type-checks each
row (one row = one input's sequence, docs/language.md). A `MixedColumn` reads as an
object array of atoms to any code that does not know it (`np.asarray`, `tolist`), and
`as_array` gives that array where the evaluator hands values out.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..core import semantics

INT64_MAX = np.iinfo(np.int64).max
FLOAT_EXACT_INT = 2**53  # every int of at most this magnitude is an exact float64
FLOAT32_EXACT_INT = 2**24  # ... an exact float32
_NUMERIC = {bool, int, float}
CHARACTERS = np.dtype("U1")  # native one-character strings, 4 bytes each (UCS-4)
# `python_rows` splits strings from this many rows up: below, its few NumPy calls cost
# more than `tolist` saves (0.4 us a row at n = 64, against about 3 us).
_MANY_ROWS = 16


def from_objects(arr: Any, *, exact: bool = False) -> Any:
    """The narrowest faithful column for an object array of atoms; rows type-checked."""
    if isinstance(arr, MixedColumn) or arr.dtype != object:
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
    if types == {int, float}:
        as_mixed = _mixed_from_objects(arr, flat)
        if as_mixed is not None:
            return as_mixed
    if arr.ndim == 2 and not types <= _NUMERIC:  # int/float rows always type-check
        for row in arr:
            semantics.sequence_type(row)
    return arr


def _mixed_from_objects(arr: np.ndarray, flat: np.ndarray) -> MixedColumn | None:
    """An object array of ints and floats as a MixedColumn, or None if an int is beyond
    2^53 (it would not survive float64)."""
    try:
        values = arr.astype(np.float64)
    except OverflowError:  # an int beyond float range
        return None
    ints = np.fromiter((type(x) is int for x in flat), bool, len(flat)).reshape(arr.shape)
    if np.any(np.abs(values[ints]) >= FLOAT_EXACT_INT):  # 2^53 + 1 rounds to 2^53
        return None
    return MixedColumn(values, ints)


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


def concat_rows(parts: list[Any]) -> Any:
    """Stack chunk results along the batch axis without NumPy's type promotion
    (int64 with float64 would silently turn ints into floats)."""
    if len(parts) == 1:
        return parts[0]
    numeric = [numeric_parts(p) for p in parts]
    if any(isinstance(p, MixedColumn) for p in parts) and all(x is not None for x in numeric):
        return mixed(np.concatenate([x[0] for x in numeric if x is not None]),
                     np.concatenate([x[1] for x in numeric if x is not None]))
    parts = [as_array(p) for p in parts]
    if len({p.dtype.kind for p in parts}) == 1:
        return np.concatenate(parts)
    return np.concatenate([p.astype(object) for p in parts])


class MixedColumn:
    """A column of ints and floats held as numbers: float64 `values` and a bool mask `ints`
    of the entries that are Python ints. Every int is within 2^53, so its float64 value is
    exact and converts back to the same int; a column with a bigger int stays an object
    array. Never all ints or all floats (`mixed` gives the int64 or float64 column then).

    The elementwise and aggregate kernels read the two arrays directly. Anything else
    sees an object array: `np.asarray`, `tolist` and `astype` give the Python atoms (ints
    where `ints`, floats elsewhere), so code that knows nothing of this class stays
    correct, only slower."""

    __slots__ = ("values", "ints", "_int_bound")
    dtype = np.dtype(object)

    def __init__(self, values: np.ndarray, ints: np.ndarray):
        self.values, self.ints = values, ints
        self._int_bound: int | None = None

    def int_bound(self) -> int:
        """The largest |x| of the int entries (computed once: the column is never written)."""
        if self._int_bound is None:
            self._int_bound = int(np.abs(self.values, where=self.ints, out=np.zeros(self.shape)).max(initial=0.0))
        return self._int_bound

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    @property
    def ndim(self) -> int:
        return self.values.ndim

    @property
    def size(self) -> int:
        return self.values.size

    def __len__(self) -> int:
        return len(self.values)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.values.astype(object)
        out[self.ints] = self.values[self.ints].astype(np.int64).astype(object)
        return out if dtype is None else out.astype(dtype)

    def astype(self, dtype: Any, copy: bool = True) -> np.ndarray:
        if np.dtype(dtype) == np.float64:
            return self.values.copy() if copy else self.values
        return np.asarray(self).astype(dtype)

    def tolist(self) -> list:
        return np.asarray(self).tolist()

    def ravel(self) -> np.ndarray:
        return np.asarray(self).ravel()

    def __getitem__(self, key: Any) -> Any:
        return mixed(self.values[key], self.ints[key])


def mixed(values: np.ndarray, ints: np.ndarray) -> Any:
    """The column of float64 `values` whose entries at `ints` are Python ints (each within
    2^53): an int64 column if all are, a float64 column if none is, else a MixedColumn.
    A 0-d selection gives the atom."""
    if values.ndim == 0:
        return int(values) if ints else float(values)
    if ints.all() and values.size:
        return values.astype(np.int64)
    if not ints.any():
        return values
    # An int entry computed in float64 may be -0.0 (-0, 0 * -3), which a later float
    # function would tell from 0 (sqrt(-0.0) is -0.0): Python's int 0 has no sign.
    return MixedColumn(np.where(ints, values + 0.0, values), ints)


def numeric_parts(arr: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """A column's float64 values and int mask, if it holds only ints within 2^53 and
    floats (an int64, float64 or mixed column), else None."""
    if isinstance(arr, MixedColumn):
        return arr.values, arr.ints
    kind = arr.dtype.kind
    if kind == "f":
        return arr, np.zeros(arr.shape, dtype=bool)
    if kind == "i" and max_abs(arr) <= FLOAT_EXACT_INT:
        return arr.astype(np.float64), np.ones(arr.shape, dtype=bool)
    return None


def int_bound(arr: Any) -> int:
    """The largest |x| of the int entries of a numeric column (0 if none)."""
    if isinstance(arr, MixedColumn):
        return arr.int_bound()
    return max_abs(arr) if arr.dtype.kind in "bi" else 0


def python_rows(column: np.ndarray) -> list:
    """A column's rows as lists of Python atoms, as `tolist` gives them. A column of
    single characters (string tokens, and what reverse or sort make of them) goes through
    one str per row, which `list` splits at C speed: 1.6x `tolist` on 10,000 x 64."""
    if len(column) < _MANY_ROWS or column.dtype != CHARACTERS or column.ndim != 2:
        return column.tolist()
    characters = np.ascontiguousarray(column)
    if not characters.view(np.uint32).all():  # a "" element (NUL) would vanish in a row str
        return column.tolist()
    rows = characters.view(np.dtype((np.str_, column.shape[1]))).reshape(-1)
    return list(map(list, rows.tolist()))


def as_array(arr: Any) -> np.ndarray:
    """A column as an ndarray (a mixed column as its object array of atoms)."""
    return np.asarray(arr) if isinstance(arr, MixedColumn) else arr


def broadcast(arr: Any, shape: tuple[int, ...]) -> Any:
    """`np.broadcast_to` for every kind of column (a mixed one stays mixed)."""
    if arr.shape == shape:
        return arr
    if isinstance(arr, MixedColumn):
        return MixedColumn(np.broadcast_to(arr.values, shape), np.broadcast_to(arr.ints, shape))
    return np.broadcast_to(arr, shape)


def float_view(arr: Any) -> np.ndarray | None:
    """A column of ints (within 2^53) and floats as float64, for ops whose result does not
    depend on which elements were ints (`/`, comparisons, `round`, arithmetic with a
    float column); None for other object columns."""
    if isinstance(arr, MixedColumn):
        return arr.values
    return None


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

