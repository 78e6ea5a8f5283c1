"""Random universality (docs/universal.md): Gaussian fixed weights, E from a linear system.

Attention matching holds iff E R_path R_terminal = V_path T_terminal for every constraint
(paths.py), i.e. E M = T with M = [R_path R_terminal ...] (m x C), fixed by the UT. An E
exists for every target iff rank M = C, which needs m >= C and holds almost surely for
Gaussian weights once m >= C (the sparse UT is a witness of full rank).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..weights import AttentionBlock, AttentionHead, Transformer, as_dense
from .errors import UniversalError
from .paths import Path, Terminal, constraint_count, constraints
from .spec import Spec, check_tied, read_spec, write_spec
from .target import Shape


def build_random(shape: Shape, seed: int, tied: bool = False, m: int | None = None) -> Transformer:
    """R^Q, R^K, R^V, P ~ N(0, 1/m) (variance 1/fan-in), scores scaled by 1/sqrt(k); m
    defaults to the number of constraints C, the smallest size that can work.

    That is an ordinary random transformer's attention: on a stream with unit-variance
    coordinates q and k have unit-variance coordinates and the scores are O(1), so the heads
    start far from argmax (with N(0, 1) query and key weights the scores grow like m and
    every head is saturated, which starves a trained embedding of gradient). The simulation
    is unaffected: the temperature is part of M (constraint_matrix), so E absorbs it."""
    check_tied(shape, tied)
    size = constraint_count(shape) if m is None else m
    if size < 1:
        raise UniversalError(f"m: must be a positive integer, got {size}")
    rng = np.random.default_rng(seed)

    def head() -> AttentionHead:
        std = 1 / np.sqrt(size)
        return AttentionHead(rng.normal(scale=std, size=(size, shape.head_dim)),
                             rng.normal(scale=std, size=(size, shape.head_dim)),
                             rng.normal(scale=std, size=(size, size)))

    shared = tuple(head() for _ in range(shape.heads)) if tied else None
    layers = tuple(
        AttentionBlock(shared or tuple(head() for _ in range(shape.heads)),
                       scale=1 / np.sqrt(shape.head_dim), residual=shape.residual)
        for _ in range(shape.layers))
    spec = Spec(shape, "random", "tied" if tied else "untied", tied, seed)
    return Transformer(layers=layers, unembed=rng.normal(scale=1 / np.sqrt(size),
                                                    size=(size, shape.out_dim)),
                       causal=shape.causal, metadata=write_spec(spec, {"m": size}))


def constraint_matrix(ut: Transformer, shape: Shape) -> np.ndarray:
    """M (m x C): column block R_path R_terminal per constraint, suffix products memoised.
    A query terminal carries its block's score scale: equal scores need
    scale (E R_path R^Q)(E R_path' R^K)^T = (V_path T^Q)(V_path' T^K)^T, where the target's
    own temperature is already in T^Q (target.canonical)."""
    memo: dict[tuple[Terminal, Path], np.ndarray] = {}

    def routed(terminal: Terminal, path: Path) -> np.ndarray:
        key = (terminal, path)
        if key not in memo:
            if path:
                layer, head = path[0]
                block = ut.layers[layer]
                assert isinstance(block, AttentionBlock)  # universal machines are attention-only
                memo[key] = as_dense(block.heads[head].w_v) @ routed(terminal, path[1:])
            elif terminal[0] == "O":
                memo[key] = as_dense(ut.unembed)
            else:
                kind, layer, head = terminal
                attention = ut.layers[layer]
                assert isinstance(attention, AttentionBlock)
                weights = attention.heads[head]
                memo[key] = (attention.scale * as_dense(weights.w_q) if kind == "Q"
                             else as_dense(weights.w_k))
        return memo[key]

    return np.concatenate([routed(t, p) for t, p in constraints(shape)], axis=1)


@dataclass(frozen=True, eq=False)
class Solution:
    embedding: np.ndarray       # E (d_in x m)
    condition: float            # cond(M) = s_max / s_min
    constraints: int            # C
    residual: float             # max |E M - T| / max |T|


def solve_embedding(views: list[np.ndarray], ut: Transformer) -> Solution:
    """E with E M = T, T = [views] (paths.target_views), via the SVD of M; UniversalError if
    m < C or M is rank-deficient."""
    spec: Spec = read_spec(ut)
    shape, m = spec.shape, ut.width
    count = constraint_count(shape)
    if m < count:
        raise UniversalError(f"m: the universal transformer has m = {m} but simulating "
                             f"T(d={shape.dim}, k={shape.head_dim}, c={shape.out_dim}, "
                             f"H={shape.heads}, L={shape.layers}) imposes C = {count} "
                             f"independent linear constraints on E; need m >= {count}")
    matrix = constraint_matrix(ut, shape)
    left, singular, right_t = np.linalg.svd(matrix, full_matrices=False)
    tolerance = singular[0] * max(matrix.shape) * np.finfo(float).eps
    rank = int(np.sum(singular > tolerance))
    if rank < count:
        raise UniversalError(f"singular system: the constraint matrix M of the universal "
                             f"transformer has rank {rank} < C = {count} (smallest singular "
                             f"value {singular[-1]:.3g}); no embedding simulates every target")
    rhs = np.concatenate(views, axis=1)
    embedding = ((rhs @ right_t.T) / singular) @ left.T
    scale = max(np.abs(rhs).max(), np.finfo(float).tiny)
    residual = float(np.abs(embedding @ matrix - rhs).max() / scale)
    return Solution(embedding, float(singular[0] / singular[-1]), count, residual)
