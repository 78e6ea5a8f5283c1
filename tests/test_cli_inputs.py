"""`rasp-sim run` inputs: per-input errors in --inputs files, --fail-fast, unreadable and
oversized files, nesting, big integers and exact decimals."""
from __future__ import annotations

import io
import json
import os
from fractions import Fraction
from pathlib import Path

import pytest

from cli_helpers import run_cli, write
from rasp_sim.cli import main
from rasp_sim.cli.repl import session
from rasp_sim.evaluation.evaluate import evaluate
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.language.repl_session import ReplSession
from rasp_sim.base.limits import MAX_INT_BITS, MAX_INT_DIGITS

DIVIDE = "x = 6 / (tokens_int - 1);\n"




def expected_values(program: str, inputs: list) -> list:
    """The oracle: the engine's values of the program's last s-op, input by input."""
    interpreter = Interpreter()
    interpreter.run_file(program)
    node = interpreter.lookup(interpreter.last_assigned_name)
    return [evaluate([node], [x])[0][0] for x in inputs]


# --------------------------------------------------------------- per-input errors


def test_inputs_file_reports_each_failure_in_place_and_runs_the_rest(capsys, tmp_path):
    program = write(tmp_path, DIVIDE)
    lines = ["[2, 3]", "[1, 2]", "[4, 5", "", "[[1]]", "abc", "[3]"]
    inputs = write(tmp_path, "\n".join(lines) + "\n", "inputs.txt")
    code, out, err = run_cli(capsys, "run", program, "--inputs", inputs)
    assert code == 1
    good = expected_values(program, [[2, 3], [3]])
    assert out.splitlines() == [
        f"x([2, 3]) = {good[0]} (floats)",
        f"{program}:1:5: runtime error: division by zero in 6 (int) / 0 (int), on input 1 "
        "([1, 2])",
        f"{inputs}:3:6: type error: input looks like a JSON list but is not valid JSON: "
        "Expecting ',' delimiter",
        f"{inputs}:5:2: type error: input element 0 is a list: sequence elements must be "
        "numbers, strings or booleans",
        f"{program}:1:10: runtime error: tokens_int of 'a' (str) failed: invalid literal for "
        "int() with base 10: 'a', on input 4 ('abc')",
        f"x([3]) = {good[1]} (floats)",
    ]
    assert err == ("rasp-sim: 4 of 6 inputs failed (each error is printed in place of its "
                   "input's output)\n")


def test_inputs_file_json_gives_error_objects(capsys, tmp_path):
    program = write(tmp_path, DIVIDE)
    inputs = write(tmp_path, "[2]\n[1]\n[1, 2\n", "inputs.txt")
    code, out, _ = run_cli(capsys, "run", program, "--inputs", inputs, "--json")
    assert code == 1
    first, second, third = map(json.loads, out.splitlines())
    assert first == {"input": [2], "output": expected_values(program, [[2]])[0],
                     "type": "floats"}
    assert second == {"input": [1], "error": f"{program}:1:5: runtime error: division by "
                      "zero in 6 (int) / 0 (int), on input 1 ([1])"}
    assert third == {"input": "[1, 2", "error": f"{inputs}:3:6: type error: input looks like "
                     "a JSON list but is not valid JSON: Expecting ',' delimiter"}


def test_failures_in_large_batches_are_found_and_named(capsys, tmp_path):
    # Several chunks (2048 inputs each); a failing chunk is split until each failing input
    # stands alone, and the others keep their values.
    program = write(tmp_path, DIVIDE)
    rows = [[2 + i % 7, 3] for i in range(5000)]
    for bad in (0, 2047, 2048, 4999):
        rows[bad] = [1, 2]
    inputs = write(tmp_path, "".join(json.dumps(r) + "\n" for r in rows), "inputs.txt")
    code, out, err = run_cli(capsys, "run", program, "--inputs", inputs, "--json")
    assert code == 1 and "4 of 5,000 inputs failed" in err
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["input"] for r in results] == rows
    failed = [i for i, r in enumerate(results) if "error" in r]
    assert failed == [0, 2047, 2048, 4999]
    for i in failed:
        assert results[i]["error"].endswith(f"on input {i} ([1, 2])")
    good = [i for i in range(len(rows)) if i not in failed]
    assert [results[i]["output"] for i in good] == expected_values(program, [rows[i] for i in good])


@pytest.mark.parametrize("lines, first_error", [
    ("[2]\n[1]\n[3]\n", "{program}:1:5: runtime error: division by zero in 6 (int) / 0 "
                         "(int), on input 1 ([1])"),
    ("[2]\n[1]\n[1, 2\n", "{inputs}:3:6: type error: input looks like a JSON list but is "
                          "not valid JSON: Expecting ',' delimiter"),  # found before evaluating
])
def test_fail_fast_stops_at_the_first_error(capsys, tmp_path, lines, first_error):
    program = write(tmp_path, DIVIDE)
    inputs = write(tmp_path, lines, "inputs.txt")
    code, out, err = run_cli(capsys, "run", program, "--inputs", inputs, "--fail-fast")
    assert code == 1 and out == ""
    assert err.startswith(first_error.format(program=program, inputs=inputs))


