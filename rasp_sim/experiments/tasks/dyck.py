"""Dyck-1 parenthesis balancing, the `dyckstream_30` distribution of Zhong & Andreas (2024)
as described in docs/universal.md (parameters from fjzzq2002/random_transformers; the code
here is written for rasp-sim).

A sample is a `(`/`)` string, then `?`, then the answer: `)` if the string is balanced,
else `(`, right-padded with 0 to 2 max_len + 3. Only the answer counts: the model predicts
it at the position of `?` (next-token prediction under a causal mask).

The generator draws a whole batch at once with NumPy (rows of width 2 max_len, PAD after
each string's length): the per-sample definition, kept in tests/training/dyck_reference.py,
costs tens of microseconds a sample in Python, this one a few microseconds; the tests check
that both draw the same distribution.
"""
from __future__ import annotations

import numpy as np

from .batch import Batch

PAD, OPEN, CLOSE, QUERY = 0, 1, 2, 3
VOCAB = 4
TEST_SEED = 12345
TEST_SIZE = 4000
WRAP = 0.5          # gen(t) = `(` gen(t-1) `)` with this probability, else gen(u) gen(t-u)
DOUBLE_FLIPS = 2 / 3
LENGTH_BUCKET = 10  # accuracy is reported by string length in buckets this wide
HELD_OUT_ABOVE = 10  # test strings longer than this never appear in the training stream
# The length buckets above HELD_OUT_ABOVE are then exactly the strings never trained on.
assert HELD_OUT_ABOVE % LENGTH_BUCKET == 0


def balanced_strings(pairs: np.ndarray, width: int, rng: np.random.Generator) -> np.ndarray:
    """Row b: gen(pairs[b]) then PAD, where gen(1) = `()` and gen(t) = `(` gen(t-1) `)`
    with p = 1/2, else gen(u) gen(t-u), u ~ U[1, t-1]. The recursion runs a level at a time
    over every pending (row, start, t) segment of the batch; each level lowers t, so there
    are at most max(pairs) levels."""
    size = len(pairs)
    out = np.where(np.arange(width) < 2 * pairs[:, None], CLOSE, PAD).astype(np.int32)
    row, start, t = np.arange(size), np.zeros(size, dtype=np.int64), np.asarray(pairs)
    while row.size:
        leaf = t == 1
        wrap = ~leaf & (rng.random(row.size) < WRAP)
        opens = leaf | wrap   # a leaf is `()`, a wrap `(`...`)`: the CLOSEs are already there
        out[row[opens], start[opens]] = OPEN
        split = ~opens
        u = rng.integers(1, t[split])
        row = np.concatenate([row[wrap], row[split], row[split]])
        start = np.concatenate([start[wrap] + 1, start[split], start[split] + 2 * u])
        t = np.concatenate([t[wrap] - 1, u, t[split] - u])
    return out


def is_balanced(strings: np.ndarray) -> np.ndarray:
    """Per row (last axis): the running depth never drops below 0 and ends at 0 (PAD
    counts 0)."""
    strings = np.asarray(strings)
    depth = np.cumsum((strings == OPEN).astype(np.int64) - (strings == CLOSE), axis=-1)
    return (depth.min(axis=-1) >= 0) & (depth[..., -1] == 0)


def _repeats(size: int, rng: np.random.Generator) -> np.ndarray:
    """Geometric counts: start at 1, continue with probability 1/2."""
    return rng.geometric(0.5, size=size)


def mutate(strings: np.ndarray, lengths: np.ndarray, bits: np.ndarray,
           rng: np.random.Generator) -> np.ndarray:
    """Bit 1: swap random pairs (p < q) a geometric number of times; bit 2: flip random
    characters a geometric number of times, doubled with probability 2/3."""
    strings = strings.copy()
    size = len(strings)
    rows = np.arange(size)
    swaps = np.where(bits & 1, _repeats(size, rng), 0)
    for round_ in range(int(swaps.max(initial=0))):  # swaps do not commute: one round at a time
        p, q = rng.integers(0, lengths), rng.integers(0, lengths)
        go = (swaps > round_) & (p < q)
        r, p, q = rows[go], p[go], q[go]
        strings[r, p], strings[r, q] = strings[r, q], strings[r, p]
    flips = _repeats(size, rng) * np.where(rng.random(size) < DOUBLE_FLIPS, 2, 1)
    flips = np.where(bits & 2, flips, 0)
    # Flips commute and a position flipped twice is unchanged: only each position's parity counts.
    flip_rows = np.repeat(rows, flips)
    where = flip_rows * strings.shape[1] + rng.integers(0, lengths[flip_rows])
    odd = np.bincount(where, minlength=strings.size).reshape(strings.shape) % 2 == 1
    return np.where(odd, OPEN + CLOSE - strings, strings)


