"""Dyck-1 parenthesis balancing, the `dyckstream_30` distribution of Zhong & Andreas (2024)
as described in UNIVERSAL.md 10.2 (parameters from fjzzq2002/random_transformers; the code
here is written for rasp-sim).

A sample is a `(`/`)` string, then `?`, then the answer: `)` if the string is balanced,
else `(`, right-padded with 0 to 2 max_len + 3. Only the answer counts: the model predicts
it at the position of `?` (next-token prediction under a causal mask).
"""
from __future__ import annotations

import numpy as np

from . import Batch

PAD, OPEN, CLOSE, QUERY = 0, 1, 2, 3
VOCAB = 4
TEST_SEED = 12345
TEST_SIZE = 4000


def balanced_string(pairs: int, rng: np.random.Generator) -> list[int]:
    """gen(t): `()` for t = 1; else `(` gen(t-1) `)` or gen(u) gen(t-u), each with p = 1/2."""
    if pairs == 1:
        return [OPEN, CLOSE]
    if rng.random() < 0.5:
        return [OPEN, *balanced_string(pairs - 1, rng), CLOSE]
    split = int(rng.integers(1, pairs))  # u ~ U[1, t-1]
    return balanced_string(split, rng) + balanced_string(pairs - split, rng)


def is_balanced(string: list[int] | np.ndarray) -> bool:
    """The running depth never drops below 0 and ends at 0."""
    depth = 0
    for char in string:
        depth += 1 if char == OPEN else -1
        if depth < 0:
            return False
    return depth == 0


def _repeats(rng: np.random.Generator) -> int:
    """Geometric: start at 1, continue with probability 1/2."""
    count = 1
    while rng.random() < 0.5:
        count += 1
    return count


def mutate(string: list[int], bits: int, rng: np.random.Generator) -> list[int]:
    """Bit 1: swap random pairs (p < q) a geometric number of times; bit 2: flip random
    characters a geometric number of times, doubled with probability 2/3."""
    string = list(string)
    if bits & 1:
        for _ in range(_repeats(rng)):
            p, q = (int(i) for i in rng.integers(0, len(string), size=2))
            if p < q:
                string[p], string[q] = string[q], string[p]
    if bits & 2:
        count = _repeats(rng)
        if rng.random() < 2 / 3:
            count *= 2
        for _ in range(count):
            i = int(rng.integers(0, len(string)))
            string[i] = OPEN + CLOSE - string[i]
    return string


def sample_string(max_len: int, rng: np.random.Generator) -> list[int]:
    bits = int(rng.integers(0, 4))
    if rng.random() < 1 / 3:
        length = int(rng.integers(1, 2 * max_len + 1))
        string = [int(c) for c in rng.integers(OPEN, CLOSE + 1, size=length)]
    else:
        string = balanced_string(int(rng.integers(1, max_len + 1)), rng)
        if rng.random() < 0.5:
            bits = 0
    return mutate(string, bits, rng)


def encode(string: list[int], max_len: int) -> np.ndarray:
    """string + `?` + answer, right-padded with PAD to 2 max_len + 3."""
    row = np.full(2 * max_len + 3, PAD, dtype=np.int32)
    answer = CLOSE if is_balanced(string) else OPEN
    row[:len(string) + 2] = [*string, QUERY, answer]
    return row


def to_batch(rows: np.ndarray) -> Batch:
    rows = np.asarray(rows, dtype=np.int32)
    query = np.argmax(rows == QUERY, axis=1)
    index = np.arange(len(rows))
    targets = np.zeros_like(rows)
    targets[index, query] = rows[index, query + 1]
    weights = np.zeros(rows.shape)
    weights[index, query] = 1.0
    return Batch(rows, targets, weights, np.zeros(len(rows), dtype=np.int32))


class Dyck1:
    """The generator: a fixed test set, and a training stream that rejects test samples."""

    name = "dyck1"
    vocab_size = VOCAB

    def __init__(self, max_len: int = 30, test_size: int = TEST_SIZE, test_seed: int = TEST_SEED):
        self.max_len = max_len
        self.seq_len = 2 * max_len + 3
        rng = np.random.default_rng(test_seed)
        self.test_rows = np.stack([encode(sample_string(max_len, rng), max_len)
                                   for _ in range(test_size)])
        self._test_keys = {row.tobytes() for row in self.test_rows}

    def test_set(self) -> Batch:
        return to_batch(self.test_rows)

    def train_batch(self, size: int, rng: np.random.Generator) -> Batch:
        rows: list[np.ndarray] = []
        while len(rows) < size:
            row = encode(sample_string(self.max_len, rng), self.max_len)
            if row.tobytes() not in self._test_keys:
                rows.append(row)
        return to_batch(np.stack(rows))