def test_fail_fast_names_the_input_in_the_whole_batch(capsys, tmp_path):
    program = write(tmp_path, DIVIDE)
    rows = [[2]] * 3000
    rows[2500] = [1]
    inputs = write(tmp_path, "".join(json.dumps(r) + "\n" for r in rows), "inputs.txt")
    code, out, err = run_cli(capsys, "run", program, "--inputs", inputs, "--fail-fast")
    assert code == 1 and len(out.splitlines()) == 2048  # the first chunk was printed
    assert "on input 2500 ([1])" in err.splitlines()[0]


def test_resource_limit_fails_only_the_inputs_it_concerns(capsys, tmp_path):
    program = write(tmp_path, "w = selector_width(select(indices, indices, <));\n")
    inputs = write(tmp_path, "ab\n" + "x" * 400 + "\nabc\n", "inputs.txt")
    code, out, _ = run_cli(capsys, "run", program, "--inputs", inputs,
                           "--memory-limit", "64KiB")
    assert code == 1
    first, second, third = out.splitlines()
    assert first == 'w("ab") = [0, 1] (ints)' and third == 'w("abc") = [0, 1, 2] (ints)'
    assert second.startswith("resource limit: evaluating this program on one input of "
                             "length 400 needs about 172,800 bytes, above the memory limit "
                             "of 65,536 bytes")


# ----------------------------------------------------------- unreadable input files


def test_inputs_file_that_is_not_utf8_is_located(capsys, tmp_path):
    program = write(tmp_path, "y = tokens;\n")
    inputs = tmp_path / "inputs.txt"
    inputs.write_bytes(b"[1]\n[\"\xc3\xa9\", \xff]\n")
    code, out, err = run_cli(capsys, "run", program, "--inputs", str(inputs))
    assert code == 1 and out == ""
    assert err.startswith(f"{inputs}:2:7: load error: inputs file is not UTF-8 text: byte "
                          "0xff here is invalid (invalid start byte)")


def test_inputs_file_that_is_a_directory(capsys, tmp_path):
    program = write(tmp_path, "y = tokens;\n")
    code, _, err = run_cli(capsys, "run", program, "--inputs", str(tmp_path))
    assert code == 1
    assert err == f"load error: cannot read inputs file {tmp_path}: a directory, not an inputs file\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without permission")
def test_inputs_file_without_permission(capsys, tmp_path):
    program = write(tmp_path, "y = tokens;\n")
    inputs = write(tmp_path, "[1]\n", "inputs.txt")
    os.chmod(inputs, 0)
    code, _, err = run_cli(capsys, "run", program, "--inputs", inputs)
    assert code == 1
    assert err == f"load error: cannot read inputs file {inputs}: Permission denied\n"


def test_inputs_file_over_the_size_limit_is_refused_unread(capsys, tmp_path):
    program = write(tmp_path, "y = tokens;\n")
    inputs = write(tmp_path, "[1]\n" * 5000, "inputs.txt")  # 20,000 bytes
    code, _, err = run_cli(capsys, "run", program, "--inputs", inputs, "--memory-limit", "64KiB")
    assert code == 1
    assert err == (f"resource limit: inputs file {inputs} has 20,000 bytes, above the limit "
                   "of 8,192 bytes (an eighth of --memory-limit: parsed inputs take several "
                   "times the space of their text); raise --memory-limit\n")


# ------------------------------------------------------------------------ nesting


@pytest.mark.parametrize("depth", [2, 1000, 100_000])
def test_deeply_nested_input_is_a_located_error(capsys, tmp_path, depth):
    program = write(tmp_path, "y = tokens;\n")
    text = "[" * depth + "]" * depth
    code, _, err = run_cli(capsys, "run", program, "--input", text)
    assert code == 1
    assert err.startswith("<input 1>:1:2: type error: input element 0 is a list: sequence "
                          "elements must be numbers, strings or booleans")
    inputs = write(tmp_path, f"[1]\n[1, {text}]\n", "inputs.txt")
    code, out, _ = run_cli(capsys, "run", program, "--inputs", inputs)
    assert code == 1
    assert out.splitlines()[1] == (f"{inputs}:2:5: type error: input element 1 is a list: "
                                   "sequence elements must be numbers, strings or booleans")


