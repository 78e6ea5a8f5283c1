"""Atom-level loops and comprehensions are bounded before they run (or, for the size of
what a comprehension builds, as it grows), and count options are bounded while the
command line is parsed: issue 22's probes, which ended in a late MemoryError or hung."""
from __future__ import annotations

import pytest
from cli_helpers import run_cli, write

from rasp_sim.base.errors import RaspResourceError
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.base import limits
from rasp_sim.base.limits import CALL_ITERATIONS, MAX_COLLECTION_LENGTH, MAX_ITERATIONS


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


@pytest.mark.parametrize("text, what", [('x = [s for i in range(100)];', "list"),
                                        ('x = {i: s for i in range(100)};', "dict")])
def test_a_shared_string_in_a_comprehension_is_refused_as_it_grows(text, what):
    error = _refusal(f's = "ab" * 10^6;\n{text}')
    assert f"this {what} comprehension's elements would have 12,000,000" in error.message
    assert f"{MAX_COLLECTION_LENGTH:,}" in error.message
    assert (error.span.line, error.span.column) == (2, 5)


def test_strings_built_in_a_comprehension_draw_on_the_program_budget():
    error = _refusal('x = ["ab" * 10^6 for i in range(100)];')
    assert "this * of 2,000,000 elements would take the program's lists" in error.message
    assert "8,000,200 already built" in error.message  # four strings and the list's slots
    assert error.span.column == 6  # the `*`


def test_the_iteration_budget_is_one_per_program_run(monkeypatch):
    monkeypatch.setattr(limits, "MAX_ITERATIONS", 1000)
    error = _refusal("a = [i for i in range(500)];\nb = [i for i in range(500)];\n"
                     "c = [i for i in range(1)];")
    assert error.span.line == 3  # the statement that crosses it
    assert "1,000 already run" in error.message


def test_each_program_run_has_the_whole_iteration_budget(monkeypatch):
    monkeypatch.setattr(limits, "MAX_ITERATIONS", 1000)
    interpreter = Interpreter()
    text = "a = [i for i in range(1000)];"
    interpreter.run_source(text, "loops.rasp")
    assert len(interpreter.run_source(text, "loops.rasp").values["a"]) == 1000


def test_function_calls_draw_on_the_iteration_budget(monkeypatch):
    # doubling recursion stays within the depth limit: f(30) made 2^31 calls, for hours
    monkeypatch.setattr(limits, "MAX_ITERATIONS", 100 * CALL_ITERATIONS)
    error = _refusal("def f(n) { return (f(n - 1) + f(n - 1)) if n > 0 else 1; }\ny = f(10);")
    assert "this call of f would take the program past 1,000 iterations" in error.message
    assert f"{100 * CALL_ITERATIONS:,} already run" in error.message
    assert error.span.line == 1


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
