"""The command line: results, exit codes (0 ok, 1 program error, 2 usage), error format."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import run_cli, write
from rasp_sim.cli import main
from rasp_sim.cli.repl import session
from rasp_sim.base.errors import RaspNameError
from rasp_sim.language.repl_session import ReplSession

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"




def test_run_example_reverse(capsys):
    code, out, _ = run_cli(capsys, "run", str(EXAMPLES / "reverse.rasp"), "--input", "hello")
    assert code == 0
    assert out == 'reverse("hello") = [o, l, l, e, h] (strings)\n'


def test_run_several_inputs_of_different_lengths(capsys):
    code, out, _ = run_cli(capsys, "run", str(EXAMPLES / "histogram.rasp"),
                           "--input", "hello", "--input", "aab")
    assert code == 0
    assert out.splitlines() == ['hist("hello") = [1, 1, 2, 2, 1] (ints)',
                                'hist("aab") = [2, 2, 1] (ints)']


def test_run_json_lists_and_json_output(capsys):
    code, out, _ = run_cli(capsys, "run", str(EXAMPLES / "sort.rasp"),
                           "--input", "[3, 1, 2, 1]", "--json")
    assert code == 0
    assert json.loads(out) == {"input": [3, 1, 2, 1], "output": [1, 1, 2, 3], "type": "ints"}


def test_run_named_sop_and_inputs_file(capsys, tmp_path):
    program = write(tmp_path, "doubled = tokens_int * 2;\nlast = indices;\n")
    inputs = write(tmp_path, "[1, 2]\n\n[5]\n", "inputs.txt")
    code, out, _ = run_cli(capsys, "run", program, "--name", "doubled", "--inputs", inputs)
    assert code == 0
    assert out.splitlines() == ["doubled([1, 2]) = [2, 4] (ints)", "doubled([5]) = [10] (ints)"]


def test_exact_mode_gives_rationals(capsys, tmp_path):
    program = write(tmp_path, "third = (tokens_int / 3) * 3 == tokens_int;\n"
                              "frac = tokens_int / 3;\n")
    code, out, _ = run_cli(capsys, "run", program, "--name", "frac", "--exact",
                           "--input", "[1, 2]", "--json")
    assert code == 0
    assert json.loads(out)["output"] == ["1/3", "2/3"]


def test_selector_output(capsys, tmp_path):
    program = write(tmp_path, "before = select(indices, indices, <);\n")
    code, out, _ = run_cli(capsys, "run", program, "--input", "abc")
    assert code == 0
    assert out.splitlines()[1:] == ["  . . .", "  1 . .", "  1 1 ."]


def test_syntax_error_points_at_line_and_column(capsys, tmp_path):
    program = write(tmp_path, "x = 1;\ny = tokens +;\n")
    code, out, err = run_cli(capsys, "run", program, "--input", "a")
    assert code == 1 and out == ""
    first, source, caret = err.splitlines()[:3]
    assert first.startswith(f"{program}:2:13: syntax error")
    assert source.strip() == "y = tokens +;"
    assert caret.index("^") - source.index("y") == 12


def test_runtime_error_names_input_and_location(capsys, tmp_path):
    program = write(tmp_path, "x = indices / (indices - 1);\n")
    code, _, err = run_cli(capsys, "run", program, "--input", "abc")
    assert code == 1
    assert err.startswith(f"{program}:1:5: runtime error: division by zero")
    assert "'abc'" in err and "Traceback" not in err


def test_unknown_name_and_non_sop_name(capsys, tmp_path):
    program = write(tmp_path, "x = 3;\n")
    code, _, err = run_cli(capsys, "run", program, "--name", "nope", "--input", "a")
    assert code == 1 and "defines no name 'nope'" in err
    code, _, err = run_cli(capsys, "run", program, "--name", "x", "--input", "a")
    assert code == 1 and "'x' is an atom, not an s-op or selector" in err
    listing = write(tmp_path, "l = [1];\n")
    code, _, err = run_cli(capsys, "run", listing, "--name", "l", "--input", "a")
    assert code == 1 and "'l' is a list, not an s-op or selector" in err



def test_nested_list_input_is_rejected(capsys, tmp_path):
    program = write(tmp_path, "y = tokens;\n")
    code, _, err = run_cli(capsys, "run", program, "--input", "[[1], 2]")
    assert code == 1 and "must be numbers, strings or booleans" in err


def test_usage_errors_exit_2(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "x.rasp"])  # neither --input nor --inputs
    assert exit_info.value.code == 2
    code, _, err = run_cli(capsys, "run", "--input", "a")  # no FILE and no --weights
    assert code == 2 and "a program FILE is required" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "x.rasp", "--input", "a", "--memory-limit", "lots"])
    assert exit_info.value.code == 2


def test_missing_file(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", str(tmp_path / "absent.rasp"), "--input", "a")
    assert code == 1 and "absent.rasp" in err


def test_memory_limit_refuses_before_work(capsys, tmp_path):
    program = write(tmp_path, "w = selector_width(select(indices, indices, <));\n")
    code, _, err = run_cli(capsys, "run", program, "--input", "x" * 400,
                           "--memory-limit", "64KiB")
    assert code == 1
    assert "resource limit" in err and "memory" in err.lower()


def test_analyse_table_and_json(capsys):
    code, out, _ = run_cli(capsys, "analyse", str(EXAMPLES / "reverse.rasp"), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["name"] == "reverse"
    assert report["layers"] == 2 and report["heads"] == [1, 1]
    code, out, _ = run_cli(capsys, "analyse", str(EXAMPLES / "histogram.rasp"))
    assert code == 0 and "layers: 1  heads: [2]" in out


def test_draw_writes_dot(capsys, tmp_path):
    target = tmp_path / "reverse.dot"
    code, out, _ = run_cli(capsys, "draw", str(EXAMPLES / "reverse.rasp"), "-o", str(target),
                           "--input", "abc")
    assert code == 0 and target.exists()
    assert "cluster_layer_2" in target.read_text()


def test_repl_session_checks_definitions_on_the_running_example():
    out = io.StringIO()
    lines = iter(['set example "hi"', "y = tokens_int + 1;", "z = tokens +", '"!";',
                  "z;", "y;", "exit", "never = 1;"])
    interpreter = ReplSession(output=out.write)
    session(interpreter, lambda prompt: next(lines, None), out)
    text = out.getvalue()
    assert "invalid literal for int()" in text  # y's definition fails on "hi" ...
    assert "Undefined variable: y" in text  # ... so y is not bound
    assert "[h!, i!]" in text  # the two-line definition of z ran
    with pytest.raises(RaspNameError, match="Undefined variable: never"):
        interpreter.lookup("never")  # nothing runs after exit


def test_console_script_and_module_entry_point(tmp_path):
    program = write(tmp_path, "shifted = indices + 1;\n")
    for command in (["rasp-sim"], [sys.executable, "-m", "rasp_sim"]):
        if command == ["rasp-sim"]:
            command = [str(Path(sys.executable).with_name("rasp-sim"))]
        result = subprocess.run([*command, "run", program, "--input", "ab"],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout == 'shifted("ab") = [1, 2] (ints)\n'


def test_token_conversion_error_is_located_where_the_program_reads_it(capsys, tmp_path):
    program = write(tmp_path, "y = 1;\nx = tokens_float * 2;\n")
    code, _, err = run_cli(capsys, "run", program, "--input", '[1, "a"]')
    assert code == 1
    assert err.startswith(f"{program}:2:5: runtime error: tokens_float of 'a'")


def test_several_inputs_after_one_flag(capsys):
    code, out, _ = run_cli(capsys, "run", str(EXAMPLES / "reverse.rasp"),
                           "--input", "ab", "[1, 2, 3]", "--input", "c")
    assert code == 0
    assert out.splitlines() == ['reverse("ab") = [b, a] (strings)',
                                "reverse([1, 2, 3]) = [3, 2, 1] (strings)",  # tokens is tokens_str
                                'reverse("c") = [c] (strings)']


def test_the_cli_imports_neither_jax_nor_tracr(tmp_path):
    # Heavy dependencies load inside the handlers that need them (compile, experiments),
    # so `rasp-sim run` starts without them.
    from heavy_imports import heavy_modules_after

    assert heavy_modules_after("import rasp_sim.cli; rasp_sim.cli.build_parser()", tmp_path) == []


# ---------------------------------------------------------------------------- --sandbox


@pytest.fixture
def escaping_program(tmp_path: Path) -> Path:
    """prog/main.rasp loads a file outside its folder."""
    (tmp_path / "outside.rasp").write_text("o = indices;\n")
    (tmp_path / "prog").mkdir()
    main_file = tmp_path / "prog" / "main.rasp"
    main_file.write_text('load "../outside";\nx = o;\n')
    return main_file


@pytest.mark.parametrize("command", [["run", "--input", "ab"], ["analyse"],
                                     ["draw", "-o", "x.dot"]])
def test_sandbox_option_confines_load_on_every_command(capsys, escaping_program, command,
                                                       monkeypatch):
    monkeypatch.chdir(escaping_program.parent)
    name, *rest = command
    assert run_cli(capsys, name, str(escaping_program), *rest)[0] == 0  # no sandbox: loads
    code, _, err = run_cli(capsys, name, str(escaping_program), *rest, "--sandbox")
    assert code == 1
    assert err.startswith(f"{escaping_program}:1:1: load error: --sandbox refuses to load "
                          f"'../outside': {escaping_program.parent / '../outside.rasp'} is "
                          f"outside {escaping_program.parent.resolve()} or ")


def test_repl_sandbox_is_the_file_folder_also_at_the_prompt(capsys, escaping_program,
                                                            monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO('load "../outside";\ny = 1;\n'))
    code, out, _ = run_cli(capsys, "repl", str(escaping_program), "--sandbox")
    assert code == 0
    assert out.count("load error: --sandbox refuses to load '../outside'") == 2
    assert "value: y =  1" in out  # the session went on


def test_compile_and_verify_take_the_sandbox_option(escaping_program):
    from rasp_sim.cli import build_parser
    from rasp_sim.cli.compile import load_sop
    from rasp_sim.base.errors import RaspLoadError

    for argv in (["compile", "p.rasp", "--name", "x", "--vocab", "a", "--max-len", "2"],
                 ["verify", "m.npz", "p.rasp", "--name", "x"]):
        parser = build_parser(argv[0])
        assert parser.parse_args([*argv, "--sandbox"]).sandbox is True
        assert parser.parse_args(argv).sandbox is False
    with pytest.raises(RaspLoadError, match="--sandbox refuses to load '../outside'"):
        load_sop(str(escaping_program), "x", sandbox=True)


def test_an_error_inside_the_library_is_reported_at_the_users_line(capsys):
    # sort's nodes are all built inside the standard library, so the evaluator's own
    # location is a library line; the user sees their statement, the library's as a note.
    code, _, err = run_cli(capsys, "run", str(EXAMPLES / "sort.rasp"), "--input", "abc")
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith(f"{EXAMPLES / 'sort.rasp'}:5:1: runtime error: tokens_int of 'a' "
                               "(str) failed")
    assert lines[0].endswith("on input 0 ('abc') (at <stdlib>:91:20, in a loaded library)")
    assert lines[1].strip() == "sorted = sort(tokens, tokens);"
    assert "  note: <stdlib>:91:20:" in lines
