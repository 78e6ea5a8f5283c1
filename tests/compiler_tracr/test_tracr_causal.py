"""`--causal`: the model computes the program with the whole selector of every aggregate
restricted to keys k <= q, and validation compares it with exactly that program."""
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


def test_the_causal_mask_applies_to_the_whole_selector_under_not(driver, program):
    # The mask restricts the head's attention, so `not select(x, x, ==)` selects the
    # earlier keys that differ. Masking each select instead (not (S and k <= q)) would
    # select every later key too; validation used to compare with that, and refused
    # these correct models.
    text = ("x = tokens_int;\ny = selector_width(not select(x, x, ==));\n"
            "z = aggregate(not select(x, x, ==), indices);\n")
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    width = driver.compile_program(program(text, "y"), [0, 1], 4, causal=True,
                                   tracr_oracle=False)
    assert width.report.ok and width.report.mode == "exhaustive"
    assert run_weights(width.weights, [[0, 1, 1, 0]]) == [[0, 1, 1, 2]]
    mean = driver.compile_program(program(text, "z"), [0, 1], 4, causal=True,
                                  tracr_oracle=False)
    assert mean.report.ok
    assert run_weights(mean.weights, [[0, 1, 1, 0]]) == [[0, 0, 0, 1.5]]
