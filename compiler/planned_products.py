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
- `distinct_pairs`: the residual stream of a batch kept as its distinct rows (most
  positions' rows repeat across the inputs of a batch: a position's value of each s-op
  takes a few values), so that position-wise blocks run once per distinct row; after an
  attention block, which adds a different vector to each position, the rows are
  deduplicated again. An attention head's queries and keys, which read a few columns,
  are deduplicated the same way, so that its scores are a small table.
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
_INDEX_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: index -> index * mix is one-to-one mod 2^64


def distinct_pairs(tags: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Over the pairs (tags[i], rows[i]) (e.g. a row of the distinct residual rows and
    what a block adds to it): (first, inverse), first[j] a position of the j-th distinct
    pair and inverse[i] the pair of position i; None where two different pairs got the
    same key (the caller then keeps every position apart) or `rows` has nan (nan != nan)."""
    hashes = rows @ _row_key_weights(rows.shape[1])
    hashes += 0.0  # -0.0 -> 0.0: equal rows get equal bits
    keys = hashes.view(np.uint64) ^ (tags.astype(np.uint64) * _INDEX_MIX)
    first, inverse = distinct_keys(keys)
    if not (np.array_equal(tags[first][inverse], tags)
            and np.array_equal(rows[first][inverse], rows)):
        return None
    return first, inverse


@lru_cache(maxsize=256)
def _row_key_weights(width: int) -> np.ndarray:
    return np.random.default_rng(_ROW_KEY_SEED).normal(size=width)


_HASH_MULTIPLIER = np.uint64(0xBF58476D1CE4E5B9)  # odd; the top bits of k * m spread keys
_MAX_ROUNDS = 4


def distinct_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse) of 1-D uint64 keys, as np.unique's return_index and return_inverse
    but in any order of the distinct keys: keys[first][inverse] == keys.

    A batch's keys take a few hundred values among tens of thousands, where np.unique's
    sort costs ~10x a pass over them (its hashed path, sorted=False, gives no inverse,
    NumPy 2.4). So: a table of slots
    indexed by the top bits of a multiplicative hash; every pending key writes its
    position into its slot (of several writers one lands: any is a member of the slot);
    keys equal to their slot's member are grouped with it, the others (hash collisions)
    take another round. Every round groups at least each slot's member; keys still
    pending after a few rounds are sorted."""
    size = keys.size
    bits = int(np.clip(np.ceil(np.log2(max(size, 1))), 8, 16))
    slot_of = ((keys * _HASH_MULTIPLIER) >> np.uint64(64 - bits)).astype(np.intp)
    slots = np.empty(1 << bits, dtype=np.intp)
    slots[slot_of] = np.arange(size)
    representative = slots[slot_of]
    pending = np.flatnonzero(keys[representative] != keys)
    for _ in range(_MAX_ROUNDS):
        if not pending.size:
            break
        buckets = slot_of[pending]
        slots[buckets] = pending
        representative[pending] = member = slots[buckets]
        pending = pending[keys[member] != keys[pending]]
    if pending.size:
        _, first, inverse = np.unique(keys[pending], return_index=True, return_inverse=True)
        representative[pending] = pending[first][inverse.reshape(-1)]
    return distinct_labels(representative, size)


def distinct_labels(labels: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(used, numbers) of integer labels in range(size): the labels that occur, ascending,
    and each label's place among them (np.unique's answer and inverse), from a presence
    table instead of a sort."""
    present = np.zeros(size, dtype=bool)
    present[labels] = True
    used = np.flatnonzero(present)
    number = np.empty(size, dtype=np.intp)
    number[used] = np.arange(used.size)
    return used, number[labels]