def sample_strings(size: int, max_len: int, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(strings (size, 2 max_len) PAD-filled after each length, lengths): a third uniform
    random strings of length U[1, 2 max_len]; the rest gen(U[1, max_len]), half of them
    left unmutated; mutation bits U{0..3}."""
    width = 2 * max_len
    bits = rng.integers(0, 4, size=size)
    uniform = rng.random(size) < 1 / 3
    lengths = rng.integers(1, width + 1, size=size)
    strings = np.where(np.arange(width) < lengths[:, None],
                       rng.integers(OPEN, CLOSE + 1, size=(size, width)), PAD).astype(np.int32)
    pairs = rng.integers(1, max_len + 1, size=int((~uniform).sum()))
    strings[~uniform] = balanced_strings(pairs, width, rng)
    lengths[~uniform] = 2 * pairs
    bits[~uniform & (rng.random(size) < 0.5)] = 0
    return mutate(strings, lengths, bits, rng), lengths


def encode(strings: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each string + `?` + answer, right-padded with PAD to 2 max_len + 3."""
    size, width = strings.shape
    rows = np.concatenate([strings, np.full((size, 3), PAD, dtype=np.int32)], axis=1)
    index = np.arange(size)
    rows[index, lengths] = QUERY
    rows[index, lengths + 1] = np.where(is_balanced(strings), CLOSE, OPEN)
    return rows


def to_batch(rows: np.ndarray) -> Batch:
    """Rows as a batch; a row's group is its string length rounded up to LENGTH_BUCKET
    (accuracy by length: 10 means lengths 1-10)."""
    rows = np.asarray(rows, dtype=np.int32)
    query = np.argmax(rows == QUERY, axis=1)  # = the string's length
    index = np.arange(len(rows))
    targets = np.zeros_like(rows)
    targets[index, query] = rows[index, query + 1]
    weights = np.zeros(rows.shape)
    weights[index, query] = 1.0
    groups = -(-query // LENGTH_BUCKET) * LENGTH_BUCKET
    return Batch(rows, targets, weights, groups.astype(np.int32))


def string_lengths(rows: np.ndarray) -> np.ndarray:
    """Each encoded row's string length (the position of its `?`)."""
    return np.argmax(np.asarray(rows) == QUERY, axis=1)


class Dyck1:
    """The generator: a fixed test set, and a training stream of the task distribution in
    which the test set's strings longer than HELD_OUT_ABOVE never appear.

    A held-out draw is replaced by a fresh draw of the same length, so the stream's length
    distribution is the task distribution's exactly (the dyckstream protocol of Zhong &
    Andreas draws train and test from one distribution). Rejecting every test string
    instead starves the short lengths, where the test set holds most of the possible
    strings (lengths <= 10 fell from 16% of the rows to 5%, and their balanced share from
    54% to 8%). Short test strings may therefore be trained on: accuracy on lengths above
    HELD_OUT_ABOVE is the score on strings never seen in training."""

    name = "dyck1"
    vocab_size = VOCAB
    one_answer = True  # the loss reads one position per row, the answer (shortcuts.py)

    def __init__(self, max_len: int = 30, test_size: int = TEST_SIZE, test_seed: int = TEST_SEED):
        self.max_len = max_len
        self.seq_len = 2 * max_len + 3
        self.test_rows = self.sample_rows(test_size, np.random.default_rng(test_seed))
        self._held_out = {row.tobytes() for row, length in
                          zip(self.test_rows, string_lengths(self.test_rows))
                          if length > HELD_OUT_ABOVE}

    def sample_rows(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """`size` encoded samples of the distribution (nothing held out)."""
        return encode(*sample_strings(size, self.max_len, rng))

    def test_set(self) -> Batch:
        return to_batch(self.test_rows)

    def is_held_out(self, rows: np.ndarray) -> np.ndarray:
        """Per row: is it a test sample whose string is longer than HELD_OUT_ABOVE?"""
        return np.array([row.tobytes() in self._held_out for row in rows], dtype=bool)

    def train_batch(self, size: int, rng: np.random.Generator) -> Batch:
        rows = self.sample_rows(size, rng)
        lengths = string_lengths(rows)
        missing = np.flatnonzero(self.is_held_out(rows))
        while missing.size:
            # Replacements of the same length: every length has probability >= 1/180, so
            # 512 spare draws per missing row hold one of its length with p > 0.94.
            spare = self.sample_rows(512 * missing.size, rng)
            usable = ~self.is_held_out(spare)
            spare_lengths = string_lengths(spare)
            still = []
            for index in missing:
                match = np.flatnonzero(usable & (spare_lengths == lengths[index]))
                if match.size:
                    rows[index] = spare[match[0]]
                    usable[match[0]] = False
                else:
                    still.append(index)
            missing = np.asarray(still, dtype=np.int64)
        return to_batch(rows)
