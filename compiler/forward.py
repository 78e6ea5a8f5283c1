"""Batched forward pass of the weight format (compiler/weights.py), float64.

Every function is a pure function of arrays and takes the array module `xp` (NumPy by
default), so the same code can run under `jax.numpy` for the embedding-training
experiments. Shapes: inputs (B, N, d_in) features or (B, N) token ids; the residual stream
(B, N, D); outputs (B, N, c).
"""
from __future__ import annotations

from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np

from .weights import (AttentionBlock, AttentionHead, LayerNorm, Matrix, MLPBlock, SparseMatrix,
                      Transformer, WeightsError)

Array = Any  # an xp array


def matmul(x: Array, w: Matrix, xp: ModuleType = np) -> Array:
    """x @ w over the last axis of x, for a dense or a sparse w."""
    if not isinstance(w, SparseMatrix):
        # One 2-D GEMM over all B*N rows: NumPy runs a stacked (B, N, D) @ (D, k) as B
        # small products, several times slower on the batches the compiled models see.
        flat = x.reshape(-1, x.shape[-1])
        out = _dense_numpy(flat, w) if xp is np else flat @ xp.asarray(w)
        return out.reshape(*x.shape[:-1], out.shape[-1])
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


def _dense_numpy(flat: np.ndarray, w: np.ndarray) -> np.ndarray:
    """flat @ w, skipping w's all-zero rows and columns when they are most of it.

    Compiled (tracr) blocks read a few residual directions and write a few: their dense
    matrices are mostly zero rows and columns. Leaving out a zero row drops terms x * 0 = 0
    (exact for finite x); the sum of the remaining terms may be ordered differently by BLAS
    (ulp-level). Dense matrices without such structure take the plain product."""
    w = np.asarray(w)
    rows = np.flatnonzero(w.any(axis=1))
    cols = np.flatnonzero(w.any(axis=0))
    if 2 * rows.size > w.shape[0] and 2 * cols.size > w.shape[1]:
        return flat @ w
    product = flat[:, rows] @ w[np.ix_(rows, cols)]
    if cols.size == w.shape[1]:
        return product
    out = np.zeros((flat.shape[0], w.shape[1]))
    out[:, cols] = product
    return out


def layer_norm(x: Array, norm: LayerNorm, xp: ModuleType = np) -> Array:
    if norm.columns is not None:
        return layer_norm_columns(x, norm, xp)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + norm.eps) * norm.gain + norm.bias


def layer_norm_columns(x: Array, norm: LayerNorm, xp: ModuleType = np) -> Array:
    """x with the residual columns `norm.columns` replaced by their LayerNorm; the other
    columns pass through unchanged (a new array: x is the residual stream itself)."""
    columns = np.asarray(norm.columns)
    normed = layer_norm(x[..., columns], replace(norm, columns=None), xp)
    if xp is np:
        out = x.copy()
        out[..., columns] = normed
        return out
    return x.at[..., columns].set(normed)  # functional update (jax.numpy)


def softmax_attention(q: Array, k: Array, scale: float, causal: bool,
                      xp: ModuleType = np) -> Array:
    """Row-stochastic attention matrix softmax(scale q k^T), shape (B, N, N)."""
    scores = scale * (q @ xp.swapaxes(k, -1, -2))
    if causal:
        n = scores.shape[-1]
        scores = xp.where(xp.tril(xp.ones((n, n), dtype=bool)), scores, -xp.inf)
    if xp is np:  # the same operations in place on the fresh scores array
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        return scores
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = xp.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def head_pattern(x: Array, head: AttentionHead, scale: float, causal: bool,
                 xp: ModuleType = np) -> Array:
    """One head's attention pattern (B, N queries, N keys) on the block's input x."""
    return softmax_attention(matmul(x, head.w_q, xp), matmul(x, head.w_k, xp), scale, causal, xp)


def head_output(x: Array, pattern: Array, head: AttentionHead, xp: ModuleType = np) -> Array:
    """What one head adds to the residual stream: pattern x W_V (W_O)."""
    out = pattern @ matmul(x, head.w_v, xp)
    return out if head.w_o is None else matmul(out, head.w_o, xp)


def attention(x: Array, block: AttentionBlock, causal: bool, xp: ModuleType = np) -> Array:
    """Sum over heads of A_h x W_V W_O (without the residual)."""
    total = None
    for head in block.heads:
        out = head_output(x, head_pattern(x, head, block.scale, causal, xp), head, xp)
        if total is None:
            total = out
        elif xp is np:  # every head's output is a fresh array: accumulate in place
            total += out
        else:
            total = total + out
    return total


