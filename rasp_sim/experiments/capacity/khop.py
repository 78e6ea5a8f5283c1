"""An exact k-hop target (tasks/khop.py) for an attention-only machine of H >= 2 heads, L
layers, query/key width >= 2 and read-out width >= the number of letters.

Sanford, Hsu & Telgarsky build k-hop from induction heads: a previous-token head, then an
induction head that finds the position right after the last earlier occurrence of the
current letter, f(p) (their "hop"), then the same again from there. Here, with positions
p = 0..N-1 of the input [k, X_0, X_1, ...] (letter X_{p-1} at p), f(p) is the position
after the last q < p with the letter at p, so the answer at p is the letter at f^k(p):

- layer 1: head S attends to its own position (score 40 j: the latest wins), head P to
  the previous one (score -40 (j - (p-1))^2);
- layers 2..L: head S again, and an induction head I whose query is the letter value t_p
  at p (block S...S) and whose key is the letter before j (block P S...S) with a small
  recency term: c (2 t_p t_{j-1} - t_{j-1}^2) + 20 j = c (t_p^2 - (t_p - t_{j-1})^2) + 20 j,
  largest at the latest match (c is large enough that no recency makes up for a letter
  mismatch);
- the hop count k is read at the sink, position 0: its key there is +-(a margin over
  every other score) by k, so the induction head of layer l is switched off (it attends
  to position 0, whose letter features are zero) unless k >= L - l + 1; k hops then take
  the last k layers' induction heads, and the path S I...I (r heads I) reads the letter
  at f^r(p) for every r <= k, with weight 2^r, so the k-th hop outweighs all the others
  together;
- the path S...S also reads "position 0" at position 0, where it gives the blank.

Null answers (no earlier occurrence to hop to) are not handled. An induction head would
have to fall back to a fixed key (position 0) exactly when no letter matches: seen from
that key, each letter's keys would need a line through it with that letter alone on one
side, and 4 directions in a plane cannot each be alone in a half-plane (the two gaps next
to each would have to exceed 180 degrees, 8 gaps summing to 720 degrees); a head of query
width 2 has no such key (docs/universal.md). At a null position the head attends to some
non-matching letter instead.
"""
from __future__ import annotations

import numpy as np

from ..tasks.khop import LETTER_BASE, KHop
from .blocks import PathTarget, paths

SHARP = 40.0      # score margin of the position heads: e^-40 of the weight leaks
RECENCY = 20.0    # per position, among matching letters (matches are >= 2 apart)
HOP_T2 = 20.0     # the hop-count token's "t^2": a strong mismatch for every letter
# features of a position: token part + position part
ONE, POS, POS2, T, T2, FIRST, LETTER = range(7)


def supports(heads: int, layers: int, head_dim: int, out_dim: int, task: KHop) -> str | None:
    """None if the construction fits, else why not."""
    if heads < 2:
        return "it needs 2 heads a layer (a position head and an induction head)"
    if head_dim < 2:
        return "it needs queries and keys of width 2"
    if out_dim < task.letters:
        return f"it reads a letter out through {task.letters} output coordinates"
    if task.max_hops > layers - 1:
        return (f"one induction layer per hop after the previous-token layer: {layers} layers "
                f"reach {layers - 1} hops, not max_hops = {task.max_hops} (Sanford et al.'s "
                "pointer doubling is not built here)")
    return None


def khop_target(heads: int, layers: int, head_dim: int, out_dim: int,
                task: KHop) -> tuple[PathTarget, np.ndarray]:
    """The target's views and the read-out map W (out_dim x vocab) to the task's logits."""
    letters, length = task.letters, task.seq_len
    gates = range(layers)  # one gate feature per layer (layer 0's unused)
    width = LETTER + letters + layers
    gate = LETTER + letters
    vocab = task.vocab_size
    features = np.zeros((vocab + length, width))
    positions = np.arange(length)
    features[vocab + positions, ONE] = 1.0
    features[vocab + positions, POS] = positions
    features[vocab + positions, POS2] = positions ** 2.0
    features[vocab, FIRST] = 1.0
    for letter in range(letters):
        features[LETTER_BASE + letter, [T, T2, LETTER + letter]] = letter, letter ** 2.0, 1.0
    # c: a letter mismatch (>= c) outweighs any recency (< RECENCY * length)
    match = RECENCY * length + SHARP
    top = match * (letters - 1) ** 2 + RECENCY * length + SHARP  # above every key's score
    for hops in range(task.max_hops + 1):
        features[hops, T2] = HOP_T2
        for layer in gates:
            on = hops >= layers - layer
            # sink score match * (gate - HOP_T2): below every match when on, above all when off
            features[hops, gate + layer] = HOP_T2 + (-SHARP if on else top) / match
    target = PathTarget(features, heads, layers, head_dim, out_dim)
    view = _view(width, head_dim)
    target.queries[(0, 0, ())] = view({ONE: (SHARP, 0)})
    target.keys[(0, 0, ())] = view({POS: (1, 0)})
    target.queries[(0, 1, ())] = view({POS: (2 * SHARP, 0), ONE: (-2 * SHARP, -SHARP)})
    target.keys[(0, 1, ())] = view({POS: (1, 0), POS2: (0, 1)})
    for layer in range(1, layers):
        own, previous = (0,) * layer, (1,) + (0,) * (layer - 1)
        target.queries[(layer, 0, own)] = view({ONE: (SHARP, 0)})
        target.keys[(layer, 0, own)] = view({POS: (1, 0)})
        target.queries[(layer, 1, own)] = view({T: (2 * match, 0), ONE: (0, match)})
        target.keys[(layer, 1, previous)] = view({T: (1, 0), T2: (0, -1)})
        target.keys[(layer, 1, own)] = view({POS: (0, RECENCY / match), gate + layer: (0, 1)})
    for path in paths(heads, layers):
        read = _hops_read(path)
        if read is not None:
            readout = np.zeros((width, out_dim))
            readout[LETTER:LETTER + letters, :letters] = 2.0 ** read * np.eye(letters)
            if read == 0:
                readout[FIRST, :letters] = -1.0  # position 0: every letter down, blank up
            target.readouts[path] = readout
    out = np.zeros((out_dim, vocab))
    out[np.arange(letters), LETTER_BASE + np.arange(letters)] = 1.0
    out[:letters, task.blank_id] = -1.0
    return target, out


def _hops_read(path: tuple[int, ...]) -> int | None:
    """r for a path S, S...S, I...I (r induction heads last), else None (read nothing)."""
    if path[0] != 0:
        return None
    rest = path[1:]
    hops = sum(rest)
    return hops if rest == (0,) * (len(rest) - hops) + (1,) * hops else None


def _view(width: int, head_dim: int):
    def view(entries: dict[int, tuple[float, float]]) -> np.ndarray:
        out = np.zeros((width, head_dim))
        for feature, (first, second) in entries.items():
            out[feature, :2] = first, second
        return out
    return view
