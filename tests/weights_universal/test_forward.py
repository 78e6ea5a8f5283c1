"""The batched forward pass against the plain per-sequence, per-position reference."""
from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.forward import forward, matmul
from rasp_sim.compiler.weights import (AttentionBlock, AttentionHead, LayerNorm, MLPBlock,
                                       SparseMatrix, Transformer)

from .reference import reference_features, reference_tokens
from .test_weights import full_model

# NumPy under another name: forward's generic `xp` path (the one jax.numpy takes), which
# skips the NumPy-only in-place fast paths, runs without importing JAX.
GENERIC_NUMPY = types.ModuleType("generic_numpy")
GENERIC_NUMPY.__dict__.update({k: v for k, v in np.__dict__.items() if not k.startswith("__")})


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 3), n=st.integers(1, 6),
       causal=st.booleans())
def test_forward_matches_reference(seed, batch, n, causal):
    model = full_model(seed % 1000).replace(causal=causal)
    ids = np.random.default_rng(seed).integers(0, 4, size=(batch, n))
    got = forward(model, ids)
    want = reference_tokens(model, ids)
    # Same float64 operations in a different order: agreement to ~1e-12 relative.
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nnz=st.integers(0, 20))
def test_sparse_matmul_equals_dense(seed, nnz):
    rng = np.random.default_rng(seed)
    sparse = SparseMatrix((6, 4), rng.integers(0, 6, nnz), rng.integers(0, 4, nnz),
                          rng.normal(size=nnz))  # duplicates allowed: they add up
    x = rng.normal(size=(2, 3, 6))
    np.testing.assert_allclose(matmul(x, sparse), x @ sparse.toarray(), rtol=1e-13, atol=1e-13)


def test_features_input_uses_input_proj():
    model = full_model()
    x = np.random.default_rng(1).normal(size=(2, 3, 2))
    direct = forward(model.replace(input_proj=None), x @ model.input_proj)
    np.testing.assert_allclose(forward(model, x), direct, rtol=1e-12, atol=1e-12)


def test_features_input_adds_the_position_embedding():
    model = full_model()
    x = np.random.default_rng(2).normal(size=(2, 4, 2))
    got = forward(model, x)
    np.testing.assert_allclose(got, reference_features(model, x), rtol=1e-10, atol=1e-10)
    # without pos_embed (the universal transformers) the features alone enter
    bare = model.replace(pos_embed=None)
    np.testing.assert_allclose(forward(bare, x), reference_features(bare, x), rtol=1e-10,
                               atol=1e-10)
    assert np.abs(got - forward(bare, x)).max() > 1e-3
    with pytest.raises(Exception, match="sequence length 7 exceeds max_len 6"):
        forward(model, np.zeros((1, 7, 2)))


def dense_mlp_model(seed: int, activation: str, gated: bool, norm: bool = False,
                    causal: bool = False) -> Transformer:
    """A small dense model (feature input, positions) around one MLP of each kind."""
    rng = np.random.default_rng(seed)
    D, hidden = 4, 6
    gate = dict(w_gate=rng.normal(size=(D, hidden)), b_gate=rng.normal(size=hidden)) if gated else {}
    ln = LayerNorm(rng.normal(size=D), rng.normal(size=D)) if norm else None
    return Transformer(
        layers=(AttentionBlock((AttentionHead(rng.normal(size=(D, 2)), rng.normal(size=(D, 2)),
                                              rng.normal(size=(D, D))),), scale=0.9, norm=ln),
                MLPBlock(rng.normal(size=(D, hidden)), rng.normal(size=hidden),
                         rng.normal(size=(hidden, D)), rng.normal(size=D),
                         activation=activation, **gate)),
        unembed=rng.normal(size=(D, 3)), causal=causal, input_proj=rng.normal(size=(1, D)),
        pos_embed=rng.normal(size=(5, D)))


@pytest.mark.parametrize("activation", ["relu", "gelu", "linear"])
@pytest.mark.parametrize("gated", [False, True])
def test_mlp_kinds_on_both_paths_match_the_reference(activation, gated):
    model = dense_mlp_model(3, activation, gated, norm=True, causal=gated)
    x = np.random.default_rng(4).normal(size=(3, 5, 1))
    want = reference_features(model, x)
    for xp in (np, GENERIC_NUMPY):
        np.testing.assert_allclose(forward(model, x, xp), want, rtol=1e-10, atol=1e-12)


