"""A `Program` evaluates in the mode it was built in; the Interpreter alone builds graphs
and shows nothing; sessions show (run mode) or check and show (REPL)."""
from __future__ import annotations

from fractions import Fraction

import pytest

from rasp_sim.language import library
from rasp_sim.base.errors import RaspNameError, RaspRuntimeError, RaspTypeError
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.language.repl_session import ReplSession, Session

SOURCE = "x = indices + 0.1 + 0.2;\nn = 3;\n"


@pytest.mark.parametrize("exact", [False, True])
def test_a_program_evaluates_in_the_mode_it_was_built_in(exact: bool) -> None:
    program = Interpreter(exact=exact).run_source(SOURCE, "p.rasp")
    assert (program.exact, program.strict, program.source) == (exact, False, "p.rasp")
    tenth, fifth = (Fraction("0.1"), Fraction("0.2")) if exact else (0.1, 0.2)
    expected = [[i + tenth + fifth for i in range(len(word))] for word in ("ab", "abc")]
    got = program.evaluate(["ab", "abc"], "x")
    assert got == expected
    assert all(type(v) is type(tenth) for row in got for v in row)


def test_the_library_runs_an_expression_in_its_mode() -> None:
    (values,) = library.run("tokens_float * 0.1", [[3]], exact=True)
    assert values == [Fraction(3, 10)]
    (values,) = library.run("tokens_float * 0.1", [[3]])
    assert values == [3 * 0.1]


def test_the_program_is_a_snapshot_of_its_names() -> None:
    interpreter = Interpreter()
    first = interpreter.run_source("a = tokens;", "one.rasp")
    interpreter.run_source("a = indices; b = a;", "two.rasp")
    assert first.node()[0] == "a" and first.values["a"] is interpreter.lookup("tokens")
    assert "b" not in first.values
    assert first.node("length")[0] == "length"  # the library's names are visible


def test_node_names_what_is_missing() -> None:
    program = Interpreter().run_source(SOURCE, "p.rasp")
    assert program.last_name == "n"
    with pytest.raises(RaspTypeError, match="'n' is an atom, not an s-op or selector"):
        program.node()
    with pytest.raises(RaspNameError, match="p.rasp defines no name 'y'"):
        program.node("y")
    with pytest.raises(RaspNameError, match="e.rasp assigns no names: nothing to evaluate"):
        Interpreter().run_source("1;", "e.rasp").node()


def test_the_interpreter_alone_shows_and_checks_nothing(capsys) -> None:
    interpreter = Interpreter()
    interpreter.run_source('set example "ab"\nx = tokens_int + 1;\nx;\nshow example', "q")
    assert capsys.readouterr().out == ""
    assert interpreter.lookup("x") is not None  # bound: no definition check


def test_run_mode_shows_only_what_displays() -> None:
    """`show example` and `draw` display; a bare expression statement (`y;`) does not,
    as the original prints nothing for one in a file it loads (issue 36)."""
    lines: list[str] = []
    Session(output=lines.append).run_source(
        'set example "ab"\ny = tokens;\ny;\ny("cd");\nshow example\ndraw(y);', "r")
    assert lines[0] == '\ts-op example: "ab"'
    assert not any("cd" in line for line in lines)
    assert lines[-1].endswith("[a, b] (strings)")  # draw(y) on the running example
    shown: list[str] = []
    Session(output=shown.append).run_source("y = tokens;", "r")
    assert shown == []


def test_the_repl_checks_on_its_example_and_shows_every_statement() -> None:
    lines: list[str] = []
    repl = ReplSession(output=lines.append)
    assert repl.interpreter.sop_example == "hello"
    repl.run_source("y = tokens;", "<repl>")
    assert any("s-op: y" in line for line in lines)
    with pytest.raises(RaspRuntimeError, match="invalid literal for int"):
        repl.run_source("z = tokens_int + 1;", "<repl>")
    with pytest.raises(RaspNameError):
        repl.lookup("z")
