"""An exact Dyck-1 target (tasks/dyck.py) for an attention-only machine of 2 layers, 2 heads
and query/key width 1 or more, read at the `?` after a string of length n <= 2 max_len.

With depth_j the depth after the characters up to position j (+1 per `(`, -1 per `)`)
and a_j = depth_j / (j + 1), the string is balanced iff a_n = 0 and min_{j<n} a_j >= 0.

- layer 1, head U: uniform attention over the prefix (zero scores), except at `?`, which
  attends to itself: position j < n holds a_j, and `?` holds its own features (balance 0);
  head U2: uniform everywhere: every j holds a_j, the mean of 1 (= 1) and of the position
  (j / 2);
- layer 2, head A: a soft minimum over head U's a_j (score -beta a_j), so it reads
  m = min(0, min_{j<n} a_j), the `?` giving the 0; head B attends to its own position
  (score 80 j / 2) and reads a_n and 1 from head U2.

The answer's logit is D = theta - a_n + 2 m (`)` if positive): balanced, D = theta; a
negative prefix gives m <= -1/(n + 1) and |m| >= |a_n| (n + 1) / n; otherwise d_n > 0 and
a_n >= 1/(n + 1). With theta = 1/(4 (n + 1)), beta such that values within 1/(8 (n + 1))
of the minimum are all that the soft minimum mixes in (e^-50 beyond), D < 0 in each
unbalanced case.
"""
from __future__ import annotations

import numpy as np

from ..tasks.dyck import CLOSE, OPEN, QUERY, Dyck1
from .blocks import PathTarget

ONE, POS, BALANCE, IS_QUERY = range(4)
SHARP = 40.0
U, U2 = 0, 1   # layer 1's heads
A, B = 0, 1    # layer 2's heads


def supports(heads: int, layers: int, head_dim: int, out_dim: int, task: Dyck1) -> str | None:
    """None if the construction fits, else why not."""
    if heads < 2 or layers != 2:
        return "it needs 2 layers of at least 2 heads"
    return None


def dyck_target(heads: int, layers: int, head_dim: int, out_dim: int,
                task: Dyck1) -> tuple[PathTarget, np.ndarray]:
    """The target's views and the read-out map W (out_dim x vocab) to the task's logits."""
    longest = 2 * task.max_len + 1  # positions up to and including `?`
    vocab = task.vocab_size
    features = np.zeros((vocab + task.seq_len, 4))
    features[vocab:, ONE] = 1.0
    features[vocab:, POS] = np.arange(task.seq_len)
    features[OPEN, BALANCE], features[CLOSE, BALANCE] = 1.0, -1.0
    features[QUERY, IS_QUERY] = 1.0
    target = PathTarget(features, heads, layers, head_dim, out_dim)

    def view(feature: int, value: float) -> np.ndarray:
        out = np.zeros((4, head_dim))
        out[feature, 0] = value
        return out

    target.queries[(0, U, ())] = view(IS_QUERY, SHARP)
    target.keys[(0, U, ())] = view(POS, 1.0)
    # head U2: zero scores, no views
    target.queries[(1, A, (U2,))] = view(ONE, 50.0 * 8 * longest)
    target.keys[(1, A, (U,))] = view(BALANCE, -1.0)
    target.queries[(1, B, (U2,))] = view(ONE, 2 * SHARP)
    target.keys[(1, B, (U2,))] = view(POS, 1.0)  # holds j / 2
    soft_min, own = np.zeros((4, out_dim)), np.zeros((4, out_dim))
    soft_min[BALANCE, 0] = 2.0
    own[BALANCE, 0], own[ONE, 0] = -1.0, 1.0 / (4 * longest)
    target.readouts[(U, A)], target.readouts[(U2, B)] = soft_min, own
    out = np.zeros((out_dim, vocab))
    out[0, CLOSE], out[0, OPEN] = 0.5, -0.5  # balanced: `)`
    return target, out
