"""`rasp-sim analyse` and `draw` run a program with `run`'s statement semantics
(rasp_sim/language/run_session.py): a failing statement the target does not depend on is a
warning, and the program is analysed; a target that depends on one is refused. What a
program's statements display never reaches stdout outside the REPL (issue 36)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import run_cli, write
from run_statement_cases import CASES
from test_run_statements import _write


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": warning: " in line]


@pytest.mark.parametrize("name", CASES)
def test_analyse_and_draw_refuse_exactly_what_run_refuses(name, capsys, tmp_path,
                                                          monkeypatch):
    """The cases of tests/run_statement_cases.py: each command warns about the same
    statements as `run`, and refuses the target where `run` says it depends on a failed
    statement."""
    case = CASES[name]
    monkeypatch.chdir(tmp_path)
    program = _write(tmp_path, case)
    _, _, run_err = run_cli(capsys, "run", program, "--name", case.target,
                            "--input", *case.inputs)
    refused = "depends on a statement that failed" in run_err
    for command in (["analyse", "--json"], ["draw", "-o", str(tmp_path / "g.dot")]):
        code, out, err = run_cli(capsys, command[0], program, "--name", case.target,
                                 *command[1:])
        assert code == (1 if refused else 0), err
        assert _warnings(err) == _warnings(run_err)
        assert ("depends on a statement that failed" in err) == refused
        assert "--example" not in err  # run's hint: these commands have no --example
        if command[0] == "analyse" and not refused:
            assert json.loads(out)["name"] == case.target


def test_analyse_of_a_loaded_file_with_failing_statements(capsys, tmp_path, monkeypatch):
    """The original's tests/rasps/loadA.rasp pattern: failing statements in the program
    and in the file it loads, none of which the target needs."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "g = f;\nb = indices + 7;\n_c = a;\n", "loadB.rasp")
    program = write(tmp_path, 'a = f;\nload "loadB";\nc = b;\nd = _b;\ne = c + 1;\n')
    code, out, err = run_cli(capsys, "analyse", program, "--json")
    assert code == 0, err
    assert json.loads(out)["name"] == "e"
    assert len(_warnings(err)) == 4  # a = f; g = f; _c = a; d = _b;


def test_a_draw_statement_is_skipped_with_a_note_naming_the_command(capsys, tmp_path):
    program = write(tmp_path, "z = indices + 1;\ndraw(z);\n")
    code, _, err = run_cli(capsys, "analyse", program)
    assert code == 0, err
    assert err.startswith(f"{program}:2:1: note: draw skipped: `rasp-sim analyse`")
    code, _, err = run_cli(capsys, "draw", program, "-o", str(tmp_path / "g.dot"))
    assert code == 0, err
    assert err.startswith(f"{program}:2:1: note: draw skipped: `rasp-sim draw` draws NAME")


DISPLAYING = 'a = select(indices, indices, ==);\na("hello");\nindices;\n5;\nz = indices + 1;\n'


@pytest.mark.parametrize("command, documents", [
    (["run", "--input", "abc", "--json"], str.splitlines),
    (["run", "--input", "abc", "--json", "--example", "abc"], str.splitlines),
    (["analyse", "--json"], lambda out: [out]),
])
def test_bare_expression_statements_print_nothing(command, documents, capsys, tmp_path):
    """`a("hello");` in a file is the REPL's answer, not the command's output: stdout
    holds the JSON alone, as the original prints nothing for it when loading a file."""
    program = write(tmp_path, DISPLAYING)
    code, out, err = run_cli(capsys, command[0], program, *command[1:])
    assert code == 0, err
    assert [json.loads(document) for document in documents(out)]  # JSON alone
    assert "hello" not in out + err


def test_show_example_goes_to_standard_error(capsys, tmp_path):
    program = write(tmp_path, 'set example "ab"\nshow example\nz = indices;\n')
    code, out, err = run_cli(capsys, "run", program, "--input", "abc", "--json",
                             "--example", "xy")
    assert code == 0, err
    assert json.loads(out)["output"] == [0, 1, 2]
    assert '"ab"' in err


FAILING_IN_THE_MIDDLE = 'x = 1;\ny = tokens + select(indices, indices, ==);\nz = x + 1;\n'


