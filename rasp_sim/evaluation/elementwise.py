"""Vectorised `Map` ops: NumPy fast paths that reproduce `rasp_sim.core.atom_functions` exactly,
and a generic object path that calls that table's function on every element.

A fast path returns None whenever it cannot guarantee the semantics' values and element
types; the generic path then runs (the property tests in tests/test_evaluate.py check
the two agree element by element, types included). Cases routed to the generic path:

- int results that could leave int64 (Python ints are unbounded): checked from max |x|;
- `/` and `%` with a zero divisor (the generic path raises the error), int `/` with an
  operand beyond 2^53 (NumPy would round the operands before dividing), any int `/` in
  exact mode (a Fraction);
- int `^` with a negative exponent (a float, or a Fraction in exact mode), and every
  float `^`: NumPy may use its own SIMD transcendental functions, which are not always
  bit-equal to the C library's that Python calls (`exp` and `log` therefore call Python's
  math.exp and math.log element by element, but from and to float64 arrays, with no
  object arrays; out of their domain they go to the generic path, which raises);
- comparisons between ints beyond 2^53 and floats (Python compares exactly);
- `round` of non-finite floats or floats beyond int64; mixed-type rows (object arrays).

`sqrt`, `+ - * / %` on floats are correctly rounded IEEE operations in both NumPy and
Python, so the fast results are bit-equal.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..core import semantics
from ..core.atom_functions import UNARY_OPS, atom_function
from .columns import (
    FLOAT_EXACT_INT,
    INT64_MAX,
    MixedColumn,
    as_array,
    float_view,
    from_objects,
    int_bound,
    max_abs,
    mixed,
    numeric_parts,
    object_column,
    truth,
)

_NUMPY_COMPARE = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    ">": np.greater,
    "<=": np.less_equal,
    ">=": np.greater_equal,
}


def generic(op: str, cols: Sequence[np.ndarray], params: Sequence[Any], exact: bool) -> np.ndarray:
    """The object path: the atom function on every element (broadcasting like NumPy)."""
    fn = atom_function(op, params, exact=exact)
    with np.errstate(all="ignore"):  # NaN comparisons set C's "invalid" flag: not an error
        out = np.frompyfunc(fn, len(cols), 1)(*map(as_array, cols))
    return from_objects(np.asarray(out, dtype=object), exact=exact)


def apply_map(op: str, cols: Sequence[np.ndarray], params: Sequence[Any], exact: bool) -> np.ndarray:
    """A Map node's value column from its input columns."""
    out = _fast(op, cols, params, exact)
    return out if out is not None else generic(op, cols, params, exact)


def compare(op: str, a: np.ndarray, b: np.ndarray, exact: bool) -> np.ndarray:
    """Elementwise comparison as a bool array (selectors use it with broadcasting)."""
    out = _fast_binary(op, a, b, exact)
    if out is None:
        with np.errstate(all="ignore"):
            out = np.frompyfunc(atom_function(op, exact=exact), 2, 1)(
                as_array(a), as_array(b)).astype(bool)
    return out


# --------------------------------------------------------------------------- fast paths


def _fast(op: str, cols: Sequence[np.ndarray], params: Sequence[Any], exact: bool) -> np.ndarray | None:
    if op in ("and", "or"):
        ta, tb = truth(cols[0]), truth(cols[1])
        if ta is None or tb is None:
            return None
        return (ta & tb) if op == "and" else (ta | tb)
    if op == "not":
        t = truth(cols[0])
        return None if t is None else ~t
    if op == "where":
        return _fast_where(*cols)
    if op in ("lookup", "member"):
        return _via_unique(atom_function(op, params, exact=exact), cols[0], exact)
    if op == "assert":
        return _assert(cols[0], *params)
    if op in UNARY_OPS:
        return _fast_unary(op, cols[0], exact)
    return _fast_binary(op, cols[0], cols[1], exact)


def _fast_where(cond: Any, then: Any, otherwise: Any) -> Any:
    t = truth(cond)
    if t is None:
        return None
    if then.dtype.kind == otherwise.dtype.kind != "O":
        return np.where(t, then, otherwise)
    a, b = numeric_parts(then), numeric_parts(otherwise)  # ints and floats: a mixed column
    if a is None or b is None:
        return None
    return mixed(np.where(t, a[0], b[0]), np.where(t, a[1], b[1]))


