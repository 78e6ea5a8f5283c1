"""The batched forward pass against a straightforward per-sequence, per-position reference."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.forward import forward, matmul
from rasp_sim.compiler.weights import SparseMatrix, as_dense

from .test_weights import full_model


def reference_forward(model, ids):
    """One sequence at a time, one query position at a time, plain Python loops for softmax."""
    outputs = []
    for seq in ids:
        n = len(seq)
        x = np.stack([model.token_embed[t] + model.pos_embed[i] for i, t in enumerate(seq)])
        for block in model.layers:
            inner = x
            if block.norm is not None:
                inner = np.stack([(row - row.mean()) / math.sqrt(row.var() + block.norm.eps)
                                  * block.norm.gain + block.norm.bias for row in x])
            if hasattr(block, "heads"):
                out = np.zeros_like(x)
                for head in block.heads:
                    q, k = inner @ as_dense(head.w_q), inner @ as_dense(head.w_k)
                    v = inner @ as_dense(head.w_v)
                    if head.w_o is not None:
                        v = v @ as_dense(head.w_o)
                    for i in range(n):
                        keys = range(i + 1) if model.causal else range(n)
                        logits = [block.scale * float(q[i] @ k[j]) for j in keys]
                        top = max(logits)
                        w = [math.exp(s - top) for s in logits]
                        out[i] += sum(wj * v[j] for wj, j in zip(w, keys)) / sum(w)
            else:
                out = np.maximum(inner @ block.w1 + block.b1, 0) @ block.w2 + block.b2
            x = x + out if block.residual else out
        norm = model.final_norm
        x = np.stack([(row - row.mean()) / math.sqrt(row.var() + norm.eps) * norm.gain
                      + norm.bias for row in x])
        outputs.append(x @ model.unembed)
    return np.stack(outputs)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 3), n=st.integers(1, 6),
       causal=st.booleans())
def test_forward_matches_reference(seed, batch, n, causal):
    model = full_model(seed % 1000).replace(causal=causal)
    ids = np.random.default_rng(seed).integers(0, 4, size=(batch, n))
    got = forward(model, ids)
    want = reference_forward(model, ids)
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
