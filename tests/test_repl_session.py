"""The REPL's loop (rasp_sim/cli/repl.py): pasted definitions cost linear work, and
Ctrl-C interrupts a statement or discards unfinished input without ending the session."""
from __future__ import annotations

import io

import pytest
from lark.parsers.lalr_parser_state import ParserState

from rasp_sim.language import definition_check
from rasp_sim.cli.repl import session
from rasp_sim.base.errors import RaspNameError
from rasp_sim.language.repl_session import ReplSession
from rasp_sim.language.parser import _lark


def run_session(lines: list, out: io.StringIO | None = None,
                interpreter: ReplSession | None = None) -> tuple[ReplSession, str]:
    """Feed `lines` to a REPL session printing to `out`; an exception instance in `lines`
    is raised by the line reader at that point (Ctrl-C at the prompt)."""
    out = out or io.StringIO()
    interpreter = interpreter or ReplSession(output=out)
    feed = iter(lines)

    def read_line(prompt: str) -> str | None:
        line = next(feed, None)
        if isinstance(line, BaseException):
            raise line
        return line

    session(interpreter, read_line, out)
    return interpreter, out.getvalue()


def test_a_pasted_definition_is_parsed_once_and_each_token_fed_a_bounded_number_of_times(
        monkeypatch):
    """Re-parsing the text so far on every line fed about n^2/2 lines' tokens to the
    parser for an n-line paste; now each token goes through the line check once and the
    final parse once."""
    n = 1500
    lines = ["def f(x) {", *(f"    y{i} = x + {i};" for i in range(n)),
             f"    return y{n - 1};", "}", "z = f(indices);"]
    out = io.StringIO()
    interpreter = ReplSession(output=out)  # parses the standard library first
    fed = []
    feed_token = ParserState.feed_token
    monkeypatch.setattr(ParserState, "feed_token",
                        lambda self, token, is_end=False: fed.append(token.type)
                        or feed_token(self, token, is_end))
    interpreter, text = run_session(lines, out, interpreter)
    assert interpreter.lookup("f") is not None
    assert f"z(\"hello\") = [{n - 1}, {n}, {n + 1}, {n + 2}, {n + 3}] (ints)" in text
    tokens = len(list(_lark().lex("\n".join(lines))))
    assert len([t for t in fed if t != "$END"]) == 2 * tokens


def test_ctrl_c_during_evaluation_interrupts_the_statement_and_keeps_the_session(monkeypatch):
    calls = {"n": 0}
    evaluate = definition_check.evaluate

    def interrupted_once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # the second definition's check on the running example
            raise KeyboardInterrupt
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(definition_check, "evaluate", interrupted_once)
    interpreter, text = run_session(["kept = indices + 1;", "lost = indices * 2; after = 1;",
                                     "later = kept + 1;", "later;"])
    assert "interrupted" in text.splitlines()
    assert interpreter.lookup("kept") is not None and interpreter.lookup("later") is not None
    for name in ("lost", "after"):  # the interrupted chunk stops: its rest does not run
        with pytest.raises(RaspNameError):
            interpreter.lookup(name)
    assert 'later("hello") = [2, 3, 4, 5, 6] (ints)' in text
    # Nothing of the interrupted statement is left half-done in the interpreter.
    assert (interpreter.interpreter._depth, interpreter.interpreter._files,
            interpreter._pending) == (0, [], [])


def test_ctrl_c_at_the_prompt_discards_the_unfinished_input(monkeypatch):
    interpreter, text = run_session(["kept = 1;", "def f(x) {", "    y = x;",
                                     KeyboardInterrupt(), "return_value = kept + 1;",
                                     "def g(x) {", "    return x;", "}"])
    assert interpreter.lookup("return_value") == 2 and interpreter.lookup("g") is not None
    with pytest.raises(RaspNameError):
        interpreter.lookup("f")
    assert "syntax error" not in text  # the discarded lines did not join the next ones


def test_end_of_input_ends_the_session():
    interpreter, _ = run_session(["x = 1;", None, "y = 2;"])
    assert interpreter.lookup("x") == 1
    with pytest.raises(RaspNameError):
        interpreter.lookup("y")
