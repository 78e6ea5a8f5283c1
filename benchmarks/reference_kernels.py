"""Reference kernels: the classic programs `sort`, `hist` and `reverse` of
benchmarks/interpreter.py computed whole, from the same list of Python strings to the same
output arrays as the engine's `evaluate_batch` (one-character strings, `<U1`, for sort and
reverse; int64 counts for hist), by code written for that one program. They are the floor
the engine is measured against (docs/benchmarks.md): what a program costs when nothing is
general.

- The inputs: all joined into one string and copied into an array of code points, one byte
  each where the text is ASCII (`str.isascii` reads a flag, O(1)), else four (UTF-32).
- sort (`sort(tokens, tokens)`: the tokens in ascending order of code point, ties by
  position; the values are the keys, so ties are indistinguishable): each row sorted.
- hist (`selector_width(select(tokens, tokens, ==))`): each token's number of occurrences
  in its input, from a count of each input's codes.
- reverse (examples/reverse.rasp): each row read backwards.

With numba installed (`pip install rasp-sim[bench]`), sort and hist are compiled loops:
sort a counting sort that writes each code as often as it occurs, hist a count and a lookup
per row. Without numba they are NumPy (`np.sort` of the codes widened to 32 bits, which NumPy
vectorises; a bincount of (row, code) slots). reverse is NumPy either way: a reversed view
widened to code points in one copy.

Their domain is the engine's fast path for strings: non-empty strings of one length, with
no NUL (which the engine's `<U1` cannot tell from "") and no lone surrogate (which has no
UTF-32 encoding). Inputs are not checked; the engine's are.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

Kernel = Callable[[list[str]], np.ndarray]
PROGRAMS = ("sort", "hist", "reverse")
_CHARACTERS = np.dtype("U1")
# hist counts codes in a table of rows x (code range) where that is small; wider ranges
# (non-ASCII text) are first renumbered densely
_DENSE_RANGE = 256


def codes_of(batch: list[str]) -> np.ndarray:
    """The inputs' code points, row i input i: uint8 for ASCII text, uint32 otherwise."""
    text = "".join(batch)
    if text.isascii():
        flat = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:
        flat = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return flat.reshape(len(batch), -1)


def as_characters(codes: np.ndarray) -> np.ndarray:
    """Code points as the engine's one-character strings, in one contiguous copy."""
    return np.ascontiguousarray(codes, dtype="<u4").view(_CHARACTERS)


def narrow_codes(codes: np.ndarray) -> tuple[np.ndarray, int, int, np.ndarray | None]:
    """Codes spanning a short range, to count in a small table: (codes, low, size, values)
    with every code in range(low, low + size); the codes as they are where their range is
    short, else their ranks among the distinct codes, which are then `values`."""
    low, high = int(codes.min()), int(codes.max())
    if high - low < _DENSE_RANGE:
        return codes, low, high - low + 1, None
    values, ranks = np.unique(codes, return_inverse=True)
    return ranks.reshape(codes.shape), 0, len(values), values


# ------------------------------------------------------------------------------- NumPy


def sort_numpy(batch: list[str]) -> np.ndarray:
    # NumPy's default sort of the codes widened to 32 bits, vectorised (x86-simd-sort where
    # the CPU has AVX2 or AVX-512): 0.06 us an input here, against 0.23 for the radix sort
    # of the one-byte codes; stable or not, equal characters are alike
    return np.sort(as_characters(codes_of(batch)).view(np.uint32), axis=-1).view(_CHARACTERS)


def hist_numpy(batch: list[str]) -> np.ndarray:
    codes, low, size, _ = narrow_codes(codes_of(batch))
    rows = codes.shape[0]
    # each (row, code) a slot of the table
    slots = codes - np.int64(low) + (np.arange(rows, dtype=np.int64) * size)[:, None]
    return np.bincount(slots.reshape(-1), minlength=rows * size)[slots]


def reverse_numpy(batch: list[str]) -> np.ndarray:
    return as_characters(codes_of(batch)[:, ::-1])


NUMPY_KERNELS: dict[str, Kernel] = {
    "sort": sort_numpy, "hist": hist_numpy, "reverse": reverse_numpy}


# ------------------------------------------------------------------------------- numba


def numba_kernels() -> dict[str, Kernel] | None:
    """sort and hist as compiled loops, reverse as NumPy; None without numba. Compiled on
    first call (per code width), so a caller warms them up before timing."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(cache=False)
    def code_counts(codes: np.ndarray, low: int, size: int) -> np.ndarray:
        counts = np.zeros((codes.shape[0], size), dtype=np.int64)
        for r in range(codes.shape[0]):
            for j in range(codes.shape[1]):
                counts[r, codes[r, j] - low] += 1
        return counts

    @numba.njit(cache=False)
    def sorted_rows(counts: np.ndarray, low: int, n: int) -> np.ndarray:
        out = np.empty((counts.shape[0], n), dtype=np.uint32)
        for r in range(counts.shape[0]):
            j = 0
            for code in range(counts.shape[1]):
                out[r, j : j + counts[r, code]] = code + low
                j += counts[r, code]
        return out

    @numba.njit(cache=False)
    def looked_up(counts: np.ndarray, codes: np.ndarray, low: int) -> np.ndarray:
        out = np.empty(codes.shape, dtype=np.int64)
        for r in range(codes.shape[0]):
            for j in range(codes.shape[1]):
                out[r, j] = counts[r, codes[r, j] - low]
        return out

    def sort(batch: list[str]) -> np.ndarray:
        codes, low, size, values = narrow_codes(codes_of(batch))
        out = sorted_rows(code_counts(codes, low, size), low, codes.shape[1])
        return as_characters(out if values is None else values[out])

    def hist(batch: list[str]) -> np.ndarray:
        codes, low, size, _ = narrow_codes(codes_of(batch))
        return looked_up(code_counts(codes, low, size), codes, low)

    return {"sort": sort, "hist": hist, "reverse": reverse_numpy}
