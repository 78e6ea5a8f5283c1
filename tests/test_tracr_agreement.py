"""Random programs in the subset rasp-sim and tracr share, evaluated by both.

Each strategy draw builds one program twice, as `rasp_sim.core.graph` nodes and as
`tracr.rasp.rasp` expressions, and both evaluators run it on the same random inputs.
Known differences, and how the strategy stays clear of them:

- tracr's aggregate default is None, RASP's 0: every tracr Aggregate gets `default=0`.
- RASP averages >= 2 values only when the whole value column is int or float typed
  (bools are rejected, tracr averages them): aggregated values are always int or float,
  bool s-ops are first mapped through `indicator`.
- tracr's mean is `sum / len`, the original's `sum * 1.0 / len`: equal for the small ints
  and their means used here (both are one correctly rounded division of an exact sum).
"""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rasp_sim.core import graph as g
from rasp_sim.evaluation.evaluate import evaluate

rasp = pytest.importorskip("tracr.rasp.rasp")

Pair = tuple[Any, Any]  # (rasp-sim node, tracr expression)

UNARY = {
    "neg": lambda x: -x,
    "abs": abs,
    "not": lambda x: not x,
    "indicator": lambda x: 1 if x else 0,
}
BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "and": lambda a, b: bool(a) and bool(b),
    "or": lambda a, b: bool(a) or bool(b),
}
COMPARISONS = {
    "==": "EQ", "!=": "NEQ", "<": "LT", "<=": "LEQ", ">": "GT", ">=": "GEQ",
}


def leaf(draw) -> Pair:
    if draw(st.booleans()):
        return g.Tokens(kind="asis"), rasp.tokens
    return g.Indices(), rasp.indices


def numeric(pair: Pair, is_bool: bool) -> Pair:
    """An int version of a possibly-bool s-op, for aggregation."""
    if not is_bool:
        return pair
    ours, theirs = pair
    return g.Map(op="indicator", inputs=(ours,)), rasp.Map(UNARY["indicator"], theirs)


@st.composite
def sops(draw, depth: int) -> tuple[Pair, bool]:
    """A random s-op pair and whether its values are bools."""
    if depth == 0 or draw(st.integers(0, 5)) == 0:
        return leaf(draw), False
    kind = draw(st.sampled_from(["unary", "constant", "binary", "aggregate"]))
    (x, tx), x_bool = draw(sops(depth - 1))
    if kind == "unary":
        op = draw(st.sampled_from(sorted(UNARY)))
        return (g.Map(op=op, inputs=(x,)), rasp.Map(UNARY[op], tx)), op == "not"
    if kind == "constant":
        op = draw(st.sampled_from(sorted(BINARY)))
        c = draw(st.integers(-3, 3))
        node = g.Map(op=op, inputs=(x, g.Full(value=c)))
        return (node, rasp.Map(lambda v, f=BINARY[op], c=c: f(v, c), tx)), op not in "+-*"
    if kind == "binary":
        op = draw(st.sampled_from(sorted(BINARY)))
        (y, ty), _ = draw(sops(depth - 1))
        node = g.Map(op=op, inputs=(x, y))
        return (node, rasp.SequenceMap(BINARY[op], tx, ty)), op not in "+-*"
    s, ts = draw(selectors(depth - 1))
    values, tvalues = numeric((x, tx), x_bool)
    node = g.Aggregate(selector=s, values=values, default=0)
    return (node, rasp.numerical(rasp.Aggregate(ts, tvalues, default=0))), False


@st.composite
def selectors(draw, depth: int) -> Pair:
    (k, tk), _ = draw(sops(depth))
    (q, tq), _ = draw(sops(depth))
    op = draw(st.sampled_from(sorted(COMPARISONS)))
    pair = (g.Select(keys=k, queries=q, op=op), rasp.Select(tk, tq, getattr(rasp.Comparison, COMPARISONS[op])))
    combine = draw(st.sampled_from(["none", "and", "or", "not"]))
    if combine == "not":
        return g.SelectorNot(operand=pair[0]), rasp.SelectorNot(pair[1])
    if combine in ("and", "or"):
        other, tother = draw(selectors(0))
        cls, tcls = (g.SelectorAnd, rasp.SelectorAnd) if combine == "and" else (g.SelectorOr, rasp.SelectorOr)
        return cls(left=pair[0], right=other), tcls(pair[1], tother)
    return pair


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(type(x) is type(y) and x == y for x, y in zip(a, b))


INPUTS = st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=6), min_size=1, max_size=4)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sops(3), INPUTS)
def test_random_programs_agree_with_tracr(program, inputs):
    (ours, theirs), _ = program
    results = evaluate([ours], inputs)
    for x, (value,) in zip(inputs, results):
        expected = rasp.evaluate(theirs, x)
        assert same(value, expected), (x, value, expected)


@settings(max_examples=30, deadline=None)
@given(selectors(2), INPUTS)
def test_random_selectors_agree_with_tracr(selector, inputs):
    ours, theirs = selector
    for x, (value,) in zip(inputs, evaluate([ours], inputs)):
        assert value == rasp.evaluate(theirs, x)