def test_the_gate_multiplies_the_hidden_layer():
    """A bilinear block computes (x W1 + b1) * (x Wg + bg): check one value by hand."""
    w1, wg = np.array([[2.0], [0.0]]), np.array([[0.0], [3.0]])
    block = MLPBlock(w1, np.array([1.0]), np.array([[1.0, 0.0]]), np.zeros(2),
                     activation="linear", residual=False, w_gate=wg, b_gate=np.array([-1.0]))
    model = Transformer(layers=(block,), unembed=np.eye(2))
    x = np.array([[[0.5, 2.0]]])  # (2*0.5 + 1) * (3*2 - 1) = 2 * 5
    for xp in (np, GENERIC_NUMPY):
        assert forward(model, x, xp)[0, 0].tolist() == [10.0, 0.0]


@pytest.mark.slow  # importing and tracing jax takes ~10 s on a loaded 2-core machine
def test_forward_runs_under_jax_and_differentiates_in_the_embedding():
    """The later embedding-training experiments run this forward pass under jax.numpy and
    differentiate with respect to E, which enters as an array, not through the dataclass."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from rasp_sim.compiler.forward import readout, residual_stream
    from rasp_sim.compiler.universal.embed import embed
    from rasp_sim.compiler.universal.sparse import build_sparse
    from rasp_sim.compiler.universal.target import Shape, random_target

    shape = Shape(3, 2, 2, heads=2, layers=2, residual=True)
    ut, target = build_sparse(shape), random_target(shape, 1)
    embedding = embed(target, ut).matrix
    x = np.random.default_rng(0).normal(size=(2, 5, 3))

    def loss(e):
        out = readout(ut, residual_stream(ut, matmul(x, e, jnp), jnp)[-1], jnp)
        return ((out - forward(target, x)) ** 2).sum()

    with jax.enable_x64(True):
        assert float(loss(jnp.asarray(embedding))) <= 1e-24  # exact simulation: zero loss
        gradient = jax.grad(loss)(jnp.asarray(embedding + 0.01))
    assert gradient.shape == embedding.shape and np.isfinite(np.asarray(gradient)).all()
    assert np.abs(np.asarray(gradient)).max() > 0


def _sparse_columns(rng: np.random.Generator, rows: int, cols: int, keep: float) -> np.ndarray:
    """A dense matrix whose rows and columns are zero with probability 1 - keep: the
    structure of compiled blocks, which read and write a few residual directions."""
    w = rng.normal(size=(rows, cols))
    w[rng.random(rows) > keep] = 0.0
    w[:, rng.random(cols) > keep] = 0.0
    return w


def _planned_model(seed: int, causal: bool) -> Transformer:
    """A dense, residual, norm-free model (the planned forward's path): heads with and
    without W_O, a head reading only position columns (an input-independent pattern), a
    gated and a plain MLP, blocks writing overlapping and scattered columns."""
    rng = np.random.default_rng(seed)
    d, tokens, positions = 12, 4, 7
    token_embed = _sparse_columns(rng, tokens, d, 0.7)
    token_embed[:, :3] = 0.0  # columns 0-2: positions only
    pos_embed = rng.normal(size=(positions, d))
    position_only = np.zeros((d, 2))
    position_only[:3] = rng.normal(size=(3, 2))
    layers = [
        AttentionBlock((AttentionHead(_sparse_columns(rng, d, 3, 0.6), _sparse_columns(rng, d, 3, 0.6),
                                      _sparse_columns(rng, d, 2, 0.8), _sparse_columns(rng, 2, d, 0.5)),
                        AttentionHead(position_only, position_only.copy(), _sparse_columns(rng, d, d, 0.4)),
                        AttentionHead(rng.normal(size=(d, 2)), rng.normal(size=(d, 2)),
                                      _sparse_columns(rng, d, 3, 0.7), _sparse_columns(rng, 3, d, 0.5))),
                       scale=0.5),
        MLPBlock(_sparse_columns(rng, d, 5, 0.7), rng.normal(size=5), _sparse_columns(rng, 5, d, 0.5),
                 rng.normal(size=d) * (rng.random(d) > 0.6), activation="linear",
                 w_gate=_sparse_columns(rng, d, 5, 0.7), b_gate=rng.normal(size=5)),
        MLPBlock(_sparse_columns(rng, d, 6, 0.6), rng.normal(size=6), _sparse_columns(rng, 6, d, 0.6),
                 np.zeros(d)),
    ]
    for block in layers:  # no block writes the position columns: they stay input-independent
        outputs = [h.w_v if h.w_o is None else h.w_o for h in block.heads] \
            if isinstance(block, AttentionBlock) else [block.w2, block.b2[None, :]]
        for w in outputs:
            w[:, :3] = 0.0
    return Transformer(tuple(layers), _sparse_columns(rng, d, 3, 0.6), causal=causal,
                       token_embed=token_embed, pos_embed=pos_embed)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 4), n=st.integers(1, 7),
       causal=st.booleans())
def test_planned_forward_matches_the_block_by_block_forward(seed, batch, n, causal):
    """The NumPy forward's plan (columns read and written, reordered residual, stacked
    heads, input-independent patterns computed once) against the generic block-by-block
    forward and the per-sequence reference, on token ids and on the embedded stream."""
    model = _planned_model(seed % 1000, causal)
    ids = np.random.default_rng(seed).integers(0, 4, size=(batch, n))
    want = forward(model, ids, xp=GENERIC_NUMPY)
    scale = max(1.0, np.abs(want).max())
    np.testing.assert_allclose(forward(model, ids), want, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(want, reference_tokens(model, ids), rtol=1e-10, atol=1e-12 * scale)
    stream = np.asarray(model.token_embed)[ids] + np.asarray(model.pos_embed)[:n]
    bare = model.replace(token_embed=None, pos_embed=None)
    np.testing.assert_allclose(forward(bare, stream), want, rtol=0, atol=1e-12 * scale)


def _bos_model(seed: int, causal: bool) -> Transformer:
    """Token 0 plays BOS: column 3 is 1 for it and 0 for the other tokens. Heads 0 and 1
    read only the position columns (0-2) and the BOS column with equal query and key
    weights (their patterns are equal and fixed on a batch with BOS at position 0 only);
    head 2 reads the tokens. The MLP's W2 and head 2's W_O write one column per unit
    (a gather in the plan), the other heads' W_O are dense."""
    rng = np.random.default_rng(seed)
    d, tokens, positions = 10, 4, 6
    token_embed = np.zeros((tokens, d))
    token_embed[0, 3] = 1.0
    token_embed[1:, 4:] = rng.normal(size=(tokens - 1, d - 4))
    pos_embed = np.zeros((positions, d))
    pos_embed[:, :3] = rng.normal(size=(positions, 3))
    position_and_bos = np.zeros((d, 2))
    position_and_bos[:4] = rng.normal(size=(4, 2))

    def writes_tokens(w: np.ndarray) -> np.ndarray:
        w[:, :4] = 0.0  # no block writes the position and BOS columns
        return w

    monomial = np.zeros((3, d))
    monomial[[0, 1, 2], [5, 7, 9]] = rng.normal(size=3)
    heads = (AttentionHead(position_and_bos, position_and_bos.copy(), rng.normal(size=(d, 2)),
                           writes_tokens(rng.normal(size=(2, d)))),
             AttentionHead(position_and_bos.copy(), position_and_bos.copy(),
                           rng.normal(size=(d, 1)), writes_tokens(rng.normal(size=(1, d)))),
             AttentionHead(rng.normal(size=(d, 2)), rng.normal(size=(d, 2)),
                           rng.normal(size=(d, 3)), monomial))
    w2 = np.zeros((4, d))
    w2[[0, 1, 2, 3], [4, 6, 8, 9]] = rng.normal(size=4)
    layers = (AttentionBlock(heads, scale=0.7),
              MLPBlock(rng.normal(size=(d, 4)), rng.normal(size=4), w2, np.zeros(d)),
              AttentionBlock(heads[:2], scale=1.3))
    return Transformer(layers, rng.normal(size=(d, 3)), causal=causal,
                       token_embed=token_embed, pos_embed=pos_embed)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 6), n=st.integers(1, 6),
       causal=st.booleans(), bos_elsewhere=st.booleans())
