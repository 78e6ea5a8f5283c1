"""Mixed int/float columns held as numbers (evaluation/columns.py `MixedColumn`) against
the object path: random graphs of aggregates, maps and selects on batches that mix ints
and floats (ints near and beyond 2^53 included) must give the same atoms, types and all,
bit for bit, and the same errors, as when every such column is Python objects."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rasp_sim.core import graph as g
from rasp_sim.base.errors import RaspError
from rasp_sim.evaluation.evaluate import evaluate
from rasp_sim.evaluation import attention, columns, elementwise

from rasp_sim.core.atom_functions import BINARY_OPS, UNARY_OPS, atom_function

from .test_evaluate import check_against, checked_row, column, same_rows

BINARY = ["+", "-", "*", "/", "%", "<", "==", ">="]
UNARY = ["neg", "pos", "abs", "round", "indicator", "sqrt"]
SELECT_OPS = ["==", "<", ">=", "!="]
SMALL = st.one_of(st.integers(-5, 5), st.sampled_from([0.5, -1.25, 2.0, 0.0, -0.0, 1e300, 3.0]))
BIG = st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, -(2**60)])
ATOMS = st.one_of(SMALL, BIG)
DEFAULTS = st.one_of(st.integers(-2, 2), st.sampled_from([0.0, 0.5, -1.5]))


@st.composite
def graphs(draw: Any) -> g.SOp:
    """A random s-op over tokens_asis and indices, several levels deep."""
    pool: list[g.SOp] = [g.Tokens(kind="asis"), g.Indices(), g.Full(value=draw(ATOMS))]
    selectors: list[g.Selector] = []
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["aggregate", "aggregate", "binary", "unary", "where"]))
        pick = lambda: draw(st.sampled_from(pool[-3:] + pool[:1]))  # noqa: E731  (recent or tokens)
        if kind == "aggregate":
            if not selectors or draw(st.booleans()):
                selectors.append(g.Select(keys=pick(), queries=pick(), op=draw(st.sampled_from(SELECT_OPS))))
            node: g.SOp = g.Aggregate(
                selector=draw(st.sampled_from(selectors)), values=pick(), default=draw(DEFAULTS),
                reduction=draw(st.sampled_from(["mean", "sum"])))
        elif kind == "binary":
            node = g.Map(op=draw(st.sampled_from(BINARY)), inputs=(pick(), pick()))
        elif kind == "unary":
            node = g.Map(op=draw(st.sampled_from(UNARY)), inputs=(pick(),))
        else:
            node = g.Map(op="where", inputs=(pick(), pick(), pick()))
        pool.append(node)
    return pool[-1]


@st.composite
def batches(draw: Any) -> list[list[Any]]:
    n = draw(st.integers(2, 5))
    atoms = ATOMS if draw(st.integers(0, 3)) == 0 else SMALL  # mostly within 2^53
    return [[draw(atoms) for _ in range(n)] for _ in range(draw(st.integers(1, 4)))]


_MIXED = columns.mixed


def _as_objects(values: np.ndarray, ints: np.ndarray) -> Any:
    """`columns.mixed`, except that a mixed column is an object array of its atoms."""
    column = _MIXED(values, ints)
    return np.asarray(column) if isinstance(column, columns.MixedColumn) else column


def _outcome(root: g.SOp, batch: list) -> tuple[str, Any]:
    try:
        return "ok", [row[0] for row in evaluate([root], batch)]
    except RaspError as error:
        return "error", type(error)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), batches())
def test_mixed_columns_match_the_object_path(root: g.SOp, batch: list) -> None:
    numbers = _outcome(root, batch)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(columns, "_mixed_from_objects", lambda arr, flat: None)
        for module in (columns, attention, elementwise):
            patch.setattr(module, "mixed", _as_objects)
        objects = _outcome(root, batch)
    assert numbers[0] == objects[0], (numbers, objects)
    if numbers[0] == "ok":
        assert same_rows(numbers[1], objects[1]), (numbers[1], objects[1])
    else:
        assert numbers[1] == objects[1]


def test_the_property_test_reaches_mixed_columns() -> None:
    """A mean inside a column of single selections is mixed, and held as numbers."""
    tokens = g.Tokens(kind="asis")
    prefix = g.Select(keys=g.Indices(), queries=g.Indices(), op="<=")
    mean = attention.aggregate(np.tril(np.ones((3, 3), bool))[None], np.array([[1, 2, 4]]), 0, "mean", False)
    assert isinstance(mean, columns.MixedColumn)
    (row,) = evaluate([g.Aggregate(selector=prefix, values=tokens, default=0)], [[1, 2, 4]])
    assert row == [[1, 1.5, 7 / 3]] and type(row[0][0]) is int


EDGES = [[-0.0, 1, 2.5, -3, float("nan"), float("inf"), 2**53 - 1, 0, -7, 0.5]]


@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_maps_on_a_mixed_column_of_edge_values(op: str) -> None:
    col = column(EDGES)
    assert isinstance(col, columns.MixedColumn)
    check_against(lambda: elementwise.apply_map(op, [col], (), False),
                  lambda r: checked_row([atom_function(op)(x) for x in EDGES[r]]), 1)


@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_maps_on_mixed_columns_of_edge_values(op: str) -> None:
    other = [[2, -0.0, 3, 0.5, 1, -2, 1, 4.0, 2, -1]]
    if op == "^":
        other = [[2, 0.5, 3, 2, 1, 2, 1, 3, 2, 1]]
    for xs, ys in ((EDGES, other), (other, EDGES), (EDGES, EDGES)):
        check_against(lambda: elementwise.apply_map(op, [column(xs), column(ys)], (), False),
                      lambda r: checked_row([atom_function(op)(x, y) for x, y in zip(xs[r], ys[r])]), 1)


def test_an_int_zero_in_a_mixed_column_has_no_sign() -> None:
    """-0 in a column mixing ints and floats is the int 0, so sqrt of it is 0.0, not -0.0
    (found by the property test above: t + t, negated, then sqrt, on [0, -1.25])."""
    tokens = g.Tokens(kind="asis")
    doubled = g.Map(op="+", inputs=(tokens, tokens))
    root = g.Map(op="sqrt", inputs=(g.Map(op="neg", inputs=(doubled,)),))
    [[row]] = evaluate([root], [[0, -1.25]])
    assert np.signbit(row[0]) == np.False_ and row[0] == 0.0 and row[1] == 2.5**0.5
