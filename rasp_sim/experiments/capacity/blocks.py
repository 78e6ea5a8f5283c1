"""Attention-only targets written path by path (docs/universal.md, "Why this can work").

A target of the class T(d, k, c, H, L) unrolls into attention *paths*, one head per layer;
what a universal machine routes, and so all that a trained embedding can set, is one
query and one key view per (path, head) and one read-out view per full path. A
`PathTarget` states exactly those views, as maps of a few named features of a position,
and `to_transformer` writes the weights of the plain target that has them: its residual
stream holds one block of features per path (blocks as the sparse universal machine of
Liu, Andoni & Hsu lays them out), each head's value copies block sigma to block sigma+h,
and its queries, keys and unembedding read the blocks through the stated views.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

import numpy as np

from rasp_sim.compiler.weights import AttentionBlock, AttentionHead, Transformer

Path = tuple[int, ...]


@dataclass
class PathTarget:
    """features: D x F, an input row (one-hot token | one-hot position) to F features;
    queries/keys[(layer, head, path)]: F x head_dim; readouts[path]: F x out_dim for the
    paths of length `layers`. Views not given are zero."""

    features: np.ndarray
    heads: int
    layers: int
    head_dim: int
    out_dim: int
    queries: dict[tuple[int, int, Path], np.ndarray] = field(default_factory=dict)
    keys: dict[tuple[int, int, Path], np.ndarray] = field(default_factory=dict)
    readouts: dict[Path, np.ndarray] = field(default_factory=dict)


def paths(heads: int, length: int) -> list[Path]:
    return list(product(range(heads), repeat=length))


def to_transformer(target: PathTarget) -> Transformer:
    """The non-residual, causal, attention-only target with `target`'s views."""
    blocks = [path for length in range(target.layers + 1) for path in paths(target.heads, length)]
    index = {path: i for i, path in enumerate(blocks)}
    width = target.features.shape[1]

    def rows(path: Path) -> slice:
        return slice(width * index[path], width * (index[path] + 1))

    size = width * len(blocks)
    input_proj = np.zeros((target.features.shape[0], size))
    input_proj[:, rows(())] = target.features
    layers = []
    for layer in range(target.layers):
        heads = []
        for head in range(target.heads):
            w_q, w_k = np.zeros((size, target.head_dim)), np.zeros((size, target.head_dim))
            w_v = np.zeros((size, size))
            for path in paths(target.heads, layer):
                w_q[rows(path)] = target.queries.get((layer, head, path), 0.0)
                w_k[rows(path)] = target.keys.get((layer, head, path), 0.0)
                w_v[rows(path), rows(path + (head,))] = np.eye(width)
            heads.append(AttentionHead(w_q, w_k, w_v))
        layers.append(AttentionBlock(tuple(heads), scale=1.0, residual=False))
    unembed = np.zeros((size, target.out_dim))
    for path in paths(target.heads, target.layers):
        unembed[rows(path)] = target.readouts.get(path, 0.0)
    return Transformer(layers=tuple(layers), unembed=unembed, causal=True, input_proj=input_proj)