def _assert(condition: np.ndarray, message: str, notes: Sequence[str]) -> np.ndarray:
    """The `assert` map: True everywhere, or the program's error naming the first
    position (of the first input in the batch) where the condition is false."""
    holds = truth(condition)
    if holds is None:
        holds = np.frompyfunc(semantics.indicator, 1, 1)(condition).astype(bool)
    failing = np.argwhere(~holds)
    if len(failing):
        raise semantics.assertion_error(f"{message}, at position {failing[0][-1]}", notes)
    return np.ones(condition.shape, dtype=bool)


def _via_unique(fn: Callable[[Any], Any], x: np.ndarray, exact: bool) -> np.ndarray | None:
    """A unary function applied once per distinct value (lookups, membership)."""
    if x.dtype.kind not in "biU":
        return None
    uniq, inverse = np.unique(x, return_inverse=True)
    table = from_objects(object_column(map(fn, uniq.tolist()), (len(uniq),)), exact=exact)
    return from_objects(table[inverse.reshape(x.shape)], exact=exact)


def _fast_unary(op: str, x: Any, exact: bool) -> Any:
    if isinstance(x, MixedColumn):
        if op in ("neg", "abs", "pos"):  # each element keeps its type
            values = np.negative(x.values) if op == "neg" else np.abs(x.values) if op == "abs" else x.values
            return mixed(values, x.ints)
        x = x.values  # round, sqrt, indicator: the same for an int and its float
    kind = x.dtype.kind
    if kind not in "bif":
        return None
    if op == "indicator":
        truths = truth(x)
        assert truths is not None  # bool, int and float columns always have one
        return truths.astype(np.int64)
    if kind == "b":  # -True, +True, round(True), abs(True) are ints
        x, kind = x.astype(np.int64), "i"
    if op == "pos" or (op == "round" and kind == "i"):
        return x
    if op in ("neg", "abs"):
        if kind == "i" and x.size and x.min() == np.iinfo(np.int64).min:
            return None  # -(-2^63) leaves int64
        return np.negative(x) if op == "neg" else np.abs(x)
    if op == "round":
        if not np.all(np.abs(x) < 2.0**63):  # also false for inf and NaN: errors
            return None
        return np.rint(x).astype(np.int64)  # rint rounds half to even, like round
    if op == "sqrt" and not exact:
        if kind == "i" and max_abs(x) > FLOAT_EXACT_INT:
            return None
        xf = x.astype(np.float64)
        if np.any(xf < 0):
            return None  # math domain error, raised by the generic path
        return np.sqrt(xf)
    if op in ("exp", "log") and not exact:
        return _each_float(math.exp if op == "exp" else math.log, x, kind)
    return None


def _each_float(fn: Callable[[float], float], x: np.ndarray, kind: str) -> np.ndarray | None:
    """`fn` (math.exp, math.log: the C library's, as Python calls it) on every element,
    from a float64 array straight to one: NumPy's np.exp and np.log may run SIMD code that
    is not bit-equal to the C library's (the module docstring), and an object array per
    element cost 10x more. None where an int would not convert exactly or an element is
    outside the domain (the generic path then raises the program's error)."""
    if kind == "i" and max_abs(x) > FLOAT_EXACT_INT:
        return None
    try:
        out = np.fromiter(map(fn, x.astype(np.float64).ravel().tolist()), dtype=np.float64,
                          count=x.size)
    except (OverflowError, ValueError):
        return None
    return out.reshape(x.shape)


def _or_float_view(x: Any) -> Any:
    view = float_view(x)
    return x if view is None else view


def _fast_mixed_arith(op: str, a: Any, b: Any) -> Any:
    """`+ - * %` with a mixed int/float operand, in float64: an element is an int where
    both operands are, and those are exact while the int results stay within 2^53 (the
    float elements are what Python computes: it converts the int operand exactly)."""
    pa, pb = numeric_parts(a), numeric_parts(b)
    if pa is None or pb is None:
        return None
    (x, xi), (y, yi) = pa, pb
    ma, mb = int_bound(a), int_bound(b)
    if (ma + mb if op in "+-" else ma * mb) > FLOAT_EXACT_INT:
        return None
    if op == "%" and np.any(y == 0):
        return None  # the generic path raises Python's error
    with np.errstate(all="ignore"):  # as for float columns: Python floats overflow silently
        values = {"+": np.add, "-": np.subtract, "*": np.multiply, "%": np.remainder}[op](x, y)
    return mixed(values, xi & yi)


