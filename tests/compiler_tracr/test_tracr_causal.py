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


# Under --causal, length is q + 1, so `length - indices` is 1 everywhere and the select
# below selects every key; restricted to k <= q, its width is q + 1. The compiler read
# the sum's width from the unrestricted program (width 1 at every query: the identity)
# and lowered it as the plain mean of the prefix, which failed its own validation ("on
# input [0, 1] at position 1: the interpreter gives 1, the weights' NumPy forward gives
# 0.5"). Compile-time static values are now those of the causal program (static.py).
CAUSAL_WIDTH_SUM = ("x = tokens_int;\nv4 = length - indices;\ns6 = select(v4, v4, ==);\n"
                    "result = sum(s6, x, 0);\n")


@pytest.mark.parametrize("causal, want", [(False, [2, 1, 2]), (True, [2, 3, 5])],
                         ids=["non-causal", "causal"])
def test_a_sum_over_a_static_selector_has_the_width_of_its_causal_head(driver, program,
                                                                        causal, want):
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    result = driver.compile_program(program(CAUSAL_WIDTH_SUM, "result"), [0, 1, 2], 3,
                                    causal=causal, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive", \
        result.report.disagreement.describe()
    # [0, 1]: the input (both give 0, 1 there: the prefix sums, the tokens)
    assert run_weights(result.weights, [[2, 1, 2], [0, 1]]) == [want, [0, 1]]


def test_the_causal_width_sum_compiles_from_the_command_line(tmp_path, capsys):
    from rasp_sim.cli import main
    source = tmp_path / "p.rasp"
    source.write_text(CAUSAL_WIDTH_SUM)
    assert main(["compile", str(source), "--name", "result", "--vocab", "0,1,2",
                 "--max-len", "3", "--causal", "-o", str(tmp_path / "x.npz")]) == 0
    assert "validated exhaustive on 39 inputs" in capsys.readouterr().out


def test_a_real_valued_sum_over_a_static_selector_is_causal_too(driver, program):
    from rasp_sim.compiler.tracr_backend.continuous import NumericDomain
    from rasp_sim.compiler.tracr_backend.runtime import run_weights
    text = "x = tokens_float;\nv = length - indices;\ny = sum(select(v, v, ==), x);\n"
    result = driver.compile_program(program(text, "y"), [], 4, causal=True, samples=50,
                                    tracr_oracle=False, numeric=NumericDomain(1, 4, -10, 10))
    assert result.report.ok, result.report.disagreement.describe()
    assert run_weights(result.weights, [[0.5, -1.25, 2.0]]) == [[0.5, -0.75, 1.25]]


def test_a_causal_layer_norm_row_is_refused_where_its_heads_would_not_see_it(driver, program):
    # A layer_norm row is gathered by one head per slot; causal, a query's heads do not
    # see the later keys of its row. The row selector's matrix is read as its head
    # computes it (k <= q), so this is refused at the library's select; it used to
    # compile, and disagree with the interpreter.
    from rasp_sim.compiler.tracr_backend.checks import Unsupported
    from rasp_sim.compiler.tracr_backend.continuous import NumericDomain
    text = 'load "attention";\nx = tokens_float;\ny = layer_norm(x, 2, 3, 0.00001);\n'
    with pytest.raises(Unsupported, match="row selector") as refusal:
        driver.compile_program(program(text, "y"), [], 7, causal=True, samples=50,
                               tracr_oracle=False, numeric=NumericDomain(7, 7, -10, 10))
    assert refusal.value.span is not None
