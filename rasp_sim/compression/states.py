"""The residual states of a compiled token model over its domain, and their principal
directions (docs/compiler.md#compression-with-a-certificate, "Method").

A state is the residual vector at one position of one input, after the embedding or after
a block. The states of every input of the domain span a subspace of rank k <= D: an
orthonormal W whose columns span it has W W^T h = h on every state, so compressing to k
dims is exact without training. The principal directions are the right singular vectors
of the matrix of states, uncentred (a centred basis would lose the mean, which the blocks
read).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compiler.forward import embed_tokens, residual_stream
from ..compiler.tracr_backend.bulk_compare import Encoding
from ..compiler.tracr_backend.proof import chunk_plan, chunk_rows
from ..compiler.tracr_backend.runtime import compile_info
from ..compiler.weights import Transformer


STATE_BATCH = 256  # inputs whose states are computed at once


@dataclass(frozen=True)
class Inputs:
    """Token-id batches of a model's inputs, one (count, n + 1) array per length n (BOS
    first); `whole` when they are the whole domain, else a seeded sample of `total`."""

    batches: tuple[np.ndarray, ...]
    whole: bool
    total: int  # inputs in the domain

    @property
    def count(self) -> int:
        return sum(len(batch) for batch in self.batches)


def model_inputs(weights: Transformer, limit: int | None = None, seed: int = 0) -> Inputs:
    """Every input of the model's domain, or, where it holds more than `limit`, `limit` of
    them drawn without replacement (seeded)."""
    info = compile_info(weights)
    encoding = Encoding.of(weights, info["vocab"])
    size = len(encoding.vocab)
    by_length: dict[int, list[np.ndarray]] = {}
    for chunk in chunk_plan(size, info["min_len"], info["max_len"]):
        by_length.setdefault(chunk.length, []).append(chunk_rows(chunk, size))
    rows = {n: np.concatenate(parts) for n, parts in sorted(by_length.items())}
    total = sum(len(r) for r in rows.values())
    whole = limit is None or total <= limit
    if not whole:
        assert limit is not None
        chosen = np.sort(np.random.default_rng(seed).choice(total, limit, replace=False))
        starts = np.cumsum([0] + [len(r) for r in rows.values()])
        rows = {n: r[chosen[(chosen >= s) & (chosen < s + len(r))] - s]
                for (n, r), s in zip(rows.items(), starts)}
    batches = tuple(np.concatenate([np.full((len(r), 1), encoding.bos, dtype=np.int64),
                                    encoding.vocab_ids[r]], axis=1)
                    for r in rows.values() if len(r))
    return Inputs(batches, whole, total)


def layer_states(weights: Transformer, ids: np.ndarray) -> list[np.ndarray]:
    """The residual stream (B, n + 1, D) after the embedding and after each block."""
    return residual_stream(weights, embed_tokens(weights, ids))


@dataclass(frozen=True)
class Principal:
    """The uncentred principal directions of a set of states: `basis` (D x D, columns by
    decreasing singular value, each with its largest entry positive so the basis is
    deterministic), the singular values, and the rank (numpy's matrix_rank tolerance)."""

    basis: np.ndarray
    singular_values: np.ndarray
    rank: int


def principal_directions(weights: Transformer, inputs: Inputs) -> Principal:
    """The principal directions of every state of `inputs` (all positions, every layer).
    Each distinct state enters once, scaled by the square root of how often it occurs,
    which has the singular vectors of the matrix of all states. The inputs are run
    STATE_BATCH at a time and only distinct states are kept, so a wide model's states
    over a large domain need not fit in memory at once."""
    distinct, counts = np.zeros((0, weights.width)), np.zeros(0, dtype=np.int64)
    for batch in inputs.batches:
        for start in range(0, len(batch), STATE_BATCH):
            states = layer_states(weights, batch[start:start + STATE_BATCH])
            rows = np.concatenate([state.reshape(-1, weights.width) for state in states])
            distinct, counts = _merged(np.concatenate([distinct, rows]),
                                       np.concatenate([counts, np.ones(len(rows), np.int64)]))
    _, values, vt = np.linalg.svd(distinct * np.sqrt(counts)[:, None], full_matrices=True)
    basis = vt.T
    signs = np.sign(basis[np.abs(basis).argmax(axis=0), np.arange(basis.shape[1])])
    basis = basis * np.where(signs == 0, 1.0, signs)
    tolerance = (values.max(initial=0.0) * max(distinct.shape) * np.finfo(np.float64).eps)
    return Principal(basis, values, int(np.count_nonzero(values > tolerance)))


def _merged(rows: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows and the summed counts of each."""
    distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
    return distinct, np.bincount(inverse.ravel(), weights=counts, minlength=len(distinct))
