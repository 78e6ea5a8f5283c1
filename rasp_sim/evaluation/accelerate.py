"""The optional accelerator: compiled kernels (numba, `pip install rasp-sim[accelerate]`) for
the engine's fused forms where NumPy needs several passes. Today one: the equality width
(`fusion._equal_width`, a histogram's `selector_width(select(k, q, ==))`), a count of each
input's codes and a lookup per query in one pass of a compiled loop, where NumPy makes
(input, value) slots, a bincount and a gather (docs/benchmarks.md). The kernel's result is
the NumPy path's, array for array (tests/test_accelerate.py runs both).

Loading costs: the first batch that uses the kernel takes 0.42 s of CPU more (importing
numba, the kernel from numba's cache) or 0.74 s (compiled, the first time after an install),
against about 0.05 us saved per input at n = 64 (docs/benchmarks.md). So it is loaded only
once it pays: `RASP_SIM_ACCELERATE` (read at each use) says when.

- unset or `auto`: NumPy until this process has counted `PAYOFF_ELEMENTS` keys by NumPy
  (about 4 million inputs at n = 64, about as much NumPy counting as the load costs), then
  the kernel for batches of at least `MIN_ELEMENTS` keys. Spending on NumPy what the load
  costs before paying it keeps any run within 2x of the better of the two (a rent-or-buy
  rule); a CLI run or a small notebook call never imports numba.
- `1`: the kernel for every batch of at least `MIN_ELEMENTS` keys, from the first (what a
  benchmark or a long session that knows it will run a lot asks for).
- `0`: never (the NumPy path alone, as without numba).

Without numba installed every mode is the NumPy path.
"""
from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any

import numpy as np

ENVIRONMENT = "RASP_SIM_ACCELERATE"
MIN_ELEMENTS = 1 << 16  # a batch below this (1,024 inputs at n = 64) keeps NumPy
PAYOFF_ELEMENTS = 1 << 28

_lock = threading.Lock()
_state: dict[str, Any] = {"counted": 0, "kernels": None, "loaded": False}


def mode() -> str:
    """`0`, `1` or `auto` (RASP_SIM_ACCELERATE; unset or any other value: auto)."""
    value = os.environ.get(ENVIRONMENT, "auto").strip()
    return value if value in ("0", "1") else "auto"


def kernels() -> ModuleType | None:
    """The compiled kernels' module, imported on first use; None without numba."""
    if not _state["loaded"]:
        with _lock:
            if not _state["loaded"]:
                try:
                    from . import numba_kernels
                except ImportError:  # numba is not installed: NumPy alone
                    numba_kernels = None  # type: ignore[assignment]
                _state["kernels"], _state["loaded"] = numba_kernels, True
    return _state["kernels"]


def _wanted(elements: int) -> ModuleType | None:
    """The kernels, if a batch of `elements` keys should use them now (`mode`)."""
    if elements < MIN_ELEMENTS:
        return None
    chosen = mode()
    if chosen == "0":
        return None
    if chosen == "auto" and not _state["loaded"]:
        _state["counted"] += elements  # (approximate under threads: only a threshold)
        if _state["counted"] < PAYOFF_ELEMENTS:
            return None
    return kernels()


def equal_counts(keys: np.ndarray, queries: np.ndarray, low: int, size: int) -> np.ndarray | None:
    """out[r, q] = the number of keys[r] equal to queries[r, q] (integer codes of one
    shape, every one in range(low, low + size)) by the compiled kernel, or None where it
    is not used (`mode`, a small batch, no numba): the caller's NumPy path then runs."""
    compiled = _wanted(keys.size) if keys.shape == queries.shape else None
    if compiled is None:
        return None
    return compiled.equal_counts(keys, queries, low, size)
