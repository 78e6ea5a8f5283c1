"""The batched forward pass against the plain per-sequence, per-position reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.forward import forward, matmul
from rasp_sim.compiler.weights import SparseMatrix

from .reference import reference_tokens
from .test_weights import full_model


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
