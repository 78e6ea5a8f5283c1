"""Bad input gives a RaspError with a clear message and the location at fault
(docs/language.md; rasp-sim's errors carry file:line:column).

Each case: program text, error class, message pattern, and the (line, column) of the
node at fault, counted by hand. REPL-mode cases are rejected by the definition check
against the running example; the others already when the statement runs.
"""
from __future__ import annotations

from typing import Any

import pytest

from rasp_sim.base.errors import (
    RaspError, RaspNameError, RaspProgramError, RaspResourceError, RaspRuntimeError,
    RaspSyntaxError, RaspTypeError,
)
from rasp_sim.evaluation.evaluate import evaluate
from rasp_sim.language.interpreter import Interpreter

from .interp_helpers import run, value

CASES = [
    # syntax errors (the parser's; the interpreter passes them through)
    ("x = 1 +;", RaspSyntaxError, "expected an expression", (1, 8), False),
    ("x = 'a';", RaspSyntaxError, "single quotes", (1, 5), False),
    ("def f(off) { return 1; }", RaspSyntaxError, "'off' is a keyword", (1, 7), False),
    # unknown names
    ("y = 1;\nx = y + nope;", RaspNameError, "Undefined variable: nope", (2, 9), False),
    ("x = aggregate (select(1, 1, ==), 1);", None, None, None, False),  # extension: fine
    # wrong arity
    ("def g(a, b) { return a; }\nx = g(1);", RaspTypeError,
     r"wrong number of args for g- expected: 2, got: 1\.", (2, 5), False),
    # type errors
    ('x = "a" + 1;', RaspTypeError, r"cannot apply \+ to 'a' \(str\) and 1 \(int\)", (1, 5), False),
    ('x = "a" < 1;', RaspTypeError, "cannot apply <", (1, 5), False),
    ("s = select(indices, indices, <);\nx = s + 1;", RaspTypeError,
     r"Cannot apply \+ to selector\(s\)", (2, 5), False),
    ("x = not select(1, 1, ==) or tokens;", RaspTypeError,
     "Cannot apply and/or between selector and non-selector", (1, 5), False),
    ("x = aggregate(select(1, 1, ==), tokens);", RaspRuntimeError,
     "asked to average multiple values, but they are non-numbers", (1, 5), True),
    ('x = tokens < 1;', RaspTypeError, "cannot apply <", (1, 5), True),
    ('set example [1, 2]\nx = tokens_int if indices == 0 else "a";', RaspTypeError,
     "vals of different types", (2, 5), True),
    ("x = indicator(1);", RaspTypeError, "indicator operator expects s-op, got: 1", (1, 5), False),
    ("x = aggregate(select(1, 1, ==), 1, tokens);", RaspTypeError,
     "Expected atom, got: tokens", (1, 5), False),
    # runtime errors
    ("x = 1 / 0;", RaspRuntimeError, "division by zero", (1, 5), False),
    ("x = 1 / (indices - 1);", RaspRuntimeError, "division by zero", (1, 5), True),
    ("x = tokens_int;", RaspRuntimeError, "invalid literal for int", (1, 5), True),
    ("x = 2.718 ^ 1000.0;", RaspRuntimeError, "out of range", (1, 5), False),
    # indexing
    ("x = [1, 2][5];", RaspTypeError, "index 5 out of range for list of length 2", (1, 5), False),
    ('x = {"a": 1}["b"];', RaspTypeError, r'index \[ "b" \] not in dict\.', (1, 5), False),
    ("x = tokens[tokens];", RaspTypeError, "index into sequence has to be integer", (1, 5), False),
    # reserved names
    ("indices = 1;", RaspNameError, "Cannot set reserved name: indices", (1, 1), False),
    ("x = 1;\nout = 2;", RaspNameError, "Cannot set reserved name: out", (2, 1), False),
    ("length = 2;", RaspNameError, "Cannot set reserved name: length", (1, 1), False),
    ("a, True = 1, 2;", RaspNameError, "Cannot set reserved name: True", (1, 1), False),
    # multi-assignment
    ("a, b, c = 1, 2;", RaspTypeError, "expected 3 values, but got: 2", (1, 1), False),
    # built-ins
    ("x = range(1.5);", RaspTypeError, "range expects all integer inputs", (1, 5), False),
    ('x = len("ab");', RaspTypeError, "attempting to compute length of non-list", (1, 5), False),
    # infinite recursion
    ("def forever(n) { return forever(n + 1); }\nx = forever(0);", RaspResourceError,
     r"maximum recursion depth \(1000 calls\) exceeded in function forever \(defined at t.rasp:1:1\)",
     (1, 25), False),
]


