"""Random universality (UNIVERSAL.md 6): Gaussian fixed weights, E from a linear system.

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
    """R^Q, R^K ~ N(0, 1) (m x k), R^V ~ N(0, 1/m) (m x m), P ~ N(0, 1) (m x c); m defaults
    to the number of constraints C, the smallest size that can work."""
    check_tied(shape, tied)
    size = constraint_count(shape) if m is None else m
    if size < 1:
        raise UniversalError(f"m: must be a positive integer, got {size}")
    rng = np.random.default_rng(seed)

    def head() -> AttentionHead:
        return AttentionHead(rng.normal(size=(size, shape.head_dim)),
                             rng.normal(size=(size, shape.head_dim)),
                             rng.normal(scale=1 / np.sqrt(size), size=(size, size)))

    shared = tuple(head() for _ in range(shape.heads)) if tied else None
    layers = tuple(
        AttentionBlock(shared or tuple(head() for _ in range(shape.heads)),
                       scale=1.0, residual=shape.residual)
        for _ in range(shape.layers))
    spec = Spec(shape, "random", "tied" if tied else "untied", tied, seed)
    return Transformer(layers=layers, unembed=rng.normal(size=(size, shape.out_dim)),
                       causal=shape.causal, metadata=write_spec(spec, {"m": size}))


def constraint_matrix(ut: Transformer, shape: Shape) -> np.ndarray:
    """M (m x C): column block R_path R_terminal per constraint, suffix products memoised."""
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
                block = ut.layers[layer].heads[head]
                memo[key] = as_dense(block.w_q if kind == "Q" else block.w_k)
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
