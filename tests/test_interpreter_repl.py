"""REPL mode (docs/language.md): the definition check against the running
example, example statements, and the original's display conventions."""
from __future__ import annotations

import pytest

from rasp_sim.base.errors import RaspNameError, RaspRuntimeError, RaspTypeError
from rasp_sim.language.interpreter import Interpreter

from .interp_helpers import run


def repl(text: str = "", **options) -> Interpreter:
    return run(text, repl=True, **options)


def test_failing_definition_is_not_bound() -> None:
    interpreter = repl()
    with pytest.raises(RaspRuntimeError, match="invalid literal for int") as info:
        interpreter.run_source("y = tokens_int + 1;", "<repl>")
    assert info.value.span is not None
    with pytest.raises(RaspNameError):
        interpreter.lookup("y")
    interpreter.run_source("set example [1, 2, 3]\ny = tokens_int + 1;", "<repl>")
    assert interpreter.lookup("y") is not None


def test_run_mode_binds_every_definition() -> None:
    assert run("y = tokens_int + 1; z = 1 / (indices - 1);").lookup("z") is not None


def test_division_by_zero_on_the_example_rejects() -> None:
    with pytest.raises(RaspRuntimeError, match="division by zero"):
        repl("y = 1 / (indices - 1);")


def test_rebinding_tokens_is_checked() -> None:
    with pytest.raises(RaspRuntimeError, match="invalid literal for int"):
        repl("tokens = tokens_int;")
    assert repl("set example [1, 2]\ntokens = tokens_int;").lookup("tokens").kind == "int"


def test_subexpressions_are_checked_too() -> None:
    # The value is an atom, but a subexpression is an s-op failing on "hello".
    with pytest.raises(RaspRuntimeError, match="invalid literal for int"):
        repl("y = len([tokens_int + 1]);")


def test_changed_example_rejects_the_expression_but_keeps_the_binding() -> None:
    interpreter = repl("set example [1, 2]\nx = tokens_int + 1;")
    interpreter.run_source('set example "ab"', "<repl>")
    with pytest.raises(RaspRuntimeError, match="invalid literal for int"):
        interpreter.run_source("x;", "<repl>")
    assert interpreter.lookup("x") is not None


def test_application_input_is_used_for_the_check() -> None:
    interpreter = repl()
    interpreter.run_source("(tokens_int + 1)([1, 2]);", "<repl>")
    assert interpreter.lines[-1] == "\t =  [2, 3] (ints)"


def test_empty_example_rejects_every_sop() -> None:
    interpreter = repl('set example ""')
    with pytest.raises(RaspRuntimeError, match="empty"):
        interpreter.run_source("x = tokens;", "<repl>")


def test_example_must_be_iterable() -> None:
    with pytest.raises(RaspTypeError, match="example not iterable: 5"):
        repl("set example 5")


def test_partial_examples() -> None:
    interpreter = repl('set s-op example "ab"\nset selector example [1, 2, 3]\nshow example')
    assert interpreter.sop_example == "ab" and interpreter.selector_example == [1, 2, 3]
    assert interpreter.lines[-2:] == ['\ts-op example: "ab"', "\tselector example: [1, 2, 3]"]


# ---------------------------------------------------------------------------- display


def test_sop_display() -> None:
    interpreter = repl("x = indices;")
    assert interpreter.lines == ["     s-op: x", ' \t Example: x("hello") = [0, 1, 2, 3, 4] (ints)']


def test_sop_display_compresses_equal_values_and_formats_elements() -> None:
    interpreter = repl('length;\nset example [1, 2, 3]\ntokens_int / 3;\ntokens_int == 2;\ntokens_str;')
    assert interpreter.lines == [
        "     s-op: length",
        ' \t Example: length("hello") = [5]*5 (ints)',
        "     s-op: out",
        " \t Example: out([1, 2, 3]) = [0.333, 0.667, 1.0] (floats)",
        "     s-op: out",
        " \t Example: out([1, 2, 3]) = [F, T, F] (bools)",
        "     s-op: tokens_str",
        " \t Example: tokens_str([1, 2, 3]) = [1, 2, 3] (strings)",
    ]


def test_selector_display() -> None:
    interpreter = repl('set example "ab"\ns = select(indices, indices, <);')
    assert interpreter.lines == [
        "     selector: s",
        " \t Example:",
        " \t\t\t     a b",
        " \t\t\t a |    ",  # two blanks joined by a space
        " \t\t\t b | 1  ",
    ]


