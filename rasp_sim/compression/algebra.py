"""The weights of a model whose residual stream is stored compressed
(docs/compiler.md#compression-with-a-certificate).

With W (D x d) the compressed stream is r = h W. Each block reads the stream through
W^T and writes through W, so every input-side matrix M (reading the D-dim stream) becomes
W^T M and every output-side one M W (Lindner et al. 2023, "Tracr", section 5):

- embeddings: token_embed W, pos_embed W, input_proj W;
- attention heads: W^T w_q, W^T w_k, W^T w_v, w_o W; a head whose w_o is None writes
  through w_v itself, so w_v becomes W^T w_v W;
- MLPs: W^T w1, W^T w_gate (biases b1, b_gate unchanged), w2 W, b2 W;
- the unembedding: W^T unembed.

The result is an ordinary `Transformer` of width d: its block k computes
f_k(r W^T) W, the original block on the decompressed stream, compressed again. A
LayerNorm does not commute with W (its mean and variance are over the D coordinates, not
over d of them), so a model with one is refused.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base.errors import RaspError
from ..compiler.weights import (AttentionBlock, AttentionHead, Block, MLPBlock, Transformer,
                                as_dense)


class CompressionError(RaspError):
    """A model or width that a linear compression cannot handle."""

    kind = "compression error"


def refusal(weights: Transformer, width: int) -> str | None:
    """Why the residual stream of `weights` cannot be compressed to `width` dims (None if
    it can)."""
    if not 1 <= width <= weights.width:
        return (f"width {width} is outside 1..{weights.width} (the compressed stream has "
                f"at least one dimension and at most the model's residual width)")
    normed = [f"block {i}" for i, block in enumerate(weights.layers) if block.norm is not None]
    if weights.final_norm is not None:
        normed.append("the final norm")
    if normed:
        return (f"the model has a LayerNorm ({', '.join(normed[:3])}): a linear compression "
                "of the residual stream does not commute with it (its mean and variance are "
                "over the model's own residual coordinates)")
    return None


def compress_weights(weights: Transformer, basis: np.ndarray,
                     labels: tuple[str, ...] | None = None, metadata: dict | None = None
                     ) -> Transformer:
    """`weights` with its residual stream stored as h W, for `basis` = W (D x d): the
    algebra of the module docstring, float64. A CompressionError for what it cannot
    compress (`refusal`)."""
    w = np.asarray(basis, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != weights.width:
        raise CompressionError(f"the basis has shape {w.shape}, not ({weights.width}, d)")
    problem = refusal(weights, w.shape[1])
    if problem is not None:
        raise CompressionError(problem)

    def read(matrix: Any) -> np.ndarray:  # an input-side matrix: W^T M
        return w.T @ as_dense(matrix)

    def write(matrix: Any) -> np.ndarray:  # an output-side one: M W
        return as_dense(matrix) @ w

    def block(old: Block) -> Block:
        if isinstance(old, AttentionBlock):
            heads = tuple(AttentionHead(read(h.w_q), read(h.w_k),
                                        write(read(h.w_v)) if h.w_o is None else read(h.w_v),
                                        None if h.w_o is None else write(h.w_o))
                          for h in old.heads)
            return AttentionBlock(heads, old.scale, old.residual)
        return MLPBlock(read(old.w1), old.b1, write(old.w2), old.b2 @ w, old.activation,
                        old.residual, None,
                        None if old.w_gate is None else read(old.w_gate), old.b_gate)

    optional = {name: None if getattr(weights, name) is None else write(getattr(weights, name))
                for name in ("input_proj", "token_embed", "pos_embed")}
    return weights.replace(
        layers=tuple(block(b) for b in weights.layers), unembed=read(weights.unembed),
        residual_labels=labels or tuple(f"c{i}" for i in range(w.shape[1])),
        metadata=dict(weights.metadata) if metadata is None else metadata, **optional)
