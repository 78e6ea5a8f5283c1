"""Products of the planned NumPy forward (forward.py) that use a compiled block's
structure, each giving the numbers a dense product gives, not an approximation of them.

- `RightProduct`: x @ w for a fixed matrix w. A compiled block's output map (W_O of a
  head, W2 of an MLP) often has at most one non-zero entry per column: each head value or
  hidden unit writes its own residual direction. Then column j of x @ w is the single term
  x[:, i] * w[i, j] plus exact zeros (x finite; the forward refuses a non-finite stream),
  so a gather and a scale compute it, in a few passes over x instead of a GEMM.
- `shared_pattern_values`: heads whose attention pattern is the same on every input of a
  batch (they read only columns fixed by the position) and equal to each other apply one
  N x N matrix to all their value columns at once: one GEMM of the pattern with the
  values laid out (N, batch * heads), not one small product per input and head.
- `distinct_updates`: the residual stream of a batch kept as its distinct rows (most
  positions' rows repeat across the inputs of a batch: a position's value of each s-op
  takes a few values), so that position-wise blocks run once per distinct row; after an
  attention block, which adds a different vector to each position, the rows are
  deduplicated again.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class RightProduct:
    """x @ w for a fixed 2-D w: a gather of x's columns and a scale where every column of
    w has at most one non-zero entry (`sources`, `factors`), else the dense product."""

    dense: np.ndarray | None
    sources: np.ndarray | None = None  # per column of w: the row of its non-zero entry
    factors: np.ndarray | None = None  # that entry (0 for an all-zero column); None: all 1

    @classmethod
    def of(cls, w: np.ndarray) -> "RightProduct":
        nonzero = w != 0
        if w.shape[0] == 0 or nonzero.sum(axis=0).max(initial=0) > 1:
            return cls(np.ascontiguousarray(w))
        sources = np.argmax(nonzero, axis=0)  # row 0 for an all-zero column (factor 0)
        factors = w[sources, np.arange(w.shape[1])]
        return cls(None, sources, None if np.all(factors == 1.0) else factors)

    @property
    def shape(self) -> tuple[int, int]:
        if self.dense is not None:
            return self.dense.shape  # type: ignore[return-value]
        assert self.sources is not None
        return (-1, self.sources.size)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """x @ w for a 2-D x (rows, w's rows), a fresh array."""
        if self.dense is not None:
            return x @ self.dense
        assert self.sources is not None  # `of` sets one of the two
        out = np.take(x, self.sources, axis=1)
        if self.factors is not None:
            out *= self.factors
        return out


def shared_pattern_values(pattern: np.ndarray, values: np.ndarray) -> np.ndarray:
    """pattern @ values[b] for every input b: pattern (N, N) of keys per query, values
    (batch, N, c) -> (batch, N, c), as one (N, N) x (N, batch * c) product."""
    batch, n, c = values.shape
    laid_out = np.ascontiguousarray(values.transpose(1, 0, 2)).reshape(n, batch * c)
    return (pattern @ laid_out).reshape(n, batch, c).transpose(1, 0, 2)


# Rows are told apart by one product with fixed pseudo-random weights, then checked equal
# element by element: two different rows with the same product are caught by the check.
_ROW_KEY_SEED = 20261203


def distinct_updates(index: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Over the pairs (index[i], out[i]) (a row of the distinct residual rows and what a
    block adds to it): (first, inverse), first[j] a position of the j-th distinct pair and
    inverse[i] the pair of position i; None where two different pairs got the same key
    (the caller then keeps every position apart) or `out` has nan (nan != nan)."""
    keys = index + 1j * (out @ _row_key_weights(out.shape[1]))
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not (np.array_equal(index[first][inverse], index)
            and np.array_equal(out[first][inverse], out)):
        return None
    return first, inverse


@lru_cache(maxsize=256)
def _row_key_weights(width: int) -> np.ndarray:
    return np.random.default_rng(_ROW_KEY_SEED).normal(size=width)