def test_atom_list_dict_function_display() -> None:
    interpreter = repl('x = 5; s = "a"; f = 0.1 + 0.2; l = [1, "b"]; d = {"k": 1}; def g(a, b) { return a; }')
    assert interpreter.lines == [
        "    value: x =  5",
        '    value: s =  "a"',
        "    value: f =  0.30000000000000004",
        "     list: l = [1, 'b']",
        "     dict: d = {'k': 1}",
        "     console function: g(a, b)",
    ]


def test_unnamed_selectors_in_containers_are_plain_select() -> None:
    """The original's `select` names every selector it builds "plain select" (composed
    ones too); only a name longer than 30 characters falls back to "sel"."""
    interpreter = repl("examples off\ndef f(s) { return s; }\n"
                       'd = {"k": select(indices, indices, ==)};\n'
                       "l = [select(indices, indices, <) and select(indices, indices, ==), "
                       "f(select(indices, indices, ==))];")
    assert interpreter.lines[1:] == [
        "     dict: d =  {",
        '\t\t\t "k" :     selector: plain select',
        "               }",
        "     list: l =  [",
        "\t\t     selector: plain select",
        "\t\t     selector: f(plain select)",
        "               ]",
    ]


def test_library_functions_are_labelled_with_the_originals_load_name() -> None:
    assert repl("count;\nselector_width;").lines == [
        "     RASP_support/rasplib function: count(seq, atom)",
        "     RASP_support/rasplib function: selector_width(sel)",
    ]


def test_examples_off_prints_headers_only() -> None:
    interpreter = repl("examples off\nx = indices;\ns = select(1, 1, ==);")
    assert interpreter.lines == ["     s-op: x", "     selector: s"]


def test_run_mode_displays_no_expression_statement() -> None:
    """As the original loading a file: only `show example` and `draw` display (issue 36)."""
    interpreter = run("x = 5; x; y = indices; y; y([1]);\nshow example")
    assert interpreter.lines == ["\ts-op example: None", "\tselector example: None"]


def test_loops_print_nothing() -> None:
    assert repl("for i in [1, 2] { i; }").lines == []


def test_exit_stops_the_program() -> None:
    interpreter = repl("x = 1;\nexit\nx = 2;")
    assert interpreter.exit_requested and interpreter.lookup("x") == 1


def test_full_seq_display() -> None:
    interpreter = repl("full seq display on\nset example [1, 2, 2]\nx = tokens_int + 1;\nz = length;")
    assert interpreter.lines == [
        "     s-op: x",
        " \t Example:",
        " \t\tinput:   1 2 2 \t (strings)",  # the original: always "strings"
        " \t\toutput:  2 3 3 \t (ints)",
        "     s-op: z",
        " \t Example: z([1, 2, 2]) = [3]*3 (ints) [skipped full display: identical values]",
    ]


def test_lists_holding_sops_are_expanded() -> None:
    interpreter = repl("examples off\nl = [indices, 1];")
    assert interpreter.lines == [
        "     list: l =  [",
        "\t\t     s-op: indices",
        "\t\t    value:  1",
        "               ]",
    ]


def test_application_and_draw_display() -> None:
    drawn = []
    interpreter = repl()
    interpreter.draw_hook = lambda node, example: drawn.append((node, example))
    interpreter.run_source('select(indices, indices, ==)("ab");\ndraw(tokens_int * 2, [5, 6]);', "<repl>")
    assert interpreter.lines == [
        "\t = ",
        " \t\t\t     a b",
        " \t\t\t a | 1  ",
        " \t\t\t b |   1",
        "\t =  [10, 12] (ints)",
    ]
    assert drawn[0][1] == [5, 6] and drawn[0][0].op == "*"


def test_draw_needs_an_sop() -> None:
    with pytest.raises(RaspTypeError, match="draw expects s-op"):
        repl("draw(select(1, 1, ==));")


def test_exit_in_a_loaded_file_ends_only_the_load(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stop.rasp").write_text("a = 1;\nexit\nb = 2;\n")
    interpreter = repl('load "stop";\nc = 3;')
    assert interpreter.lookup("a") == 1 and interpreter.lookup("c") == 3
    assert not interpreter.exit_requested
    with pytest.raises(RaspNameError):
        interpreter.lookup("b")


def test_set_example_in_a_file_reads_the_top_scope(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ex.rasp").write_text("set example mine\n")
    assert repl('mine = [7, 8];\nload "ex";').sop_example == [7, 8]


def test_draw_without_input_needs_a_running_example() -> None:
    with pytest.raises(RaspTypeError, match="draw needs an input") as info:
        run("x = 1;\ndraw(tokens);")
    assert info.value.span.line == 2
    assert run('set example "ab"\ndraw(tokens);').lines == ["\t =  [a, b] (strings)"]
