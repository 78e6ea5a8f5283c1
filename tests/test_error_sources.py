"""An error quotes the line of the text its span came from (rasp_sim/base/errors.py `Source`):
every parse makes its own source, so files with the same name and REPL chunks never
stand in for each other."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from rasp_sim.cli.inputs import read_inputs_file
from rasp_sim.cli.repl import session
from rasp_sim.base.errors import RaspRuntimeError, RaspSyntaxError, quote
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.language.repl_session import ReplSession
from rasp_sim.language.parser import parse

FAILING_UTIL = "def f(x) {\n    return x / 0;\n}\n"
OTHER_UTIL = "# the other folder's util\nunused = 1;\ndef f(x) { return x; }\n"


def _quoted_line(formatted: str) -> str:
    """The source line an error's format() shows (the line after the headline)."""
    return formatted.splitlines()[1].strip()


def test_two_files_with_the_same_name_each_show_their_own_line(tmp_path: Path, monkeypatch):
    """`load "util"` reads ./util.rasp: in two folders both are named util.rasp. The
    second file parsed must not replace the first one's text in the first's errors."""
    first, second = tmp_path / "a", tmp_path / "b"
    for folder, text in ((first, FAILING_UTIL), (second, OTHER_UTIL)):
        folder.mkdir()
        (folder / "util.rasp").write_text(text)
    monkeypatch.chdir(first)
    interpreter = Interpreter()
    interpreter.run_source('load "util";', "main.rasp")
    monkeypatch.chdir(second)
    Interpreter().run_source('load "util";', "main.rasp")  # same file name

    with pytest.raises(RaspRuntimeError) as info:
        interpreter.run_source("f(tokens_int)([1, 2]);", "main.rasp")
    # at the user's line, util.rasp's line a note (issue 36): quoted from its own text
    assert info.value.span.file == "main.rasp"
    notes = info.value.notes
    assert notes[0].startswith("  note: util.rasp:2:")
    assert notes[1].strip() == FAILING_UTIL.splitlines()[1].strip() == "return x / 0;"


def test_same_name_parses_keep_their_own_text():
    old = parse("x = 1;\ny = 2;\n", "prog.rasp")
    parse("a = 3;\nb = 4;\n", "prog.rasp")
    assert quote(old.statements[1].span) == ["    y = 2;", "    ^^^^^^"]


def test_a_repl_error_quoting_an_earlier_chunk_shows_that_chunks_line():
    """f's body is line 2 of its own chunk; the failing call's chunk has a line 2 too."""
    definition = ["def f(x) {", "    y = x / 0;", "    return y;", "}"]
    call = ["z = 1 +", "  f(tokens_int);"]
    lines = iter(["set example [1, 2]", *definition, *call])
    out = io.StringIO()
    session(ReplSession(output=out), lambda prompt: next(lines, None), out)
    text = out.getvalue()
    headline = next(line for line in text.splitlines() if "division by zero" in line)
    assert headline.startswith("<repl>:2:9: runtime error:")
    quoted = text.splitlines()[text.splitlines().index(headline) + 1]
    assert quoted.strip() == definition[1].strip()
    assert call[1].strip() not in text


def test_a_syntax_error_quotes_its_own_text():
    parse("x = 1;\n", "<repl>")
    with pytest.raises(RaspSyntaxError) as info:
        parse("y = 2;\nz = 'a';\n", "<repl>")
    assert _quoted_line(info.value.format()) == "z = 'a';"


def test_an_inputs_file_error_quotes_its_line(tmp_path: Path):
    path = tmp_path / "inputs.txt"
    path.write_text('hello\n[1, 2,]\n')
    entries = read_inputs_file(str(path), max_bytes=1000)
    error = entries[1].error
    assert _quoted_line(error.format()) == "[1, 2,]"