def test_patterns_fixed_within_a_batch_match_the_block_by_block_forward(seed, batch, n, causal,
                                                                         bos_elsewhere):
    """Heads whose queries and keys read the position and BOS columns have one pattern on
    a batch with BOS at position 0 only (computed once, equal heads grouped): against the
    generic forward, also on batches where BOS appears elsewhere (patterns per input)."""
    model = _bos_model(seed % 1000, causal)
    rng = np.random.default_rng(seed)
    ids = rng.integers(0 if bos_elsewhere else 1, 4, size=(batch, n))
    ids[:, 0] = 0
    want = forward(model, ids, xp=GENERIC_NUMPY)
    scale = max(1.0, np.abs(want).max())
    np.testing.assert_allclose(forward(model, ids), want, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(want, reference_tokens(model, ids), rtol=1e-10, atol=1e-12 * scale)


def test_the_bos_columns_are_fixed_only_where_every_input_has_bos_there():
    from rasp_sim.compiler.forward import _plan

    model = _bos_model(0, causal=False)
    plan = _plan(model)
    ids = np.array([[0, 1, 2], [0, 3, 1]])
    assert plan.fixed_columns(ids)[:4].all() and not plan.fixed_columns(ids)[4:].any()
    ids[1, 2] = 0  # BOS at position 2 of one input: column 3 differs between the inputs there
    assert not plan.fixed_columns(ids)[3]
    assert plan.fixed_columns(ids[:1])[3]  # one input: every column is fixed in its batch


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 12), n=st.integers(1, 6),
       tokens=st.integers(1, 3), causal=st.booleans())
