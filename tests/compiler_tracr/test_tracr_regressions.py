"""Regression tests for tracr 1.0.0's silent failures and crashes (docs/compiler.md).

Each test first pins STOCK tracr's wrong behaviour, so it FAILS IF TRACR IS FIXED UPSTREAM
(then the workaround can be reconsidered), and then checks that rasp-sim's compile gives
the right answer (validated against the interpreter) or a clear refusal.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tracr")

from tracr.compiler import basis_inference, compiling, rasp_to_graph  # noqa: E402
from tracr.compiler import nodes as tracr_nodes  # noqa: E402
from tracr.rasp import rasp  # noqa: E402

BOS = compiling.COMPILER_BOS


def stock(program, vocab, max_len, inputs):
    model = compiling.compile_rasp_to_model(program, set(vocab), max_len)
    return model.apply([BOS] + list(inputs)).decoded[1:]


def test_negative_categorical_to_numerical_map_is_clipped_by_stock_tracr(driver, program):
    # google-deepmind/tracr#24: numerical(Map(x - 1)) on {0,1,2} gives [0, 0, 1], not [-1, 0, 1].
    shifted = rasp.numerical(rasp.Map(lambda x: x - 1, rasp.tokens))
    assert stock(shifted, {0, 1, 2}, 3, [0, 1, 2]) == [0, 0, 1]
    # rasp-sim: the value is averaged, so it is numerical and goes through the signed map.
    root = program("tokens = tokens_int; m = aggregate(select(indices, indices, <=), "
                   "tokens - 1);", "m")
    result = driver.compile_program(root, [0, 1, 2], 4, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    assert run_weights(result.weights, [[0, 1, 2]]) == [[-1.0, -0.5, 0.0]]


@pytest.mark.slow  # stock tracr compiles through JAX: about 10 s
def test_stock_value_set_of_a_numerical_mean_misses_two_thirds(driver, program):
    # 10 * frac_prevs on "xxyxxx": stock builds the map on {v/w} and gives 5 for 6.67.
    is_x = rasp.numerical(rasp.Map(lambda t: 1 if t == "x" else 0, rasp.tokens))
    frac = rasp.numerical(rasp.Aggregate(
        rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ), is_x, default=0))
    scaled = rasp.numerical(rasp.Map(lambda v: 10 * v, frac))
    out = stock(scaled, {"x", "y"}, 6, list("xxyxxx"))
    assert out[2] == pytest.approx(5.0, abs=1e-3)  # should be 6.67
    root = program('f = aggregate(select(indices, indices, <=), indicator(tokens == "x")); '
                   "s = 10 * f;", "s")
    result = driver.compile_program(root, ["x", "y"], 6, tracr_oracle=False)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    got = run_weights(result.weights, [list("xxyxxx")])[0]
    assert got == pytest.approx([10, 10, 20 / 3, 7.5, 8, 25 / 3], abs=1e-12)


@pytest.mark.slow  # stock tracr compiles through JAX: about 10 s
def test_stock_logits_are_divided_by_sqrt_key_size(driver, program):
    # A mean over a prefix: stock tracr's softmax leaks onto BOS and unselected keys.
    is_x = rasp.numerical(rasp.Map(lambda t: 1 if t == "x" else 0, rasp.tokens))
    frac = rasp.numerical(rasp.Aggregate(
        rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ), is_x, default=0))
    text = list("xyxxyxyyxx")
    exact = np.cumsum([t == "x" for t in text]) / np.arange(1, 11)
    error = np.max(np.abs(np.array(stock(frac, {"x", "y"}, 10, text)) - exact))
    assert error > 1e-8  # e^(-50/sqrt(K)) leakage, K = 11 here
    root = program('f = aggregate(select(indices, indices, <=), indicator(tokens == "x"));', "f")
    result = driver.compile_program(root, ["x", "y"], 10, samples=500)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    ours = np.array(run_weights(result.weights, [text])[0])
    assert np.max(np.abs(ours - exact)) <= 1e-12


def test_stock_key_size_ignores_ov_width_and_crashes(driver, program):
    # A head whose value space (7 tokens) is wider than its query/key spaces.
    copy = rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.EQ),
                          rasp.tokens)
    with pytest.raises(ValueError, match="could not broadcast"):
        compiling.compile_rasp_to_model(copy, set("abcdefg"), 4)
    root = program("c = aggregate(select(indices, indices, ==), tokens);", "c")
    result = driver.compile_program(root, list("abcdefg"), 4)
    assert result.report.ok and result.report.compared == sum(7 ** n for n in range(1, 5))


def test_stock_basis_inference_enumerates_every_sum(driver, program):
    # Stock: the value set of a + b + c over 20 real-valued tokens is enumerated (20^3).
    vocab = [round(0.37 * i - 3.1, 2) for i in range(20)]
    a, b, c = (rasp.numerical(rasp.Map(lambda x, k=k: k * x + k, rasp.tokens))
               for k in (1.0, 1.7, 2.3))
    total = rasp.numerical(rasp.LinearSequenceMap(
        rasp.numerical(rasp.LinearSequenceMap(a, b, 1, 1)), c, 1, 1))
    graph = rasp_to_graph.extract_rasp_graph(total)
    basis_inference.infer_bases(graph.graph, graph.sink, set(vocab), 3)
    assert len(graph.sink[tracr_nodes.VALUE_SET]) > 1000  # grows as |V|^terms
    # rasp-sim computes no value set for a numerical s-op that nothing discretises.
    from rasp_sim.compiler.tracr_backend.pipeline import compile_graph
    root = program("tokens = tokens_float; p = select(indices, indices, <=); "
                   "m = aggregate(p, tokens) + aggregate(p, 2 * tokens) + "
                   "aggregate(p, 3 * tokens);", "m")
    compiled = compile_graph(root, vocab, 3)
    sink = compiled.sink
    assert sink[tracr_nodes.VALUE_SET] is None


def test_stock_categorical_aggregate_empty_row_gives_a_value_not_the_default(driver, program):
    # Upstream issue 25: default None becomes whatever the zero vector decodes to.
    shifted = rasp.Aggregate(
        rasp.Select(rasp.indices, rasp.indices, lambda k, q: k == q + 2), rasp.tokens)
    assert None not in stock(shifted, {1, 2, 3}, 4, [2, 3, 1, 1])
    # rasp-sim keeps its default 0 on empty rows (and any other default).
    root = program("tokens = tokens_int; s = aggregate(select(indices, indices + 2, ==), "
                   "tokens, 0);", "s")
    result = driver.compile_program(root, [1, 2, 3], 4, tracr_oracle=False)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    assert run_weights(result.weights, [[2, 3, 1, 1]]) == [[1, 1, 0, 0]]


def test_stock_rejects_composite_selectors_over_different_sops(driver, local):
    both = rasp.SelectorAnd(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ),
                            rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LT))
    with pytest.raises(TypeError, match="Compiling composite Selectors is not supported"):
        compiling.compile_rasp_to_model(rasp.Aggregate(both, rasp.tokens), {"a", "b"}, 3)
    # rasp-sim: one Select over the tuple (token, index) (hist2 uses exactly this).
    result = driver.compile_program(local("selectors.rasp", "hist2"), list("abc"), 4,
                                    tracr_oracle=False)
    assert result.report.ok


def test_stock_rejects_length(driver, program):
    with pytest.raises(ValueError, match="Unsupported S-Op: length"):
        compiling.compile_rasp_to_model(rasp.Map(lambda n: n, rasp.length), {"a"}, 3)
    result = driver.compile_program(program("n = length;", "n"), ["a", "b"], 4,
                                    tracr_oracle=False)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    assert run_weights(result.weights, [list("ab"), list("abba")]) == [[2, 2], [4, 4, 4, 4]]


def test_stock_categorical_mean_over_a_wide_selector_is_an_argmax(driver, program):
    # A categorical aggregate where a query selects two keys: stock averages the one-hots
    # and decodes the arg-max; RASP's value is the mean 1.5 of [1, 2].
    everyone = rasp.Aggregate(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE),
                              rasp.tokens)
    assert stock(everyone, {1, 2}, 2, [1, 2]) != [1.5, 1.5]
    # rasp-sim: numbers averaged by a selector that may select several keys are numerical.
    result = driver.compile_program(program(
        "tokens = tokens_int; m = aggregate(select(tokens, tokens, <=), tokens);", "m"),
        [1, 2], 2, tracr_oracle=False)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    assert run_weights(result.weights, [[1, 2]])[0] == pytest.approx([1.0, 1.5], abs=1e-12)


def test_float_means_are_one_grid_point_per_value(driver, program):
    # Float sums in different orders differ in the last bits (0.75 vs 0.7500000000000001);
    # as two grid points 1e-16 apart they made the discretising MLP's step wrong.
    root = program("tokens = tokens_float; m = aggregate(select(indices, indices, <=), "
                   "tokens); c = m > 0;", "c")
    result = driver.compile_program(root, [0.5, -1.25, 3.0, 2.2], 4, tracr_oracle=False)
    assert result.report.ok, result.report.disagreement


def test_stock_numerical_mean_forces_default_zero(driver, program):
    # tracr: "Default for a numerical aggregate must be 0"; rasp-sim keeps any number.
    is_x = rasp.numerical(rasp.Map(lambda t: 1 if t == "x" else 0, rasp.tokens))
    earlier = rasp.numerical(rasp.Aggregate(
        rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LT), is_x, default=-1))
    with pytest.raises(NotImplementedError, match="default value"):
        compiling.compile_rasp_to_model(earlier, {"x", "y"}, 3)
    root = program('e = aggregate(select(indices, indices, <), indicator(tokens == "x"), -1);',
                   "e")
    result = driver.compile_program(root, ["x", "y"], 4, tracr_oracle=False)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    assert run_weights(result.weights, [list("xyx")])[0] == pytest.approx([-1, 1, 0.5],
                                                                          abs=1e-12)
