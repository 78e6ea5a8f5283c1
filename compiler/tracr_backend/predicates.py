"""A selector's predicate, evaluated pair by pair or on a whole table of values at once.

A head's QK table asks the predicate for every (key value, query value) pair. Asked pair by
pair, the and/or/not tree recomputed each side's folded maps (`indices * c + o if indices
< k else -1`, with the interpreter's checked arithmetic) for every pair: 113 heads of U
(n = d = 4) over 64 x 64 positions took most of its compile. `table` computes each side's
value once per value and then only compares, with the pair-by-pair semantics: a pair where
the program fails (an evaluated leaf raises a RaspError, `and`/`or` short-circuiting as in
Python) is not selected.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from rasp_sim.base.errors import RaspError

from .bases import plain

Grid = tuple[np.ndarray, np.ndarray]  # (values, errors), both bool [query, key]


# NumPy's elementwise form of each comparison, for sides that are plain numbers
_OUTER = {"==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater,
          "<=": np.less_equal, ">=": np.greater_equal}
_EXACT_INT = 2 ** 53  # ints up to this convert to float64 exactly (Python compares exactly)


class Leaf:
    """compare(key side, query side) of one select (`op`, the select's comparison)."""

    def __init__(self, key: Callable[[tuple], Any], query: Callable[[tuple], Any],
                 compare: Callable[[Any, Any], Any], op: str):
        self.key, self.query, self.compare, self.op = key, query, compare, op

    def pair(self, k: tuple, q: tuple) -> Any:
        return self.compare(self.key(k), self.query(q))

    def grid(self, keys: Sequence[tuple], queries: Sequence[tuple]) -> Grid:
        key_values, query_values = _each(self.key, keys), _each(self.query, queries)
        fast = self._numbers(key_values, query_values)
        if fast is not None:
            return fast
        values = np.zeros((len(queries), len(keys)), dtype=bool)
        errors = np.zeros_like(values)
        for i, (query_ok, q) in enumerate(query_values):
            for j, (key_ok, k) in enumerate(key_values):
                try:
                    if key_ok and query_ok:
                        values[i, j] = bool(self.compare(k, q))
                        continue
                except RaspError:
                    pass
                errors[i, j] = True
        return values, errors


    def _numbers(self, key_values: list[tuple[bool, Any]],
                 query_values: list[tuple[bool, Any]]) -> Grid | None:
        """The grid by one NumPy comparison where every side value is defined and a plain
        number that float64 holds exactly (no bools: False == 0 is Python's too, but a
        bool is kept apart), as Python's operator compares them; else None."""
        compare = _OUTER.get(self.op)
        sides = [v for ok, v in key_values + query_values]
        if compare is None or not all(ok for ok, _ in key_values + query_values) or not all(
                type(v) is float or (type(v) is int and abs(v) <= _EXACT_INT) for v in sides):
            return None
        k = np.array([v for _, v in key_values], dtype=np.float64)
        q = np.array([v for _, v in query_values], dtype=np.float64)
        values = compare(k[None, :], q[:, None])  # M[q][k] = key op query
        return values, np.zeros_like(values)


class Not:
    def __init__(self, operand: Any):
        self.operand = operand

    def pair(self, k: tuple, q: tuple) -> Any:
        return not self.operand.pair(k, q)

    def grid(self, keys: Sequence[tuple], queries: Sequence[tuple]) -> Grid:
        values, errors = self.operand.grid(keys, queries)
        return ~values, errors


class Junction:
    """`left and right` (`runs_right_on` True) or `left or right` (False), short-circuiting
    as Python does: the right side runs only where the left side is `runs_right_on`, and
    the value is the left side's elsewhere."""

    def __init__(self, left: Any, right: Any, runs_right_on: bool):
        self.left, self.right, self.runs_right_on = left, right, runs_right_on

    def pair(self, k: tuple, q: tuple) -> Any:
        left = self.left.pair(k, q)
        return self.right.pair(k, q) if bool(left) == self.runs_right_on else left

    def grid(self, keys: Sequence[tuple], queries: Sequence[tuple]) -> Grid:
        (lv, le), (rv, re) = self.left.grid(keys, queries), self.right.grid(keys, queries)
        runs = lv == self.runs_right_on  # where the right side decides (if the left ran)
        return np.where(runs, rv, lv), le | (~le & runs & re)


def _each(f: Callable[[tuple], Any], inputs: Sequence[tuple]) -> list[tuple[bool, Any]]:
    out: list[tuple[bool, Any]] = []
    for x in inputs:
        try:
            out.append((True, f(x)))
        except RaspError:
            out.append((False, None))
    return out


class Predicate:
    """(stored key value, stored query value) -> selected, from a predicate tree over the
    tuples of the select's key and query s-ops; False where the program fails."""

    def __init__(self, tree: Any, key_tuple: bool, query_tuple: bool):
        self.tree = tree
        self.unpack_key = (lambda k: k) if key_tuple else (lambda k: (k,))
        self.unpack_query = (lambda q: q) if query_tuple else (lambda q: (q,))

    def __call__(self, key: Any, query: Any) -> bool:
        try:
            return bool(self.tree.pair(self.unpack_key(plain(key)),
                                       self.unpack_query(plain(query))))
        except RaspError:
            return False

    def table(self, keys: Sequence[Any], queries: Sequence[Any]) -> np.ndarray:
        values, errors = self.tree.grid([self.unpack_key(plain(k)) for k in keys],
                                        [self.unpack_query(plain(q)) for q in queries])
        return values & ~errors


def predicate_table(predicate: Callable[[Any, Any], Any], keys: Sequence[Any],
                    queries: Sequence[Any]) -> np.ndarray:
    """selected[query, key] for stored values: by table where the predicate has one."""
    if isinstance(predicate, Predicate):
        return predicate.table(keys, queries)
    return np.array([[bool(predicate(k, q)) for k in keys] for q in queries],
                    dtype=bool).reshape(len(queries), len(keys))
