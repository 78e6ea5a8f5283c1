"""k-hop induction heads (Sanford, Hsu & Telgarsky 2024; the `InductionHopsFullSequenceTask`
of chsanford/hop-induction-heads as described in docs/universal.md; code written for rasp-sim).

X is a random string over `letters` letters with no two equal neighbours.
pointer_0(i) = i; pointer_{j+1}(i) = q + 1 for the last q < pointer_j(i) with
X_q = X_{pointer_j(i)}, or null (and null forever) if there is none.
hop_k(X)_i = X_{pointer_k(i)}. Input: [k] + X[:n-2]; target: [`_`] + hop_k(X)[:n-2].
"""
from __future__ import annotations

import numpy as np

from ..errors import ExperimentError
from .batch import Batch

MAX_HOPS = 16
LETTER_BASE = MAX_HOPS + 1          # hop counts 0..16 are ids 0..16; letters 17..20
VOCAB = 30
PAPER_LENGTH = 100                  # Sanford et al.'s sequence length


def sample_strings(size: int, length: int, letters: int, rng: np.random.Generator) -> np.ndarray:
    """(size, length) letters 0..letters-1, uniform among strings with no equal neighbours."""
    steps = rng.integers(1, letters, size=(size, length))
    steps[:, 0] = rng.integers(0, letters, size=size)
    return np.cumsum(steps, axis=1) % letters


def previous_same(strings: np.ndarray, letters: int) -> np.ndarray:
    """prev[b, i]: the last q < i with X_q = X_i, or -1."""
    size, length = strings.shape
    rows = np.arange(size)
    last = np.full((size, letters), -1)
    prev = np.empty_like(strings)
    for i in range(length):
        prev[:, i] = last[rows, strings[:, i]]
        last[rows, strings[:, i]] = i
    return prev


def hops(strings: np.ndarray, counts: np.ndarray, letters: int) -> np.ndarray:
    """hop_{k_b}(X_b)_i for every row b (k_b = counts[b]); -1 where the pointer is null.

    One hop is a map f on positions, f(i) = prev(i) + 1, with an absorbing null position
    appended to each row. f^k for a per-row k is composed by binary lifting: f^(2^j) for
    j < log2(max k), applied where bit j of k_b is set, so the cost is O(log k) gathers."""
    size, length = strings.shape
    prev = previous_same(strings, letters)
    width = length + 1
    # Flat positions (row b, column i) -> b * width + i: 1-D gathers are NumPy's fastest.
    offset = np.arange(size)[:, None] * width
    null = offset + length
    step = np.concatenate([np.where(prev < 0, null, offset + prev + 1), null], axis=1).ravel()
    pointer = (offset + np.arange(width)).ravel()
    counts = np.repeat(np.asarray(counts), width)
    for bit in range(int(counts.max(initial=0)).bit_length()):
        take = ((counts >> bit) & 1).astype(bool)
        pointer = np.where(take, step[pointer], pointer)
        step = step[step]  # f^(2^j) -> f^(2^(j+1))
    letters_or_null = np.concatenate([strings, np.full((size, 1), -1)], axis=1).ravel()
    return letters_or_null[pointer].reshape(size, width)[:, :length]


class KHop:
    """Batches of k-hop sequences, k ~ U[min_hops, max_hops] per sample."""

    name = "khop"
    vocab_size = VOCAB
    one_answer = False  # the loss reads every position

    def __init__(self, seq_len: int = PAPER_LENGTH, letters: int = 4, min_hops: int = 0,
                 max_hops: int = MAX_HOPS, test_size: int = 2000, test_seed: int = 4444):
        if not 0 <= min_hops <= max_hops <= MAX_HOPS:
            raise ExperimentError(f"max_hops: need 0 <= min_hops <= max_hops <= {MAX_HOPS} "
                                  f"(token ids), got min_hops={min_hops}, max_hops={max_hops}")
        if not 2 <= letters <= 4:
            raise ExperimentError(f"letters: the vocabulary has room for 2..4 letters, got {letters}")
        self.length, self.letters = seq_len, letters
        self.min_hops, self.max_hops = min_hops, max_hops
        self.seq_len = seq_len - 1
        self.null_id, self.blank_id = LETTER_BASE + letters, LETTER_BASE + letters + 1
        self._test = self.train_batch(test_size, np.random.default_rng(test_seed))

    def test_set(self) -> Batch:
        return self._test

    def train_batch(self, size: int, rng: np.random.Generator) -> Batch:
        counts = rng.integers(self.min_hops, self.max_hops + 1, size=size)
        strings = sample_strings(size, self.length, self.letters, rng)
        hopped = hops(strings, counts, self.letters)
        keep = self.length - 2
        inputs = np.concatenate([counts[:, None], strings[:, :keep] + LETTER_BASE], axis=1)
        answers = np.where(hopped[:, :keep] < 0, self.null_id, hopped[:, :keep] + LETTER_BASE)
        targets = np.concatenate([np.full((size, 1), self.blank_id), answers], axis=1)
        return Batch(inputs.astype(np.int32), targets.astype(np.int32),
                     np.ones(inputs.shape), counts.astype(np.int32))
