"""What sorting 10,000 strings of 64 characters costs before any RASP runs, against the DRAM
bound that `benchmarks/interpreter.py` prints for the library's `sort` at n = 64.

    python benchmarks/sort_floor.py        # numba's row, where numba is installed

The parts any evaluator of those inputs pays, timed apart (CPU time, median of 15):
- the inputs: checking that every input is a string of one length, and joining them into
  one array of characters (what `evaluate_batch` does with a list of strings);
- the order: each input's positions in a stable order of its characters, by NumPy's stable
  argsort of one-byte codes (a radix sort; what the engine runs for `sort(k, v)` with
  other values: `sort(k, k)` is NumPy's default sort of the keys, below this floor);
- the output: gathering each input's characters in that order;
- with numba, order and output in one compiled counting sort (one pass to count each
  code, one to place each character: the fewest passes a comparison-free sort makes).
Their sum is a floor under any evaluation that takes the inputs as Python strings and
sorts by a general algorithm. numba is an optional extra of rasp-sim (its engine compiles a
histogram's count, not sorts): this script measures how close a compiled kernel could
bring `sort` to the bound (docs/benchmarks.md).
"""
from __future__ import annotations

import os
import random
import statistics
import sys
import time
from typing import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from rasp_sim.evaluation.evaluate import traffic_bytes  # noqa: E402
from rasp_sim.evaluation.texts import one_length_texts  # noqa: E402
from rasp_sim.base.freed_memory import keep_freed_memory  # noqa: E402
from rasp_sim.language.interpreter import Interpreter  # noqa: E402

from interpreter import ALPHABET, copy_bandwidth, random_batch  # noqa: E402 (benchmarks/)

INPUTS, N = 10_000, 64


def us_per_input(work: Callable[[], object], repeats: int = 15) -> float:
    """Median CPU microseconds per input of `work` over the whole batch."""
    work()  # warm-up (and numba's compilation)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return 1e6 * statistics.median(times) / INPUTS


def inputs_checked_and_joined(batch: list[str]) -> np.ndarray:
    """What `evaluate_batch` does with a list of strings, by the engine's own code: every
    input checked to be a non-empty string, of one length, then all joined into one array
    of characters."""
    texts = one_length_texts(batch)
    if texts is None:
        raise ValueError("not strings of one length")
    return texts.characters


def counting_sort_kernel() -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """A compiled stable counting sort of each input's characters by their one-byte codes,
    writing the sorted characters (order and output gather in one kernel), or None without
    numba. The codes' range is found once for the batch (by NumPy), so each row counts and
    places its 64 codes over only that many buckets (8 here)."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(cache=False)
    def sorted_rows(codes: np.ndarray, characters: np.ndarray, low: int,
                    size: int) -> np.ndarray:
        rows, n = codes.shape
        out = np.empty_like(characters)
        starts = np.zeros(size + 1, dtype=np.int64)
        for r in range(rows):
            starts[:] = 0
            for j in range(n):
                starts[codes[r, j] - low + 1] += 1
            for c in range(1, size + 1):
                starts[c] += starts[c - 1]
            for j in range(n):
                c = codes[r, j] - low
                out[r, starts[c]] = characters[r, j]
                starts[c] += 1
        return out

    def sort(codes: np.ndarray, characters: np.ndarray) -> np.ndarray:
        low = int(codes.min())
        as_ints = characters.view(np.uint32)  # numba takes no NumPy strings
        return sorted_rows(codes, as_ints, low, int(codes.max()) - low + 1).view(
            characters.dtype)

    return sort


def main() -> int:
    keep_freed_memory()
    batch = random_batch(random.Random(0), N, INPUTS)
    characters = inputs_checked_and_joined(batch)
    codes = characters.view(np.uint32).astype(np.uint8)  # ALPHABET is ASCII
    order = np.argsort(codes, axis=-1, kind="stable")
    flat_order = (order + N * np.arange(INPUTS)[:, None]).ravel()
    interpreter = Interpreter()
    interpreter.run_source("sorted = sort(tokens, tokens);\n", "<sort>")
    bound = 1e6 * traffic_bytes([interpreter.lookup("sorted")], N) / copy_bandwidth()
    parts = {
        "inputs: check and join": us_per_input(lambda: inputs_checked_and_joined(batch)),
        "order: NumPy stable argsort": us_per_input(
            lambda: np.argsort(codes, axis=-1, kind="stable")),
        "output: gather": us_per_input(lambda: np.take(characters.ravel(), flat_order)),
    }
    kernel = counting_sort_kernel()
    if kernel is not None:
        expected = np.take(characters.ravel(), flat_order).reshape(characters.shape)
        if not np.array_equal(kernel(codes, characters), expected):
            print("error: the counting sort's output differs from NumPy's", file=sys.stderr)
            return 1
        parts["numba: order and gather fused"] = us_per_input(
            lambda: kernel(codes, characters))
    print(f"sort at n = {N} on {INPUTS:,} random strings over {ALPHABET!r}: DRAM bound "
          f"{bound:.3f} us an input (2x: {2 * bound:.3f})")
    for name, us in parts.items():
        print(f"  {name:30} {us:.3f} us")
    numpy_floor = sum(parts[name] for name in ("inputs: check and join",
                                               "order: NumPy stable argsort",
                                               "output: gather"))
    floors = {"NumPy": numpy_floor}
    if kernel is not None:
        floors["numba"] = parts["inputs: check and join"] + parts["numba: order and gather fused"]
    for name, floor in floors.items():
        print(f"  floor with {name}: {floor:.3f} us, {floor / bound:.1f}x the bound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
