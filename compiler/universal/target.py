"""The target class T(d, k, c, H, L): attention-only softmax transformers (docs/universal.md).

`random_target` draws one from a seed in the weight format; `canonicalise` checks that a
model in the weight format lies in the class a universal transformer simulates and returns
its matrices in the normal form of docs/universal.md (temperature folded into Q, the output
projection into V, heads and head dimension zero-padded).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..weights import AttentionBlock, AttentionHead, MLPBlock, Transformer, as_dense
from .errors import UniversalError


@dataclass(frozen=True)
class Shape:
    """(d, k, c, H, L) plus the residual and mask options."""

    dim: int
    head_dim: int
    out_dim: int
    heads: int
    layers: int
    residual: bool = False
    causal: bool = True

    def __post_init__(self) -> None:
        for name in ("dim", "head_dim", "out_dim", "heads", "layers"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise UniversalError(f"{name}: must be a positive integer, got {value!r}")


@dataclass(frozen=True, eq=False)
class Canonical:
    """A target in normal form: queries[l][h], keys[l][h] (d x k), values[l][h] (d x d)."""

    queries: tuple[tuple[np.ndarray, ...], ...]
    keys: tuple[tuple[np.ndarray, ...], ...]
    values: tuple[tuple[np.ndarray, ...], ...]
    unembed: np.ndarray
    input_proj: np.ndarray | None  # X -> X W_in before the first layer, folded into E


def random_target(shape: Shape, seed: int) -> Transformer:
    """A target with Gaussian weights, scaled so activations stay O(1) over the layers."""
    rng = np.random.default_rng(seed)
    d, k, heads = shape.dim, shape.head_dim, shape.heads
    # Per layer, each head adds A X V: keep the sum's scale near 1 (near 1 + 1 with residual).
    v_std = 1.0 / np.sqrt(d * (heads + (1 if shape.residual else 0)))
    layers = tuple(
        AttentionBlock(
            heads=tuple(AttentionHead(rng.normal(size=(d, k)), rng.normal(size=(d, k)),
                                      rng.normal(scale=v_std, size=(d, d)))
                        for _ in range(heads)),
            scale=1.0 / np.sqrt(k),
            residual=shape.residual)
        for _ in range(shape.layers))
    return Transformer(layers=layers, unembed=rng.normal(size=(d, shape.out_dim)),
                       causal=shape.causal,
                       metadata={"target": {"dim": d, "head_dim": k, "out_dim": shape.out_dim,
                                            "heads": heads, "layers": shape.layers,
                                            "residual": shape.residual, "seed": seed}})


def target_dim(model: Transformer) -> int:
    """The input dimension d of a target: input_proj rows, else its width."""
    return model.width if model.input_proj is None else model.input_proj.shape[0]


def canonicalise(model: Transformer, shape: Shape) -> Canonical:
    """`model`'s matrices in normal form, padded to `shape`; UniversalError if outside it."""
    for name in ("token_embed", "pos_embed"):
        if getattr(model, name) is not None:
            raise UniversalError(f"{name}: targets take real input features (input_proj), "
                                 f"not token embeddings; fold the embedding into input_proj")
    if model.final_norm is not None:
        raise UniversalError("final_norm: LayerNorm is outside the target class "
                             "(attention-only transformers)")
    if model.causal != shape.causal:
        raise UniversalError(f"causal: the target's mask is {_mask(model.causal)} but the "
                             f"universal transformer's is {_mask(shape.causal)}")
    if target_dim(model) != shape.dim:
        raise UniversalError(f"dim: the target's input dimension {target_dim(model)} differs "
                             f"from the universal transformer's d = {shape.dim}")
    if model.out_dim != shape.out_dim:
        raise UniversalError(f"unembed: the target's output dimension {model.out_dim} differs "
                             f"from the universal transformer's c = {shape.out_dim}")
    if len(model.layers) != shape.layers:
        raise UniversalError(f"layers: the target has {len(model.layers)} layers, the universal "
                             f"transformer simulates exactly L = {shape.layers}")
    width = model.width
    queries, keys, values = [], [], []
    for index, block in enumerate(model.layers):
        label = f"layers.{index}"
        if isinstance(block, MLPBlock):
            raise UniversalError(f"{label}: an MLP block is outside the target class "
                                 "(attention-only transformers)")
        if block.norm is not None:
            raise UniversalError(f"{label}.norm: LayerNorm is outside the target class")
        if block.residual != shape.residual:
            raise UniversalError(f"{label}.residual: the target block is "
                                 f"{'' if block.residual else 'not '}residual but the universal "
                                 f"transformer is built {'with' if shape.residual else 'without'} "
                                 "residual connections")
        if len(block.heads) > shape.heads:
            raise UniversalError(f"{label}.heads: the target has {len(block.heads)} heads, the "
                                 f"universal transformer has H = {shape.heads}")
        q_row, k_row, v_row = [], [], []
        for h, head in enumerate(block.heads):
            head_dim = head.w_q.shape[1]
            if head_dim > shape.head_dim:
                raise UniversalError(f"{label}.heads.{h}.w_q: head dimension {head_dim} exceeds "
                                     f"the universal transformer's k = {shape.head_dim}")
            pad = ((0, 0), (0, shape.head_dim - head_dim))
            # Equal scores need scale * q k^T, so the temperature goes into Q.
            q_row.append(np.pad(block.scale * as_dense(head.w_q), pad))
            k_row.append(np.pad(as_dense(head.w_k), pad))
            v = as_dense(head.w_v)
            v_row.append(v if head.w_o is None else v @ as_dense(head.w_o))
        # Missing heads are heads whose values are zero: they add nothing.
        for _ in range(shape.heads - len(block.heads)):
            q_row.append(np.zeros((width, shape.head_dim)))
            k_row.append(np.zeros((width, shape.head_dim)))
            v_row.append(np.zeros((width, width)))
        queries.append(tuple(q_row))
        keys.append(tuple(k_row))
        values.append(tuple(v_row))
    return Canonical(tuple(queries), tuple(keys), tuple(values), as_dense(model.unembed),
                     None if model.input_proj is None else as_dense(model.input_proj))


def _mask(causal: bool) -> str:
    return "causal" if causal else "full (non-causal)"
