"""Bad input to the tracr backend: each case a clear RaspError whose text is checked.

Static refusals name the construct, the reason and the .rasp location (file:line:col)."""
from __future__ import annotations

import pytest

pytest.importorskip("tracr")

from rasp_sim.compiler.tracr_backend.checks import Unsupported  # noqa: E402
from rasp_sim.compiler.tracr_backend.pipeline import compile_graph  # noqa: E402
from rasp_sim.base.errors import RaspError  # noqa: E402


def refusal(program, source, name, vocab, max_len=4):
    with pytest.raises(Unsupported) as caught:
        compile_graph(program(source, name, "prog.rasp"), vocab, max_len)
    return caught.value.format()


def test_sum_over_a_fixed_width_compiles(driver, program):
    # select(indices, 2, <) selects keys 0 and 1 at every length >= 2: the sum is 2 x mean.
    root = program('s = sum(select(indices, 2, <), indicator(tokens == "a"), 0);', "s")
    result = driver.compile_program(root, ["a", "b"], 4, min_len=2)
    assert result.report.ok and result.report.mode == "exhaustive"


def test_numeric_mean_with_a_string_default_is_refused(program):
    text = refusal(program, 'tokens = tokens_int;\nm = aggregate(select(tokens, tokens, <), tokens, "-");',
                   "m", [1, 2, 3])
    assert "prog.rasp:2:" in text and "default '-' for a mean of numbers" in text


def test_two_token_kinds_are_refused(program):
    text = refusal(program, 'm = tokens_int + indicator(tokens_str == "1");', "m", [1, 2])
    assert "several kinds (int, str)" in text and "prog.rasp:1:" in text


def test_a_table_above_the_limit_is_refused_before_it_is_built(program):
    with pytest.raises(Unsupported) as caught:
        compile_graph(program("tokens = tokens_int;\np = tokens * indices;", "p", "prog.rasp"),
                      list(range(400)), 256)
    text = caught.value.format()
    assert "400 × 256" in text and "prog.rasp:2:" in text


def test_averaging_non_numbers_over_a_wide_selector_is_refused_or_undefined(program):
    # strings cannot be averaged: the categorical head is only right where one key is
    # selected, which is exactly where the program is defined; validation skips the rest.
    compiled = compile_graph(program("a = aggregate(select(tokens, tokens, ==), tokens);",
                                     "a"), ["x", "y"], 3)
    assert compiled.categorical_output


@pytest.mark.parametrize("vocab, max_len, message", [
    ([], 4, "vocabulary: is empty"),
    (list(range(1001)), 4, "has 1001 tokens; the limit is 1000"),
    (["a", "a"], 4, "lists 'a' twice"),
    (["a"], 0, "max-len: must be at least 1"),
    (["a"], 300, "300 is above the limit 256"),
    (["a", "compiler_bos"], 3, "must not contain the compiler's tokens"),
])
def test_bad_domains(program, vocab, max_len, message):
    with pytest.raises(Unsupported, match=message):
        compile_graph(program("r = aggregate(select(indices, indices, ==), tokens);", "r"),
                      vocab, max_len)


def test_a_program_of_positions_only_compiles(driver, program):
    # No tokens node: tracr's own craft_model_to_transformer would refuse it.
    assert driver.compile_program(program("c = indices + 1;", "c"), ["a"], 4).report.ok
    # (with tracr's oracle: its assembler handles the missing tokens node too)


def test_vocab_entries_must_convert_to_the_token_kind(driver):
    with pytest.raises(RaspError, match="entry 'x' is not a valid token for tokens_int"):
        driver.parse_vocab(["1", "x"], "int")


def test_values_too_close_to_discretise_are_refused(program):
    text = refusal(program, "tokens = tokens_float;\nm = aggregate(select(indices, indices, <=), "
                   "tokens);\nc = m > 0;", "c", [0.0, 1e-7, 1.0])
    assert "apart; a discretising MLP after it cannot separate them" in text
    assert "prog.rasp:2:" in text


def test_a_chain_of_fifty_maps_fuses_into_one_mlp(driver, program):
    # Fusion used to size candidate tables by translating on trial, nested at every level:
    # this chain did not finish in 600 s. Sized by memoised value sets it is one MLP.
    lines = ["x = tokens_int;", "y0 = x + 1;"]
    lines += [f"y{i} = (y{i - 1} * 3 + {i}) % 7;" for i in range(1, 50)]
    result = driver.compile_program(program("\n".join(lines), "y49"), [0, 1, 2, 3], 4,
                                    tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"
    assert result.weights.metadata["tracr_compile"]["layers"] == 1


def test_a_chain_of_fifty_real_valued_maps_is_one_mlp(driver, program):
    from rasp_sim.compiler.tracr_backend.continuous import NumericDomain

    lines = ["x = tokens_float;", "y0 = x + 1;"]
    lines += [f"y{i} = y{i - 1} * 0.5 + {i} if indices < {i % 5} else y{i - 1} - 1;"
              for i in range(1, 50)]
    result = driver.compile_program(program("\n".join(lines), "y49"), [], 6,
                                    tracr_oracle=False, numeric=NumericDomain(1, 6, -10, 10))
    assert result.report.ok
    assert result.weights.metadata["tracr_compile"]["layers"] == 1
