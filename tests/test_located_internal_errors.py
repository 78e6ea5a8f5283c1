"""Internal errors of issue 34 that are now located RaspErrors: a text input beside a list
input for tokens_float, 5,000 nested aggregates at compile, and a HOME that is unusable."""
from __future__ import annotations

from cli_helpers import run_cli, write


def test_a_text_input_beside_a_list_input_fails_as_a_conversion(capsys, tmp_path):
    path = write(tmp_path, "y = tokens_float * 2;\n")
    code, out, err = run_cli(capsys, "run", path, "--input", "ab", "[1, 2]")
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:1:5: runtime error: tokens_float of 'a' (str) failed: "
                          "could not convert string to float: 'a', on input 0 ('ab')")


def test_in_an_inputs_file_only_that_line_fails(capsys, tmp_path):
    path = write(tmp_path, "y = tokens_float * 2;\n")
    inputs = write(tmp_path, "ab\n[1, 2]\n[3]\n", "inputs.txt")
    code, out, err = run_cli(capsys, "run", path, "--inputs", inputs)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{path}:1:5: runtime error: tokens_float of 'a' (str)")
    assert lines[-2:] == ["y([1, 2]) = [2.0, 4.0] (floats)", "y([3]) = [6.0] (floats)"]
    assert "1 of 3 inputs failed" in err
