"""The forward pass's shortcuts for compiled (tracr) weights against the plain formulas,
and the assembly's dropping of dead MLP units."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.forward import matmul, mlp
from rasp_sim.compiler.weights import MLPBlock


def sparse_structured(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """A random matrix with random all-zero rows and columns (as tracr's blocks have)."""
    w = rng.normal(size=shape)
    w[rng.random(shape[0]) < rng.random()] = 0.0
    w[:, rng.random(shape[1]) < rng.random()] = 0.0
    return w


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 40), k=st.integers(1, 40),
       rows=st.integers(0, 50))
def test_dense_matmul_skipping_zero_rows_and_columns_is_the_product(seed, d, k, rows):
    rng = np.random.default_rng(seed)
    w = sparse_structured(rng, (d, k))
    x = rng.normal(size=(rows, 3, d))
    # Dropped terms are x * 0 = 0 exactly; the rest may be summed in another order by BLAS,
    # so agreement to a few ulps of the sum of |terms|.
    bound = 1e-14 * (np.abs(x) @ np.abs(w)).max(initial=1.0)
    np.testing.assert_allclose(matmul(x, w), x @ w, rtol=0, atol=bound)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hidden=st.integers(1, 600))
def test_chunked_mlp_is_the_mlp(seed, hidden):
    # 1200 rows: more than one chunk once hidden > 218 (2^18 / 1200).
    rng = np.random.default_rng(seed)
    block = MLPBlock(sparse_structured(rng, (12, hidden)), rng.normal(size=hidden),
                     sparse_structured(rng, (hidden, 12)), rng.normal(size=12))
    x = rng.normal(size=(400, 3, 12))
    want = np.maximum(x @ block.w1 + block.b1, 0.0) @ block.w2 + block.b2
    bound = 1e-13 * (np.abs(np.maximum(x @ block.w1 + block.b1, 0.0)) @ np.abs(block.w2)).max(
        initial=1.0) + 1e-13 * np.abs(block.b2).max()
    np.testing.assert_allclose(mlp(x, block), want, rtol=0, atol=bound)


def test_compiled_mlps_keep_only_units_that_write(driver, library):
    pytest.importorskip("tracr")
    from rasp_sim.compiler.weights import MLPBlock as Block

    result = driver.compile_program(library("dyck.rasp", "dyck1_state"), list("()"), 8,
                                    tracr_oracle=False)
    assert result.report.ok
    blocks = [b for b in result.weights.layers if isinstance(b, Block)]
    assert blocks and all(np.all(np.any(b.w2 != 0, axis=1)) for b in blocks)
    # the sequence map of the two prefix means had 786 table units, 10 of which write
    assert max(b.w1.shape[1] for b in blocks) < 100


def test_in_place_forward_is_the_block_by_block_stream(driver, library):
    pytest.importorskip("tracr")
    from rasp_sim.compiler.forward import embed_tokens, forward, readout, residual_stream

    weights = driver.compile_program(library("dyck.rasp", "shuffle_dyck2_state"), list("(){}"),
                                     6, tracr_oracle=False).weights
    ids = np.random.default_rng(0).integers(1, len(weights.input_encoder.tokens), (64, 7))
    ids[:, 0] = weights.input_encoder.tokens.index(weights.input_encoder.bos)
    features = embed_tokens(weights, ids)
    before = features.copy()
    want = readout(weights, residual_stream(weights, features)[-1])
    # Same operations on the written columns only; BLAS may order a sum differently (ulps).
    np.testing.assert_allclose(forward(weights, ids), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(forward(weights, features), want, rtol=0, atol=1e-12)
    assert np.array_equal(features, before)  # the caller's array is not the updated stream


@pytest.mark.parametrize("causal", [False, True])
def test_the_planned_forward_of_a_model_with_input_free_heads_is_the_stream(driver, library,
                                                                            causal):
    """matmul's heads read only positions (patterns computed once), softmax's read the
    tokens: the plan's shortcuts against the block-by-block stream."""
    from rasp_sim.compiler.forward import (_plan, embed_features, forward, readout,
                                           residual_stream)
    from rasp_sim.compiler.tracr_backend.continuous import NumericDomain

    # Causal, the shifted softmax's row maximum is each key's own prefix maximum, no shift
    # the softmax ignores (static.py): refused; the unshifted one's heads read the tokens too.
    softmax = "softmax_unshifted_2x3" if causal else "softmax_2x3"
    for name, length in (("matmul_2x3x2", 12), (softmax, 6)):
        weights = driver.compile_program(library("numeric.rasp", name), [], length,
                                         tracr_oracle=False, causal=causal,
                                         numeric=NumericDomain(length, length, -10, 10)).weights
        inputs = np.random.default_rng(1).normal(size=(33, length, 1))
        plan = _plan(weights)
        columns = plan.fixed_columns(inputs)
        fixed = [bool(columns[rows].all()) for step in plan.steps
                 for rows in getattr(step, "qk_rows", [])]
        want = readout(weights, residual_stream(weights, embed_features(weights, inputs))[-1])
        np.testing.assert_allclose(forward(weights, inputs), want, rtol=0, atol=1e-12)
        if name == "matmul_2x3x2":
            assert fixed and all(fixed), "every matmul head reads positions only"


def test_a_proof_batch_of_dyck2_is_a_few_hundred_distinct_rows(driver, library):
    """Every input of length 6 over (){} (4,096 inputs, 28,672 positions): the planned
    forward holds the stream as its distinct rows, a small fraction of the positions
    after every block, and gives the row-by-row plan's outputs."""
    import itertools

    from rasp_sim.compiler.forward import _plan, _run_steps, forward

    weights = driver.compile_program(library("dyck.rasp", "dyck2_state"), list("(){}"), 6,
                                     tracr_oracle=False).weights
    tokens = weights.input_encoder.tokens
    body = np.array(list(itertools.product([tokens.index(t) for t in "(){}"], repeat=6)))
    ids = np.concatenate([np.full((len(body), 1), tokens.index(weights.input_encoder.bos)),
                          body], axis=1)
    plan = _plan(weights)
    state = plan.distinct_rows(ids)
    columns = plan.fixed_columns(ids)
    sizes = []
    for step in plan.steps:
        state = step.apply_distinct(state, weights.causal, columns)
        sizes.append(len(state.table))
    assert max(sizes) < ids.size / 20, sizes
    rows = _run_steps(plan, weights, ids, checked=False)
    np.testing.assert_allclose(state.table[state.index], rows, rtol=0, atol=1e-9)
    by_rows = rows.reshape(-1, rows.shape[-1])[:, plan.readout_rows] @ plan.unembed
    np.testing.assert_allclose(forward(weights, ids).reshape(by_rows.shape), by_rows, rtol=0,
                               atol=1e-9)
