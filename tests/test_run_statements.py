"""`rasp-sim run`'s statement semantics (rasp_sim/language/run_session.py): with `--example X` the
original's (a failing statement is reported and binds nothing), by default lazy (a
failing statement the target does not depend on is a warning). One case per kind of
failure found by fuzzing against the original: tests/run_statement_cases.py, whose
`original` values tests/test_run_differential.py checks against the original itself."""
from __future__ import annotations

from pathlib import Path

import pytest

from cli_helpers import run_cli
from run_statement_cases import CASES, Case


def _write(tmp_path: Path, case: Case) -> str:
    for name, text in case.files.items():
        (tmp_path / f"{name}.rasp").write_text(text)
    program = tmp_path / "prog.rasp"
    program.write_text(case.program)
    return str(program)


def _expected(case: Case, values: tuple[str, ...]) -> str:
    return "".join(f"{case.target}({x}) = {v}\n" for x, v in zip(case.inputs, values))


@pytest.mark.parametrize("name", CASES)
def test_with_an_example_run_gives_the_original_values(name, capsys, tmp_path, monkeypatch):
    case = CASES[name]
    monkeypatch.chdir(tmp_path)  # the original looks for loaded files here
    program = _write(tmp_path, case)
    code, out, err = run_cli(capsys, "run", program, "--example", case.example,
                             "--name", case.target, "--input", *case.inputs)
    assert (code, out) == (0, _expected(case, case.original)), err
    warnings = [line for line in err.splitlines() if ": warning: " in line]
    assert len(warnings) == case.failures, err
    for line in warnings:  # located in a file of the program
        assert line.split(":")[0].endswith(".rasp"), line
    if case.failures:  # the statement with --strict-statements refuses the program
        code, out, err = run_cli(capsys, "run", program, "--example", case.example,
                                 "--name", case.target, "--input", *case.inputs,
                                 "--strict-statements")
        assert (code, out) == (1, "")
        assert "--strict-statements refuses the program" in err


@pytest.mark.parametrize("name", CASES)
def test_without_an_example_a_failure_is_a_warning_unless_the_target_needs_it(
        name, capsys, tmp_path, monkeypatch):
    case = CASES[name]
    monkeypatch.chdir(tmp_path)
    program = _write(tmp_path, case)
    code, out, err = run_cli(capsys, "run", program, "--name", case.target,
                             "--input", *case.inputs)
    if case.lazy is None:  # refused: the target fails on the input (a runtime error), or
        assert (code, out) == (1, "")  # depends on a statement that failed as it ran
        assert ": warning: " not in err
        if "static" in name:
            assert f"error: {case.target} depends on a statement that failed" in err
            assert "--example X" in err
    else:
        assert (code, out) == (0, _expected(case, case.lazy)), err


def test_a_static_failure_is_a_located_warning_and_strict_statements_refuses(
        capsys, tmp_path):
    program = tmp_path / "prog.rasp"
    program.write_text("a = tokens + select(indices, indices, ==);\nz = indices + 1;\n")
    code, out, err = run_cli(capsys, "run", str(program), "--input", "abc")
    assert (code, out) == (0, 'z("abc") = [1, 2, 3] (ints)\n')
    assert err.splitlines()[0] == f"{program}:1:5: warning: type error: Cannot apply + to selector(s)"
    assert err.splitlines()[-1] == "  note: the statement is skipped: z does not depend on it"
    code, out, err = run_cli(capsys, "run", str(program), "--input", "abc",
                             "--strict-statements")
    assert (code, out) == (1, "")
    assert err.startswith(f"{program}:1:5: type error: Cannot apply + to selector(s)")


def test_a_target_that_needs_a_failed_load_is_refused_with_the_load_error(capsys, tmp_path):
    program = tmp_path / "prog.rasp"
    program.write_text('load "nothere";\nz = indices + helper;\n')
    code, out, err = run_cli(capsys, "run", str(program), "--input", "abc")
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == f"{program}:1:1: load error: could not find file: nothere.rasp"
    assert f"{program}:2:15: name error: Undefined variable: helper" in lines


def test_the_default_target_of_a_failed_last_assignment_is_that_name(capsys, tmp_path):
    """Not the name assigned before it: a failed `z = ...` leaves z without a value."""
    program = tmp_path / "prog.rasp"
    program.write_text("y = indices;\nz = tokens + select(indices, indices, ==);\n")
    code, out, err = run_cli(capsys, "run", str(program), "--input", "abc")
    assert (code, out) == (1, "")
    assert "error: z depends on a statement that failed" in err


def test_draw_is_skipped_with_a_note(capsys, tmp_path):
    program = tmp_path / "prog.rasp"
    program.write_text("z = indices + 1;\ndraw(z);\n")
    for example in ([], ["--example", "hello"]):
        code, out, err = run_cli(capsys, "run", str(program), "--input", "ab", *example)
        assert (code, out) == (0, 'z("ab") = [1, 2] (ints)\n')
        assert err.startswith(f"{program}:2:1: note: draw skipped")