ACTIVATION_FUNCTIONS = {
    "relu": lambda z, xp: xp.maximum(z, 0.0),
    # GPT-2's tanh approximation of GELU (the frozen random MLPs of docs/universal.md).
    "gelu": lambda z, xp: 0.5 * z * (1.0 + xp.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3))),
    "linear": lambda z, xp: z,  # with a gate: the bilinear block
}

_HIDDEN_CHUNK = 1 << 18  # hidden-layer elements per chunk: 2 MiB of float64 (about L2)


def mlp_hidden(x: Array, block: MLPBlock, xp: ModuleType = np) -> Array:
    """The MLP's hidden activations act(x W1 + b1), times the gate (x W_gate + b_gate) when
    gated: what W2 reads."""
    hidden = ACTIVATION_FUNCTIONS[block.activation](matmul(x, block.w1, xp) + block.b1, xp)
    if block.gated:
        assert block.w_gate is not None  # a gated block has its gate (weights.py)
        hidden = hidden * (matmul(x, block.w_gate, xp) + block.b_gate)
    return hidden


def mlp(x: Array, block: MLPBlock, xp: ModuleType = np) -> Array:
    """act(x W1 + b1) W2 + b2, the hidden layer times (x W_gate + b_gate) when gated."""
    if xp is not np:
        return matmul(mlp_hidden(x, block, xp), block.w2, xp) + block.b2
    # NumPy: row chunks whose hidden layer (the largest array) stays in cache, the same
    # operations in place. Rows are independent: chunking changes at most BLAS's order of
    # summation within a row (ulp-level).
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty((flat.shape[0], block.b2.shape[0]))
    step = max(256, _HIDDEN_CHUNK // max(block.b1.shape[0], 1))
    for start in range(0, flat.shape[0], step):
        pre = matmul(flat[start:start + step], block.w1, np)
        pre += block.b1
        hidden = np.maximum(pre, 0.0, out=pre) if block.activation == "relu" \
            else ACTIVATION_FUNCTIONS[block.activation](pre, np)
        if block.gated:
            assert block.w_gate is not None
            gate = matmul(flat[start:start + step], block.w_gate, np)
            gate += block.b_gate
            hidden *= gate  # hidden is fresh (pre, or a new array; "linear" returns pre)
        out[start:start + step] = matmul(hidden, block.w2, np)
    out += block.b2
    return out.reshape(*x.shape[:-1], out.shape[-1])


def block_input(x: Array, block: AttentionBlock | MLPBlock, xp: ModuleType = np) -> Array:
    """What the block's sublayer reads: the residual stream, after its pre-LayerNorm."""
    return x if block.norm is None else layer_norm(x, block.norm, xp)


def apply_block(x: Array, block: AttentionBlock | MLPBlock, causal: bool,
                xp: ModuleType = np) -> Array:
    """One block: optional pre-LayerNorm, the sublayer, optional residual."""
    inner = block_input(x, block, xp)
    out = attention(inner, block, causal, xp) if isinstance(block, AttentionBlock) \
        else mlp(inner, block, xp)
    if not block.residual:
        return out
    if xp is np:  # out is fresh (never x itself): add the residual in place
        out += x
        return out
    return out + x


def embed_features(model: Transformer, features: Array, xp: ModuleType = np) -> Array:
    """The residual stream at layer 0 for real input features (B, N, d_in): their
    projection plus the position embedding when the model has one (compiled numeric-input
    models do; the fixed universal transformers do not)."""
    features = xp.asarray(features, dtype=xp.float64)
    if model.input_proj is None:
        if features.shape[-1] != model.width:
            raise WeightsError(f"input: feature dimension {features.shape[-1]} differs from the "
                               f"model width D = {model.width} and the model has no input_proj")
        stream = features
    else:
        d_in = model.input_proj.shape[0]
        if features.shape[-1] != d_in:
            raise WeightsError(f"input: feature dimension {features.shape[-1]} differs from "
                               f"input_proj rows d_in = {d_in}")
        stream = matmul(features, model.input_proj, xp)
    return _add_positions(model, stream, xp)


def embed_tokens(model: Transformer, ids: Array, xp: ModuleType = np) -> Array:
    """The residual stream at layer 0 for token ids (B, N): token plus position embedding."""
    if model.token_embed is None:
        raise WeightsError("token_embed: the model has no token embedding")
    return _add_positions(model, xp.asarray(model.token_embed)[ids], xp)


def _add_positions(model: Transformer, stream: Array, xp: ModuleType) -> Array:
    """stream (B, N, D) + pos_embed[:N], or stream itself for a model without positions."""
    if model.pos_embed is None:
        return stream
    n = stream.shape[-2]
    if n > model.pos_embed.shape[0]:
        raise WeightsError(f"pos_embed: sequence length {n} exceeds max_len "
                           f"{model.pos_embed.shape[0]}")
    return stream + xp.asarray(model.pos_embed)[:n]


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


def _written_columns(block: AttentionBlock | MLPBlock) -> np.ndarray | None:
    """The residual columns a dense block can change, or None (not dense)."""
    if isinstance(block, MLPBlock):
        if isinstance(block.w2, SparseMatrix):
            return None
        return np.flatnonzero(np.any(block.w2 != 0, axis=0) | (block.b2 != 0))
    outs = [head.w_v if head.w_o is None else head.w_o for head in block.heads]
    if any(isinstance(w, SparseMatrix) for w in outs):
        return None
    return np.flatnonzero(np.any([np.any(w != 0, axis=0) for w in outs], axis=0))


def _narrowed(block: AttentionBlock | MLPBlock, cols: np.ndarray) -> AttentionBlock | MLPBlock:
    """The block with its output restricted to the residual columns `cols`."""
    if isinstance(block, MLPBlock):
        return replace(block, w2=_dense(block.w2)[:, cols], b2=block.b2[cols])
    return replace(block, heads=tuple(
        replace(head, w_v=_dense(head.w_v)[:, cols]) if head.w_o is None
        else replace(head, w_o=_dense(head.w_o)[:, cols]) for head in block.heads))


def _dense(matrix: np.ndarray | SparseMatrix) -> np.ndarray:
    assert isinstance(matrix, np.ndarray), "output columns are narrowed in dense blocks only"
    return matrix


def _final_stream_in_place(model: Transformer, stream: np.ndarray) -> np.ndarray:
    """residual_stream(...)[-1] for NumPy, updating the (fresh) stream in place.

    A compiled (tracr) block writes a few of the residual's columns: its output is computed
    on those columns only and added there, instead of full-width passes over the stream
    (152 MB per pass for nested Dyck-2 on 4096 sequences). The additions are the same
    float64 operations on the same values (up to BLAS's summation order): the results are
    those of residual_stream. The stream is a copy, never the caller's features."""
    _check_finite(stream, "the embedded input")
    for index, block in enumerate(model.layers):
        cols = _written_columns(block) if block.residual and block.norm is None else None
        if cols is None:
            stream = apply_block(stream, block, model.causal, np)
            _check_finite(stream, _block_name(index, block))
        elif cols.size:
            narrowed = _narrowed(block, cols)
            stream[..., cols] += (attention(stream, narrowed, model.causal, np)
                                  if isinstance(narrowed, AttentionBlock) else mlp(stream, narrowed, np))
            _check_finite(stream[..., cols], _block_name(index, block))
    return stream


def _block_name(index: int, block: AttentionBlock | MLPBlock) -> str:
    return f"block {index} ({'attention' if isinstance(block, AttentionBlock) else 'MLP'})"


def _check_finite(values: np.ndarray, where: str) -> None:
    """A value that overflowed (inf) or became nan would decode to some answer: refuse it,
    naming where it first appeared."""
    if not np.isfinite(values).all():
        raise WeightsError(f"{where}: the forward pass overflowed (an infinite or nan value in "
                           "the residual stream): the weights or inputs are too large for "
                           "float64")


def forward(model: Transformer, inputs: Array, xp: ModuleType = np) -> Array:
    """Outputs (B, N, c) for features (B, N, d_in) (float) or token ids (B, N) (integer).
    With NumPy, a value that overflows is a WeightsError naming the block where it first
    appears, and NumPy's floating-point warnings never reach the user."""
    if xp is not np:
        return readout(model, residual_stream(model, _embedded(model, inputs, xp), xp)[-1], xp)
    with np.errstate(all="ignore"):
        stream = np.array(_embedded(model, inputs, np), dtype=np.float64, order="C")
        out = readout(model, _final_stream_in_place(model, stream), np)
        _check_finite(out, "the readout (unembedding)")
    return out


def _embedded(model: Transformer, inputs: Array, xp: ModuleType) -> Array:
    inputs = xp.asarray(inputs)
    if xp.issubdtype(inputs.dtype, xp.integer):
        return embed_tokens(model, inputs, xp)
    return embed_features(model, inputs, xp)
