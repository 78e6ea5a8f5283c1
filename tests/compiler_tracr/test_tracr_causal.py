"""`--causal`: the model computes the program with every selector restricted to keys k <= q,
and validation compares it with exactly that program."""
from __future__ import annotations

import pytest

pytest.importorskip("tracr")


def test_causal_histogram_counts_the_prefix(driver, library):
    result = driver.compile_program(library("histogram.rasp", "hist"), list("ab"), 4, causal=True,
                                    tracr_oracle=False)
    assert result.report.ok and result.weights.causal
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    assert run_weights(result.weights, [list("abaa")]) == [[1, 1, 2, 3]]


def test_causal_reverse_reads_position_zero(driver, library):
    # Under the causal restriction length is q + 1, so opp_index is 0 everywhere.
    result = driver.compile_program(library("reverse.rasp", "reversed"), list("abc"), 4,
                                    causal=True, tracr_oracle=False)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    assert run_weights(result.weights, [list("cab")]) == [["c", "c", "c"]]
