"""Atom-level loops and comprehensions are bounded before they run (or, for the size of
what a comprehension builds, as it grows), and count options are bounded while the
command line is parsed: issue 22's probes, which ended in a late MemoryError or hung."""
from __future__ import annotations

import pytest
from cli_helpers import run_cli, write

from rasp_sim.errors import RaspResourceError
from rasp_sim.interpreter import MAX_ITERATIONS, Interpreter
from rasp_sim.limits import MAX_COLLECTION_LENGTH


def _refusal(text: str) -> RaspResourceError:
    with pytest.raises(RaspResourceError) as caught:
        Interpreter().run_source(text, "loops.rasp")
    return caught.value


def test_nested_loops_are_refused_before_the_inner_loop_passes_the_budget():
    error = _refusal("s = 0;\nfor i in range(10^6) {\n  for j in range(10^6) { s = s + 1; }\n}")
    assert error.span.line == 3 and error.span.column == 3  # the inner loop
    assert f"past {MAX_ITERATIONS:,} iterations" in error.message
    assert "for loop of 1,000,000 iterations" in error.message


def test_a_comprehension_over_a_long_range_is_refused_before_it_runs():
    error = _refusal("x = [i for i in range(2 * 10^6)];")
    assert error.headline().startswith("loops.rasp:1:5: resource limit: this list "
                                       "comprehension of 2,000,000 iterations")


def test_nested_comprehensions_count_together():
    error = _refusal("x = [[j for j in range(2000)] for i in range(2000)];")
    assert "list comprehension of 2,000 iterations" in error.message
    assert error.span.column == 6  # the inner comprehension


@pytest.mark.parametrize("text, what", [('x = ["ab" * 10^6 for i in range(100)];', "list"),
                                        ('x = {i: "ab" * 10^6 for i in range(100)};', "dict")])
def test_string_doubling_in_a_comprehension_is_refused_as_it_grows(text, what):
    error = _refusal(text)
    assert f"this {what} comprehension's elements would have 12,000,000" in error.message
    assert f"{MAX_COLLECTION_LENGTH:,}" in error.message
    assert error.span.column == 5


def test_the_budget_is_per_top_level_statement():
    program = Interpreter().run_source(
        "a = [i for i in range(10^6)];\nb = [i for i in range(10^6)];", "loops.rasp")
    assert len(program.values["b"]) == 10**6


def test_recursion_names_the_function_and_its_limit():
    error = _refusal("def spin(x) { return spin(x); }\ny = spin(1);")
    assert "maximum recursion depth (1000 calls) exceeded in function spin" in error.message


@pytest.mark.parametrize("argv, message", [
    (["--samples", "1000000000000"], "--samples: invalid value '1000000000000': expected a "
     "positive number of samples of at most 1,000,000"),
    (["--seed", "-1"], "--seed: invalid value '-1': expected a seed, an integer >= 0"),
    (["--seed", str(2**32)], "of at most 4,294,967,295"),
])
def test_count_options_are_bounded_while_parsing(capsys, tmp_path, argv, message):
    path = write(tmp_path, "y = tokens;")
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "compile", path, "--name", "y", "--vocab", "a", "--max-len", "2",
                "-o", str(tmp_path / "m.npz"), *argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
