"""A predicate tree's whole table (predicates.py `grid`) against its pair-by-pair value.

The table path computes each side once and then combines boolean arrays; it must give
what the pair-by-pair path gives (Python's short-circuiting `and`/`or`, a pair where an
evaluated leaf raises a RaspError not selected), for any tree, including leaves that fail
on some values and leaves on plain numbers (the NumPy fast path).
"""
from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tracr")

from rasp_sim.compiler.tracr_backend import predicates  # noqa: E402
from rasp_sim.base.errors import RaspError  # noqa: E402

COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
           "<=": operator.le, ">=": operator.ge}


def _reader(slot: int, fails_on: int | None):
    def read(t: tuple) -> int:
        if t[slot] == fails_on:
            raise RaspError(f"fails on {fails_on}")
        return t[slot]
    return read


@st.composite
def trees(draw, depth: int = 3):
    kind = draw(st.sampled_from(("leaf", "leaf", "not", "and", "or") if depth else ("leaf",)))
    if kind == "leaf":
        op = draw(st.sampled_from(sorted(COMPARE)))
        fails = st.none() | st.integers(0, 3)  # None: a plain-number leaf (NumPy's path)
        return predicates.Leaf(_reader(draw(st.integers(0, 1)), draw(fails)),
                               _reader(draw(st.integers(0, 1)), draw(fails)), COMPARE[op], op)
    if kind == "not":
        return predicates.Not(draw(trees(depth - 1)))
    return predicates.Junction(draw(trees(depth - 1)), draw(trees(depth - 1)),
                               runs_right_on=kind == "and")


def _selected(tree, k: tuple, q: tuple) -> bool:
    try:
        return bool(tree.pair(k, q))
    except RaspError:
        return False


@settings(max_examples=200, deadline=None)
@given(trees())
def test_the_table_of_a_predicate_tree_is_its_value_pair_by_pair(tree):
    sides = [(a, b) for a in range(4) for b in range(3)]
    predicate = predicates.Predicate(tree, key_tuple=True, query_tuple=True)
    table = predicate.table(sides, sides)
    expected = np.array([[_selected(tree, k, q) for k in sides] for q in sides])
    np.testing.assert_array_equal(table, expected)


def test_a_junction_short_circuits_as_python_does():
    fails = predicates.Leaf(_reader(0, 0), _reader(0, None), operator.eq, "==")
    true = predicates.Leaf(_reader(0, None), _reader(0, None), operator.ge, ">=")
    false = predicates.Not(true)
    # `False and <fails>` and `True or <fails>` never evaluate their right side
    assert predicates.Junction(false, fails, runs_right_on=True).pair((0,), (0,)) is False
    assert predicates.Junction(true, fails, runs_right_on=False).pair((0,), (0,)) is True
    with pytest.raises(RaspError):
        predicates.Junction(true, fails, runs_right_on=True).pair((0,), (0,))
