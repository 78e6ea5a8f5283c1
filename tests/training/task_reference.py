"""The task generators written one sample at a time, straight from their definitions
(docs/universal.md): the references the vectorised generators in experiments/tasks/ are
tested against (same distribution for Dyck-1, same values for the k-hop pointer chase)."""
from __future__ import annotations

import numpy as np

from rasp_sim.experiments.tasks.dyck import CLOSE, OPEN, PAD, QUERY


def balanced_string(pairs: int, rng: np.random.Generator) -> list[int]:
    """gen(t): `()` for t = 1; else `(` gen(t-1) `)` or gen(u) gen(t-u), each with p = 1/2."""
    if pairs == 1:
        return [OPEN, CLOSE]
    if rng.random() < 0.5:
        return [OPEN, *balanced_string(pairs - 1, rng), CLOSE]
    split = int(rng.integers(1, pairs))  # u ~ U[1, t-1]
    return balanced_string(split, rng) + balanced_string(pairs - split, rng)


def is_balanced(string: list[int]) -> bool:
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


def dyck_rows(size: int, max_len: int, rng: np.random.Generator) -> np.ndarray:
    return np.stack([encode(sample_string(max_len, rng), max_len) for _ in range(size)])


def hop(string: list[int], k: int, i: int) -> int:
    """hop_k(X)_i: follow the induction pointer k times from i; -1 for null."""
    pointer = i
    for _ in range(k):
        q = pointer - 1
        while q >= 0 and string[q] != string[pointer]:
            q -= 1
        if q < 0:
            return -1
        pointer = q + 1
    return string[pointer]