def test_objects_and_null_elements_are_refused(capsys, tmp_path):
    program = write(tmp_path, "y = tokens;\n")
    code, _, err = run_cli(capsys, "run", program, "--input", '[1, {"a": [2]}]')
    assert code == 1 and err.startswith("<input 1>:1:5: type error: input element 1 is an "
                                        "object: sequence elements")
    code, _, err = run_cli(capsys, "run", program, "--input", "[1, null]")
    assert code == 1 and err.startswith("<input 1>:1:1: type error: input element 1 is null")


def test_repl_displays_a_list_nested_600_deep():
    out = io.StringIO()
    lines = iter(["def f(n) {", "  return [f(n - 1)] if n > 0 else 0;", "}",
                  "x = f(600);", "after = 1;"])
    session(ReplSession(output=out.write), lambda prompt: next(lines, None), out)
    text = out.getvalue()
    assert text.count("list:") == 600 and "Recursion" not in text
    assert "value: after =  1" in text  # the session went on


# ------------------------------------------------------------------- big integers


def test_big_integers_print_in_text_json_and_the_repl(capsys, tmp_path):
    program = write(tmp_path, "y = indices + 10 ^ 5000;\n")
    code, out, _ = run_cli(capsys, "run", program, "--input", "ab")
    assert code == 0
    assert out == f'y("ab") = [{10 ** 5000}, {10 ** 5000 + 1}] (ints)\n'
    code, out, _ = run_cli(capsys, "run", program, "--input", "ab", "--json")
    assert code == 0 and json.loads(out)["output"] == [10 ** 5000, 10 ** 5000 + 1]
    text = io.StringIO()
    lines = iter(["y = indices + 10 ^ 5000;", "z = 2 ^ 20000;", "after = 1;"])
    session(ReplSession(output=text.write), lambda prompt: next(lines, None), text)
    assert f"[{10 ** 5000}, {10 ** 5000 + 1}" in text.getvalue()
    assert f"value: z =  {2 ** 20000}" in text.getvalue()
    assert "value: after =  1" in text.getvalue()


def test_big_integer_inputs_up_to_the_limit(capsys, tmp_path):
    program = write(tmp_path, "y = tokens_int + 1;\n")
    largest = 2 ** MAX_INT_BITS - 1
    code, out, _ = run_cli(capsys, "run", program, "--input", f"[{largest}, 5]", "--json")
    assert code == 0 and json.loads(out)["output"] == [largest + 1, 6]
    too_big = 10 ** MAX_INT_DIGITS  # one digit more than the limit allows
    inputs = write(tmp_path, f"[1]\n[2, {too_big}]\n", "inputs.txt")
    code, out, _ = run_cli(capsys, "run", program, "--inputs", inputs)
    assert code == 1
    assert out.splitlines()[1] == (
        f"{inputs}:2:5: resource limit: an input integer of {MAX_INT_DIGITS + 1:,} digits is "
        f"above the limit of {MAX_INT_BITS:,} bits (rasp_sim.base.limits.MAX_INT_BITS)")


# ------------------------------------------------------------------- exact decimals


def test_exact_mode_reads_decimals_as_written(capsys, tmp_path):
    program = write(tmp_path, "y = tokens_float * 3;\n")
    code, out, _ = run_cli(capsys, "run", program, "--exact", "--input", "[0.1]")
    assert code == 0 and out == "y([1/10]) = [3/10] (floats)\n"
    code, out, _ = run_cli(capsys, "run", program, "--exact", "--json",
                           "--input", '[0.1, "1/3", 1e-3, 2, 2.5e2]')
    expected = [x * 3 for x in (Fraction("0.1"), Fraction(1, 3), Fraction("1e-3"), 2, 250)]
    assert code == 0
    assert json.loads(out)["output"] == [str(x) if x.denominator != 1 else int(x)
                                         for x in map(Fraction, expected)]


def test_rational_strings_stay_strings_in_float_mode(capsys, tmp_path):
    program = write(tmp_path, "y = tokens;\n")
    code, out, _ = run_cli(capsys, "run", program, "--json", "--input", '["1/3", "1/0"]')
    assert code == 0 and json.loads(out)["output"] == ["1/3", "1/0"]
    code, out, _ = run_cli(capsys, "run", program, "--exact", "--json",
                           "--input", '["1/3", "1/0"]')
    assert code == 0 and json.loads(out)["output"] == ["1/3", "1/0"]


def test_exact_decimal_beyond_the_integer_limit_is_refused(capsys, tmp_path):
    program = write(tmp_path, "y = tokens_float * 3;\n")
    code, _, err = run_cli(capsys, "run", program, "--exact", "--input", "[1, 1e-999999999]")
    assert code == 1
    assert err.startswith(f"<input 1>:1:5: resource limit: the exact value of 1e-999999999 "
                          f"has more than {MAX_INT_DIGITS:,} digits, above the limit of "
                          f"{MAX_INT_BITS:,} bits")