def test_the_stream_as_distinct_rows_is_the_stream_row_by_row(seed, batch, n, tokens, causal):
    """Token batches run on the stream's distinct rows (`_DistinctRows`), which repeat
    most where the batch has few tokens: against the plan run row by row (`_run_steps`)
    and the generic forward."""
    from rasp_sim.compiler.forward import _plan, _run_steps

    for model in (_bos_model(seed % 1000, causal), _planned_model(seed % 1000, causal)):
        ids = np.random.default_rng(seed).integers(0, tokens + 1, size=(batch, n))
        plan = _plan(model)
        state = plan.distinct_rows(ids)
        assert state is not None
        columns = plan.fixed_columns(ids)
        for step in plan.steps:
            state = step.apply_distinct(state, causal, columns)
        rows = _run_steps(plan, model, ids, checked=False)
        scale = max(1.0, np.abs(rows).max())
        np.testing.assert_allclose(state.table[state.index], rows, rtol=0, atol=1e-12 * scale)
        assert len(state.table) <= batch * n
        want = forward(model, ids, xp=GENERIC_NUMPY)
        np.testing.assert_allclose(forward(model, ids), want, rtol=0,
                                   atol=1e-12 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("bad", [-1, 4, 99])
def test_a_token_id_outside_the_vocabulary_is_refused_naming_it(bad):
    """Not an IndexError, and a negative id is not read as one counted from the end: on
    the planned path (distinct rows, table) and the generic one alike."""
    from rasp_sim.compiler.weights import WeightsError

    model = _bos_model(0, causal=False)
    ids = np.array([[0, 1, 2], [0, bad, 1]])
    for xp in (np, GENERIC_NUMPY):
        with pytest.raises(WeightsError, match=f"token id {bad} is outside the model's "
                                               "vocabulary of 4 ids"):
            forward(model, ids, xp=xp)


@pytest.mark.parametrize("shape", [(0, 3), (2, 0), (0, 3, 10), (2, 0, 10)])
def test_an_empty_batch_is_an_empty_output(shape):
    """No input or no position: outputs of that shape, not an error from inside a block."""
    model = _bos_model(0, causal=False)
    ids = np.zeros(shape, dtype=np.int64 if len(shape) == 2 else np.float64)
    assert forward(model, ids).shape == (*shape[:2], model.unembed.shape[1])