@pytest.mark.parametrize("text, error, message, location, repl", CASES)
def test_bad_input(text: str, error: type, message: str, location: tuple, repl: bool) -> None:
    if error is None:
        run(text, repl=repl)
        return
    with pytest.raises(error, match=message) as info:
        run(text, repl=repl)
    span = info.value.span
    assert span is not None and span.file == "t.rasp"
    assert (span.line, span.column) == location


def test_error_format_shows_location_and_caret() -> None:
    with pytest.raises(RaspError) as info:
        run("def g(a, b) { return a; }\nx = g(1);")
    assert info.value.format() == (
        "t.rasp:2:5: type error: wrong number of args for g- expected: 2, got: 1.\n"
        "    x = g(1);\n"
        "        ^^^^"
    )


# ------------------------------------------------------------ the `assert` extension

HELPERS = """def positive(x, what) {
    ok = assert(x > 0, what + " must be positive");
    return x;
}
def checked(x) {
    return x if assert(x > 0, "checked: x must be positive") else x;
}
def twice(x) {
    return checked(x) + checked(x);
}
"""


def run_with_helpers(tmp_path, main: str, **options: Any) -> Interpreter:
    (tmp_path / "helpers.rasp").write_text(HELPERS)
    (tmp_path / "main.rasp").write_text('load "helpers";\n' + main)
    interpreter = Interpreter(**options)
    interpreter.run_file(tmp_path / "main.rasp")
    return interpreter


def test_assert_on_atoms_passes_or_fails_at_once() -> None:
    assert value('x = assert(1 < 2, "never");') is True
    with pytest.raises(RaspProgramError) as info:
        run('def f(n) {\n    ok = assert(n > 0, "f: n must be positive");\n    return n;\n}\n'
            "a = f(1);\nb = f(0);")
    error = info.value
    # an assert in the user's own file is reported where it is, with no notes
    assert error.format() == (
        't.rasp:2:10: error: f: n must be positive\n'
        '        ok = assert(n > 0, "f: n must be positive");\n'
        '             ' + "^" * 38
    )


def test_assert_in_a_loaded_file_reports_at_the_users_call(tmp_path) -> None:
    with pytest.raises(RaspProgramError) as info:
        run_with_helpers(tmp_path, 'a = positive(2, "a");\nb = positive(-1, "b");\n')
    error = info.value
    assert error.message == "b must be positive"
    assert (error.span.file, error.span.line, error.span.column) == (str(tmp_path / "main.rasp"), 3, 5)
    helpers = tmp_path / "helpers.rasp"
    assert error.notes == [
        f'  note: from {helpers}:2:10: ok = assert(x > 0, what + " must be positive");'
    ]
    assert error.format().splitlines()[1:3] == ['    b = positive(-1, "b");', "        " + "^" * 17]


def test_assert_on_sops_fails_when_evaluated_naming_input_and_position(tmp_path) -> None:
    interpreter = run_with_helpers(tmp_path, "y = twice(tokens_int) * 10;\n")
    y = interpreter.lookup("y")
    assert evaluate([y], [[1, 2], [3]]) == [[[20, 40]], [[60]]]
    with pytest.raises(RaspProgramError) as info:
        evaluate([y], [[1, 2], [4, 5, -6, 0], [-1]])
    error = info.value
    assert error.message == (
        "checked: x must be positive, at position 2, on input 1 ([4, 5, -6, 0])"
    )
    # reported at the user's call of `twice`, with the two library lines as notes
    assert (error.span.line, error.span.column) == (2, 5)
    helpers = tmp_path / "helpers.rasp"
    assert error.notes == [
        f"  note: from {helpers}:9:12: return checked(x) + checked(x);",
        f'  note: from {helpers}:6:17: return x if assert(x > 0, "checked: x must be positive") else x;',
    ]


def test_assert_reports_at_the_innermost_call_in_the_users_file(tmp_path) -> None:
    main = "def mine(v) {\n    return positive(v, \"v\");\n}\nc = mine(-3);\n"
    with pytest.raises(RaspProgramError) as info:
        run_with_helpers(tmp_path, main)
    assert (info.value.span.line, info.value.span.column) == (3, 12)


def test_assert_is_an_extension() -> None:
    with pytest.raises(RaspNameError, match="Undefined variable: assert") as info:
        run('x = assert(True, "m");', strict=True)
    assert (info.value.span.line, info.value.span.column) == (1, 5)
    # not reserved: a program's own `assert` wins
    assert value('def assert(a, b) { return 5; }\nx = assert(False, "m");') == 5


@pytest.mark.parametrize("text, message", [
    ("x = assert(True);", r"wrong number of args for assert- expected: 2, got: 1\."),
    ("x = assert(True, 3);", "assert expects a string message, got: 3"),
    ('x = assert([1], "m");', r"assert expects an s-op or atom condition, got: \[1\]"),
])
def test_assert_arguments_are_checked(text: str, message: str) -> None:
    with pytest.raises(RaspTypeError, match=message):
        run(text)