def _fast_binary(op: str, a: Any, b: Any, exact: bool) -> Any:
    if op in ("+", "-", "*", "%") and (isinstance(a, MixedColumn) or isinstance(b, MixedColumn)):
        return _fast_mixed_arith(op, a, b)
    # A mixed int/float column may be computed as floats when every result is a float
    # (or a bool) whichever elements were ints. Not `/` in exact mode: there int / int is
    # a Fraction.
    float_results = op in _NUMPY_COMPARE or (op == "/" and not exact)
    viewed = False
    if a.dtype == object and (float_results or b.dtype.kind == "f"):
        a = _or_float_view(a)
        viewed = a.dtype != object
    if b.dtype == object and (float_results or a.dtype.kind == "f"):
        b = _or_float_view(b)
        viewed = viewed or b.dtype != object
    ka, kb = a.dtype.kind, b.dtype.kind
    if "U" in (ka, kb):
        return _fast_string(op, a, b)
    if ka not in "bif" or kb not in "bif":
        return None
    if op in _NUMPY_COMPARE:
        if ka != kb and "f" in (ka, kb):
            ints = a if kb == "f" else b
            if max_abs(ints) > FLOAT_EXACT_INT:
                return None
        return _NUMPY_COMPARE[op](a, b)
    if "f" in (ka, kb):
        if op == "/" and viewed and FLOAT_EXACT_INT < max(
            max_abs(a) if ka in "bi" else 0, max_abs(b) if kb in "bi" else 0
        ):
            return None  # an int of the mixed column over a big int: Python divides exactly
        return _fast_float_arith(op, a.astype(np.float64), b.astype(np.float64))
    return _fast_int_arith(op, a.astype(np.int64), b.astype(np.int64), exact)


def _fast_string(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    ka, kb = a.dtype.kind, b.dtype.kind
    if ka == kb == "U":
        if op in _NUMPY_COMPARE:
            return _NUMPY_COMPARE[op](*_string_ranks(a, b))
        if op == "+":
            return np.strings.add(a, b)
        return None
    if op in ("==", "!=") and ka in "bifU" and kb in "bifU":  # str vs number: never equal
        return np.full(np.broadcast_shapes(a.shape, b.shape), op == "!=")
    return None


def _string_ranks(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integers ordered like the strings (code point order, as in Python), so that big
    (batch, n, n) comparisons compare ints: single characters are their code points.
    One column compared with itself (sort's keys, a histogram's) is ranked once, and both
    ranks are the same array."""
    if a.dtype.itemsize == b.dtype.itemsize == 4:
        same = a is b
        a = a.view(np.uint32)
        b = a if same else b.view(np.uint32)
        top = int(a.max(initial=0)) if same else max(int(a.max(initial=0)), int(b.max(initial=0)))
        if top < 2**16:  # narrower codes: the (batch, n, n) comparison reads less memory
            code = np.uint8 if top < 2**8 else np.uint16
            a = a.astype(code)
            return a, (a if same else b.astype(code))
        return a, b
    both = np.concatenate([a.ravel(), b.ravel()])
    _, ranks = np.unique(both, return_inverse=True)
    ranks = ranks.reshape(-1)
    return ranks[: a.size].reshape(a.shape), ranks[a.size :].reshape(b.shape)


def _fast_float_arith(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    with np.errstate(all="ignore"):  # Python floats overflow to inf and make NaN silently too
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if op in ("/", "%") and not np.any(y == 0):
            return np.true_divide(x, y) if op == "/" else np.remainder(x, y)
    return None


def _fast_int_arith(op: str, x: np.ndarray, y: np.ndarray, exact: bool) -> np.ndarray | None:
    mx, my = max_abs(x), max_abs(y)
    if op in ("+", "-") and mx + my <= INT64_MAX:
        return x + y if op == "+" else x - y
    if op == "*" and mx * my <= INT64_MAX:
        return x * y
    if op == "/" and not exact and max(mx, my) <= FLOAT_EXACT_INT and not np.any(y == 0):
        return x.astype(np.float64) / y.astype(np.float64)  # exact operands, one rounding
    if op == "%" and not np.any(y == 0):
        return np.remainder(x, y)  # floor modulo: the sign of the divisor, like Python
    if op == "^" and (y.size == 0 or y.min() >= 0):
        if mx <= 1 or my * math.log2(mx) < 62:
            return np.power(x, y)
    return None
