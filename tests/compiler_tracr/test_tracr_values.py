"""Values a compiled model must keep apart or carry exactly: bools vs ints, inf, huge
numbers next to small ones, and programs that are defined nowhere."""
from __future__ import annotations

import pytest

pytest.importorskip("tracr")

from rasp_sim.compiler.tracr_backend.checks import Unsupported  # noqa: E402
from rasp_sim.compiler.tracr_backend.runtime import run_weights  # noqa: E402


def test_true_and_one_are_different_outputs(driver, program):
    # True == 1 in Python: they shared one residual direction and printed alike.
    root = program("x = tokens_int; y = x == 1 if indices == 0 else x;", "y")
    result = driver.compile_program(root, [0, 1], 3)  # tracr's oracle too
    assert result.report.ok
    got = run_weights(result.weights, [[1, 1], [0, 0]])
    assert got == [[True, 1], [False, 0]]
    assert [type(v) for v in got[0]] == [bool, int]


def test_validation_tells_a_bool_from_an_int():
    from rasp_sim.compiler.tracr_backend.agreement import agree

    assert agree(True, True, False) == (True, 0.0)
    assert not agree(True, 1, False)[0] and not agree(0, False, False)[0]


def test_bool_and_int_tokens_are_separate_tokens(driver, program):
    root = program("x = tokens_asis; y = aggregate(select(indices, indices, ==), x, 0);", "y")
    vocab = [1, True, 0, False]
    result = driver.compile_program(root, vocab, 2)
    assert result.report.ok and result.report.mode == "exhaustive"
    assert run_weights(result.weights, [[True, 1]]) == [[True, 1]]


def test_an_infinite_categorical_output_agrees_with_itself(driver, program):
    root = program("x = tokens_float; y = x;", "y")
    vocab = driver.parse_vocab(["inf", "1.5", "-inf"], "float")
    result = driver.compile_program(root, vocab, 3)
    assert result.report.ok
    assert result.report.as_metadata()["max_numeric_error"] == 0.0


def test_an_infinite_value_cannot_be_averaged(driver, program):
    root = program("x = tokens_float; y = aggregate(select(indices, indices, <=), x, 0);", "y")
    vocab = driver.parse_vocab(["inf", "1.5"], "float")
    with pytest.raises(Unsupported, match="non-finite value"):
        driver.compile_program(root, vocab, 3, tracr_oracle=False)


def test_a_huge_value_on_an_unselected_key_does_not_leak(driver, program):
    # At tracr's coldness 100 an unselected key kept weight e^-100: 1e200 leaked 4e156.
    root = program("x = tokens_int; y = aggregate(select(indices, indices, ==), 10.0 ^ (x * 100));",
                   "y")
    result = driver.compile_program(root, [0, 2], 3, tracr_oracle=False)
    assert result.report.ok
    assert run_weights(result.weights, [[0, 2, 0]]) == [[1.0, 1e200, 1.0]]


def test_a_program_defined_nowhere_is_refused_with_its_location(driver, program):
    root = program("x = tokens_float; y = 1 / (x - x);", "y")
    with pytest.raises(Unsupported, match="no value on any input") as error:
        driver.compile_program(root, [1.0, 2.0], 3, tracr_oracle=False)
    assert error.value.span is not None


def test_a_program_that_is_its_input(driver, program):
    root = program("y = tokens;", "y")
    result = driver.compile_program(root, ["a", "b"], 3)
    assert result.report.ok
    assert run_weights(result.weights, [["b", "a"]]) == [["b", "a"]]


def test_a_map_whose_value_depends_on_float_rounding_is_refused_at_compile_time(driver, program):
    # Means of 0.1, 0.2, 0.3 reach 0.2 and 0.19999999999999998 (sums in different orders):
    # no float64 step separates them, but `m == 0.2` gives True and False. Keeping one of
    # them as the grid point made the model wrong on the others, whichever was kept, and a
    # sampled validation could miss it: it is now refused where it happens.
    root = program("x = tokens_float; m = aggregate(select(indices, indices, <=), x);"
                   "y = m == 0.2;", "y")
    with pytest.raises(Unsupported, match="depends on float rounding") as refusal:
        driver.compile_program(root, [0.1, 0.2, 0.3], 4, tracr_oracle=False)
    assert refusal.value.span is not None and "0.2" in refusal.value.message


def test_near_equal_means_that_the_map_does_not_tell_apart_compile(driver, program):
    # 10 * m differs between them only in the last bits: within validation's tolerance.
    root = program("x = tokens_float; m = aggregate(select(indices, indices, <=), x);"
                   "y = m * 10;", "y")
    result = driver.compile_program(root, [0.1, 0.2, 0.3], 4, tracr_oracle=False)
    assert result.report.ok


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_an_infinite_token_and_output_survive_the_weights_file(driver, program, tmp_path,
                                                               suffix):
    # JSON has no inf: the vocabulary and the output encoder used to fail to serialise.
    root = program("x = tokens_float; y = x;", "y")
    vocab = driver.parse_vocab(["inf", "1.5", "-inf"], "float")
    result = driver.compile_program(root, vocab, 2, tracr_oracle=False)
    path = tmp_path / f"m{suffix}"
    driver.write(result, path)
    assert run_weights(str(path), [[float("inf"), 1.5]]) == [[float("inf"), 1.5]]
