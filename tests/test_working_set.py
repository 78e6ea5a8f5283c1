"""The evaluator's working-set estimate (`estimate_bytes`, what chunking and the memory
limit use) against the memory the evaluation really allocates (tracemalloc sees NumPy's
buffers): within 2x either way on the library's programs at n = 32-48."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from rasp_sim.evaluation.evaluate import estimate_bytes, evaluate_batch
from rasp_sim.language.interpreter import Interpreter

PROGRAMS = {
    "sort": ("y = sort(tokens_int, tokens_int);", 32, "int"),
    "hist": ("y = selector_width(select(tokens_int, tokens_int, ==));", 32, "int"),
    # values too many for a count table: (input, value) pairs sorted (evaluation/fusion.py)
    "hist of wide ints": ("y = selector_width(select(tokens_int, tokens_int, ==));", 64,
                          "wide int"),
    "reverse": ("y = aggregate(select(indices, length - indices - 1, ==), tokens_int);", 32, "int"),
    "float means": ("y = aggregate(select(tokens_float, tokens_float, <=), tokens_float, 0);", 32, "float"),
    "matmul": ('load "linalg";\ny = matmul(tokens_float, 4, 4, 4);', 48, "float"),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_estimate_is_within_2x_of_the_measured_peak(name: str) -> None:
    source, n, kind = PROGRAMS[name]
    interpreter = Interpreter()
    interpreter.run_source(source, "<test>")
    root = interpreter.lookup("y")
    rng = np.random.default_rng(0)
    batch = {"int": lambda: rng.integers(0, 8, (200, n)),
             "wide int": lambda: rng.integers(0, 10**6, (200, n)),
             "float": lambda: rng.uniform(-1, 1, (200, n))}[kind]()
    evaluate_batch([root], batch[:2])  # one-time allocations (caches) left out
    tracemalloc.start()
    try:
        evaluate_batch([root], batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    estimate = estimate_bytes([root], n, len(batch))
    assert peak / 2 <= estimate <= 2 * peak, (estimate, peak)
