"""Property tests of the backend's own pieces against brute force and the interpreter."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tracr")

from tracr.craft import bases  # noqa: E402
from tracr.craft.chamber import categorical_mlp  # noqa: E402
from tracr.rasp import rasp  # noqa: E402

from rasp_sim.compiler.tracr_backend import blocks  # noqa: E402
from rasp_sim.compiler.tracr_backend.bases import ValueSets  # noqa: E402
from rasp_sim.compiler.tracr_backend.pipeline import compile_graph  # noqa: E402
from rasp_sim.core import semantics  # noqa: E402

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def _run(mlp, space, out, size):
    """The MLP on every one-hot input: the outputs f(v)."""
    x = space.make_vector(np.eye(size)).project(mlp.residual_space)
    return mlp.apply(x).project(out).magnitudes[:, 0]


@settings(max_examples=50, deadline=None)
@given(st.lists(finite, min_size=1, max_size=8))
def test_signed_map_is_exact_for_any_sign(table):
    space = bases.VectorSpaceWithBasis.from_values("x", range(len(table)))
    out = bases.VectorSpaceWithBasis.from_names(["y"])
    mlp = blocks.signed_map_mlp(space, out, lambda v: table[v], "h")
    # Exactly one indicator is 1, so each output is one product f(v) * 1 and one
    # subtraction h+ - h- with one of them 0: bit-exact in float64.
    got = _run(mlp, space, out, len(table))
    assert got.tolist() == [float(v) for v in table]
    if min(table) < 0:  # stock tracr's block clips the negative entries (tracr#24)
        stock = categorical_mlp.map_categorical_to_numerical_mlp(space, out, lambda v: table[v])
        clipped = _run(stock, space, out, len(table))
        assert clipped.tolist() == [max(float(v), 0.0) for v in table]


@settings(max_examples=40, deadline=None)
@given(st.sets(st.integers(-3, 3), min_size=1, max_size=4), st.integers(1, 5))
def test_mean_value_set_is_every_mean_rasp_sim_can_compute(values, max_len):
    values = sorted(values)
    mean = rasp.numerical(rasp.Aggregate(
        rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE),
        rasp.numerical(rasp.Map(lambda t: t, rasp.tokens)), default=0))
    inferred = ValueSets(values, max_len).of(mean)
    brute = {0}  # the empty row's default
    for width in range(1, max_len + 1):
        for chosen in itertools.product(values, repeat=width):
            brute.add(semantics.aggregate_one(list(chosen), 0, list(chosen)))
    assert inferred == brute


def test_composite_selector_over_the_same_sops_is_one_select_without_tuples(program):
    compiled = compile_graph(program(
        "s = select(indices, indices, <) and select(indices, indices, >=) or "
        "not select(indices, 1, ==);\nw = selector_width(s);", "w"), ["a"], 4)
    exprs = [compiled.graph.nodes[n]["EXPR"] for n in compiled.graph.nodes]
    assert not any(isinstance(e, rasp.SequenceMap) for e in exprs)
    assert sum(isinstance(e, rasp.Select) for e in exprs) == 1


OPS = ["==", "!=", "<", ">", "<=", ">="]
leaf = st.tuples(st.sampled_from(["tokens", "indices", "0", "1"]),
                 st.sampled_from(["tokens", "indices", "2"]), st.sampled_from(OPS)).map(
    lambda t: f"select({t[0]}, {t[1]}, {t[2]})")
selector = st.recursive(leaf, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(lambda t: f"({' '.join(t)})"),
    inner.map(lambda s: f"(not {s})")), max_leaves=3)


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(selector)
def test_random_composite_selectors_compile_and_validate(driver, program, text):
    root = program(f"tokens = tokens_int;\nw = selector_width({text});", "w")
    result = driver.compile_program(root, [0, 1, 2], 3)
    assert result.report.ok, result.report.disagreement


# Random small programs over integer tokens: maps, selects, aggregates and widths, each
# either refused with a reason or compiled and validated exhaustively against the
# interpreter (which is the property: never a silently wrong model).
atom = st.sampled_from(["tokens", "indices", "length", "1", "2"])
arith = st.recursive(atom, lambda inner: st.tuples(
    inner, st.sampled_from(["+", "-", "*", "%"]), inner).map(
    lambda t: f"({t[0]} {t[1]} {t[2]})" if t[1] != "%" else f"({t[0]} % 3)"), max_leaves=3)
program_text = st.tuples(arith, arith, st.sampled_from(OPS), arith, st.booleans(),
                         st.sampled_from(["{}", "round(3 * {})", "{} > 1", "{} + indices"])).map(
    lambda t: t[5].format(f"selector_width(select({t[0]}, {t[1]}, {t[2]}))" if t[4] else
                          f"aggregate(select({t[0]}, {t[1]}, {t[2]}), {t[3]})"))


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(program_text)
def test_random_programs_are_refused_or_validated(driver, program, text):
    from rasp_sim.compiler.tracr_backend.checks import Unsupported

    root = program(f"tokens = tokens_int;\nr = {text};", "r")
    try:
        result = driver.compile_program(root, [0, 1, 2], 3, tracr_oracle=False)
    except Unsupported as refusal:
        assert refusal.span is not None or "vocabulary" in refusal.message
        return
    assert result.report.ok, result.report.disagreement.describe()