@pytest.mark.parametrize("start", ["file", "load"])
def test_repl_file_goes_on_past_a_failing_statement_as_load_does(start, capsys, tmp_path,
                                                                 monkeypatch):
    """`rasp-sim repl FILE` runs FILE's statements after a failing one, as `load "FILE";`
    at the prompt and the original do: the names bound after it hold their values."""
    import io
    import sys

    monkeypatch.chdir(tmp_path)
    program = write(tmp_path, FAILING_IN_THE_MIDDLE)
    typed = 'load "prog";\n' if start == "load" else ""
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed + "z;\n"))
    arguments = [program] if start == "file" else []
    code, out, _ = run_cli(capsys, "repl", *arguments)
    assert code == 0
    assert out.count("Cannot apply + to selector(s)") == 1
    assert out.count("value: z =  2") == 2  # as the file (or load) binds it, and at `z;`


def _library_functions() -> list[tuple[str, int]]:
    from rasp_sim.language.interpreter import Interpreter
    from rasp_sim.language.values import Function

    base = Interpreter().base.variables
    return sorted((name, len(value.params)) for name, value in base.items()
                  if isinstance(value, Function))


ARGUMENTS = ["tokens_int", "select(indices, indices, ==)", "[1, 2]", "1"]


@pytest.mark.parametrize("function, arity", _library_functions())
@pytest.mark.parametrize("repl", [False, True])
def test_an_error_inside_the_library_is_located_at_the_users_call(function, arity, repl):
    """Every library function, with arguments of each wrong kind: an error raised while
    the statement runs (a static type error; at the REPL, the definition check on its
    example) is located at the user's line, the library's line a note (issue 36)."""
    from rasp_sim.base.errors import RaspError
    from rasp_sim.language.repl_session import ReplSession, Session

    for argument in ARGUMENTS:
        call = f"{function}({', '.join([argument] * arity)})"
        session = (ReplSession if repl else Session)(output=lambda line: None)
        try:
            session.run_source(f"x = 1;\ny = {call};\n", "prog.rasp")
        except RaspError as error:
            assert error.span is not None and error.span.file == "prog.rasp", error.format()
            assert error.span.line == 2
            if "in a loaded library" in error.message:
                assert "  note: <stdlib>:" in error.notes[0]


def test_a_function_of_a_loaded_file_fails_at_the_loaders_call(capsys, tmp_path,
                                                              monkeypatch):
    """Also through two files: the error is at the program's statement, with the line of
    the library where it happened as a note."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "def width(s) {\n  return selector_width(s);\n}\n", "helper.rasp")
    program = write(tmp_path, 'load "helper";\ny = width(tokens_int);\nz = indices;\n')
    code, out, err = run_cli(capsys, "run", program, "--name", "y", "--input", "[1]")
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith(f"{program}:2:5: type error: Cannot apply and/or between "
                               "selector and non-selector (at <stdlib>:")
    assert lines[1].strip() == "y = width(tokens_int);"
    assert lines[4].strip() == "plus_key0 = sel or key0;"


@pytest.mark.parametrize("example", [[], ["--example", "hello"]])
def test_a_failure_inside_a_user_function_names_the_skipped_statement(example, capsys,
                                                                      tmp_path):
    """The error stays in the function's body (the user's own line), and the note names
    the statement that is skipped: the call."""
    program = write(tmp_path, "def f(x) {\n  s = select(x, x, ==);\n"
                    "  return aggregate(s, x) + select(x, x, ==);\n}\n"
                    "y = f(tokens);\nz = indices + 1;\n")
    code, out, err = run_cli(capsys, "run", program, "--input", "ab", *example)
    assert (code, out) == (0, 'z("ab") = [1, 2] (ints)\n'), err
    assert err.startswith(f"{program}:3:10: warning: ")
    assert f"  note: the statement at {program}:5:1 (y = f(tokens);) is skipped" in err
    code, out, err = run_cli(capsys, "run", program, "--input", "ab", "--name", "y")
    assert code == 1
    assert f"  note: the statement at {program}:5:1 (y = f(tokens);) fails" in err
