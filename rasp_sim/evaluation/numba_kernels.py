"""The engine's compiled kernels (numba; the `accelerate` extra), loaded by
`rasp_sim.evaluation.accelerate` only: importing this module imports numba (0.25 s), and
each kernel compiles on its first call per argument types, or loads from numba's cache
(`cache=True`: beside this file, or in the user's cache folder where that is read-only).
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def equal_counts(keys: np.ndarray, queries: np.ndarray, low: int, size: int) -> np.ndarray:
    """out[r, q] = how many of keys[r] equal queries[r, q], for integer codes in
    range(low, low + size): each row's keys counted in one table of `size` slots, each
    query looked up, the table cleared where the row counted (rows x n, not rows x size)."""
    rows, n = keys.shape
    m = queries.shape[1]
    out = np.empty((rows, m), np.int64)
    counts = np.zeros(size, np.int64)
    for r in range(rows):
        for j in range(n):
            counts[keys[r, j] - low] += 1
        for j in range(m):
            out[r, j] = counts[queries[r, j] - low]
        for j in range(n):
            counts[keys[r, j] - low] = 0
    return out
