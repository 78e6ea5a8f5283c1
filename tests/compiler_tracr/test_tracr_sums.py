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
