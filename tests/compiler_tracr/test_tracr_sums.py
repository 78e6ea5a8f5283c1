"""A `sum` over a selector whose width is not one fixed k (it reads the tokens, or its
width varies by query or length) is selector width x mean: tracr's selector width, a mean
head, one gated MLP (translate._width_times_mean). Checked against the interpreter and
NumPy's own sums, on every input of small domains, and through the torch loader."""
from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("tracr")

import rasp_sim  # noqa: E402
from rasp_sim.compiler.tracr_backend.runtime import NUMERIC_TOLERANCE  # noqa: E402

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
       ">": operator.gt, ">=": operator.ge}
VOCAB = [0, 1, 2, 3]
MAX_LEN = 4


def numpy_sums(tokens: list[int], op: str, scale: float, default: float) -> np.ndarray:
    """sum over keys k with tokens[k] op tokens[q] of scale * tokens[k], by NumPy."""
    x = np.asarray(tokens)
    selected = OPS[op](x[None, :], x[:, None])  # [q, k]: key op query
    sums = (selected * (scale * x)[None, :]).sum(axis=1)
    return np.where(selected.any(axis=1), sums, default)


@settings(max_examples=6, deadline=None)
@given(op=st.sampled_from(sorted(OPS)), scale=st.sampled_from([1, 0.1, -2.5]),
       default=st.integers(-3, 3))
def test_a_sum_over_a_token_selector_agrees_with_numpy_and_the_interpreter(op, scale, default):
    program = rasp_sim.parse(f"tokens = tokens_int;\n"
                             f"s = sum(select(tokens, tokens, {op}), tokens * {scale}, {default});")
    model = rasp_sim.compile(program, "s", vocab=VOCAB, max_len=MAX_LEN)
    assert model.info["validation"]["mode"] == "exhaustive"  # the interpreter, every input
    inputs = [list(x) for n in range(1, MAX_LEN + 1) for x in itertools.product(VOCAB, repeat=n)]
    got = np.array([row + [0.0] * (MAX_LEN - len(row)) for row in model.run(inputs)], float)
    want = np.array([list(numpy_sums(x, op, scale, default)) + [0.0] * (MAX_LEN - len(x))
                     for x in inputs])
    assert np.all(np.abs(got - want) <= NUMERIC_TOLERANCE * np.maximum(1.0, np.abs(want)))


def test_counting_the_tokens_equal_to_each_and_reading_the_count():
    # "count the tokens equal to x", then a select keyed on the count (a categorical use
    # of the sum: the discretising MLP after the product reads the sums' value set)
    program = rasp_sim.parse('hits = sum(select(tokens, tokens, ==), 1);\n'
                             'first = aggregate(select(indices, hits, ==), tokens, "-");')
    for name in ("hits", "first"):
        model = rasp_sim.compile(program, name, vocab=list("abc"), max_len=5)
        assert model.info["validation"]["mode"] == "exhaustive"
    assert rasp_sim.compile(program, "hits", vocab=list("abc"), max_len=5).run(["abca"]) == \
        [[2, 1, 1, 2]]


def test_a_prefix_sum_of_real_tokens_compiles_at_every_length():
    # select(indices, indices, <=) selects q + 1 keys: no fixed width, so width x mean
    program = rasp_sim.parse("x = tokens_float;\np = sum(select(indices, indices, <=), x);")
    model = rasp_sim.compile(program, "p", numeric_tokens=True, min_len=1, max_len=6)
    rng = np.random.default_rng(0)
    for n in range(1, 7):
        x = rng.normal(size=n)
        assert np.allclose(model.run([x.tolist()])[0], np.cumsum(x), rtol=1e-12, atol=1e-12)


def test_the_torch_module_computes_the_product():
    torch = pytest.importorskip("torch")
    program = rasp_sim.parse("tokens = tokens_int;\n"
                             "s = sum(select(tokens, tokens, <=), tokens * 0.5, -1);")
    model = rasp_sim.compile(program, "s", vocab=VOCAB, max_len=MAX_LEN)
    from rasp_sim.compiler.forward import forward
    from rasp_sim.compiler.tracr_backend.runtime import token_ids

    ids = np.array([token_ids(model.weights, [3, 0, 2, 2])])
    got = model.to_torch()(torch.as_tensor(ids)).detach().numpy()
    assert np.allclose(got, forward(model.weights, ids), rtol=0, atol=1e-12)


# Found by the random width programs (test_tracr_random_programs.py): a sum over a
# position-only selector that selects 0 or k keys is a mean head scaled by k, and what
# reads it (a map's table, a select) reads its value set, which held the means of the
# values, not their sums: `v1 + 1` had no row for the sum 2 and gave 2 for 3.
@pytest.mark.parametrize("reader", ["y = v1 + 1;", "y = v1 + x;",
                                    "y = selector_width(select(v1, x + 1, ==));"])
def test_what_reads_a_sum_of_a_fixed_width_reads_its_sums(reader):
    program = rasp_sim.parse(f"x = tokens_int;\nv1 = sum(select(length, 2, ==), x);\n{reader}")
    model = rasp_sim.compile(program, "y", vocab=[0, 1], max_len=3)
    assert model.info["validation"]["mode"] == "exhaustive"
    inputs = [[1, 1], [1, 0], [0, 1, 1]]
    assert model.run(inputs) == program.run(inputs, "y")


# A position-only value that fails at one length fails on every input of that length:
# those are outside the program's domain, as validation counts them. Reading the sum's
# width there raised the interpreter's error at compile time ("division by zero ... on
# input 0 ([0, 0])"), or, causal, for the mean of a column of bools only.
@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
@pytest.mark.parametrize("source", [
    "d = 1 / (length - 2);\ny = sum(select(d, 0.5, <), x);",
    "w = selector_width(select(0, 0, !=));\nb = (w == 0) if w < 1 else w;\n"
    "m = aggregate(select(0, 0, ==), b);\ny = sum(select(0, m, ==), x);",
], ids=["division-by-zero", "mean-of-bools-only"])
def test_a_sum_whose_selector_fails_at_a_length_compiles_for_the_others(source, causal):
    program = rasp_sim.parse(f"x = tokens_int;\n{source}")
    model = rasp_sim.compile(program, "y", vocab=[0, 1], max_len=3, causal=causal)
    validation = model.info["validation"]
    assert validation["mode"] == "exhaustive" and validation["undefined"] > 0
