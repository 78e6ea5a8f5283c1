"""Batched forward pass of the weight format (compiler/weights.py), float64.

Every function is a pure function of arrays and takes the array module `xp` (NumPy by
default), so the same code can run under `jax.numpy` for the embedding-training
experiments. Shapes: inputs (B, N, d_in) features or (B, N) token ids; the residual stream
(B, N, D); outputs (B, N, c).
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .weights import (AttentionBlock, LayerNorm, Matrix, MLPBlock, SparseMatrix, Transformer,
                      WeightsError)

Array = Any  # an xp array


def matmul(x: Array, w: Matrix, xp: ModuleType = np) -> Array:
    """x @ w over the last axis of x, for a dense or a sparse w."""
    if not isinstance(w, SparseMatrix):
        return x @ xp.asarray(w)
    flat = x.reshape(-1, w.shape[0])
    contributions = flat[:, w.rows] * xp.asarray(w.values)
    if xp is np:
        out = np.zeros((flat.shape[0], w.shape[1]))
        order, columns, starts = w.column_runs
        if columns.size:
            out[:, columns] = np.add.reduceat(contributions[:, order], starts, axis=1)
    else:  # functional update (jax.numpy)
        out = xp.zeros((flat.shape[0], w.shape[1])).at[:, w.cols].add(contributions)
    return out.reshape(*x.shape[:-1], w.shape[1])


def layer_norm(x: Array, norm: LayerNorm, xp: ModuleType = np) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + norm.eps) * norm.gain + norm.bias


def softmax_attention(q: Array, k: Array, scale: float, causal: bool,
                      xp: ModuleType = np) -> Array:
    """Row-stochastic attention matrix softmax(scale q k^T), shape (B, N, N)."""
    scores = scale * (q @ xp.swapaxes(k, -1, -2))
    if causal:
        n = scores.shape[-1]
        scores = xp.where(xp.tril(xp.ones((n, n), dtype=bool)), scores, -xp.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = xp.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def attention(x: Array, block: AttentionBlock, causal: bool, xp: ModuleType = np) -> Array:
    """Sum over heads of A_h x W_V W_O (without the residual)."""
    total = 0.0
    for head in block.heads:
        pattern = softmax_attention(matmul(x, head.w_q, xp), matmul(x, head.w_k, xp),
                                    block.scale, causal, xp)
        out = pattern @ matmul(x, head.w_v, xp)
        total = total + (out if head.w_o is None else matmul(out, head.w_o, xp))
    return total


ACTIVATION_FUNCTIONS = {
    "relu": lambda z, xp: xp.maximum(z, 0.0),
    # GPT-2's tanh approximation of GELU (the frozen random MLPs of UNIVERSAL.md 10.3).
    "gelu": lambda z, xp: 0.5 * z * (1.0 + xp.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3))),
}


def mlp(x: Array, block: MLPBlock, xp: ModuleType = np) -> Array:
    hidden = ACTIVATION_FUNCTIONS[block.activation](matmul(x, block.w1, xp) + block.b1, xp)
    return matmul(hidden, block.w2, xp) + block.b2


def apply_block(x: Array, block: AttentionBlock | MLPBlock, causal: bool,
                xp: ModuleType = np) -> Array:
    """One block: optional pre-LayerNorm, the sublayer, optional residual."""
    inner = x if block.norm is None else layer_norm(x, block.norm, xp)
    out = attention(inner, block, causal, xp) if isinstance(block, AttentionBlock) \
        else mlp(inner, block, xp)
    return x + out if block.residual else out


def embed_features(model: Transformer, features: Array, xp: ModuleType = np) -> Array:
    """The residual stream at layer 0 for real input features (B, N, d_in)."""
    features = xp.asarray(features, dtype=xp.float64)
    if model.input_proj is None:
        if features.shape[-1] != model.width:
            raise WeightsError(f"input: feature dimension {features.shape[-1]} differs from the "
                               f"model width D = {model.width} and the model has no input_proj")
        return features
    d_in = model.input_proj.shape[0]
    if features.shape[-1] != d_in:
        raise WeightsError(f"input: feature dimension {features.shape[-1]} differs from "
                           f"input_proj rows d_in = {d_in}")
    return matmul(features, model.input_proj, xp)


def embed_tokens(model: Transformer, ids: Array, xp: ModuleType = np) -> Array:
    """The residual stream at layer 0 for token ids (B, N): token plus position embedding."""
    if model.token_embed is None:
        raise WeightsError("token_embed: the model has no token embedding")
    stream = xp.asarray(model.token_embed)[ids]
    if model.pos_embed is not None:
        n = ids.shape[-1]
        if n > model.pos_embed.shape[0]:
            raise WeightsError(f"pos_embed: sequence length {n} exceeds max_len "
                               f"{model.pos_embed.shape[0]}")
        stream = stream + xp.asarray(model.pos_embed)[:n]
    return stream


def residual_stream(model: Transformer, stream: Array, xp: ModuleType = np) -> list[Array]:
    """The residual stream before the first block and after each block."""
    states = [stream]
    for block in model.layers:
        states.append(apply_block(states[-1], block, model.causal, xp))
    return states


def readout(model: Transformer, stream: Array, xp: ModuleType = np) -> Array:
    if model.final_norm is not None:
        stream = layer_norm(stream, model.final_norm, xp)
    return matmul(stream, model.unembed, xp)


def forward(model: Transformer, inputs: Array, xp: ModuleType = np) -> Array:
    """Outputs (B, N, c) for features (B, N, d_in) (float) or token ids (B, N) (integer)."""
    inputs = xp.asarray(inputs)
    if xp.issubdtype(inputs.dtype, xp.integer):
        stream = embed_tokens(model, inputs, xp)
    else:
        stream = embed_features(model, inputs, xp)
    return readout(model, residual_stream(model, stream, xp)[-1], xp)
