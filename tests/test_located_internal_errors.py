"""Internal errors of issue 34 that are now located RaspErrors: a text input beside a list
input for tokens_float, 5,000 nested aggregates at compile, and a HOME that is unusable."""
from __future__ import annotations

import subprocess
import sys

from cli_helpers import run_cli, write

from rasp_sim.cli.repl import history_file
from rasp_sim.compiler.tracr_backend.checks import MAX_DEPTH


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


def _aggregate_chain(count: int) -> str:
    return "s = select(indices, indices, ==);\na0 = aggregate(s, tokens_int);\n" + "".join(
        f"a{i} = aggregate(s, a{i - 1});\n" for i in range(1, count))


def test_5000_nested_aggregates_are_refused_where_the_chain_passes_the_limit(capsys, tmp_path):
    path = write(tmp_path, _aggregate_chain(5000))
    code, out, err = run_cli(capsys, "compile", path, "--vocab", "1,2", "--max-len", "3",
                             "-o", str(tmp_path / "m.npz"))
    assert code == 1
    # a998 is 1,001 operations deep: 999 aggregates on the select on indices
    assert err.startswith(f"{path}:1000:8: resource limit: aggregate 'a998' ends a chain of "
                          f"{MAX_DEPTH + 1:,} operations")
    assert not (tmp_path / "m.npz").exists()


def test_a_chain_deeper_than_python_s_default_recursion_limit_compiles(capsys, tmp_path):
    # 400 maps deep: the translation's recursion ran out of Python's 1,000 frames
    path = write(tmp_path, "m0 = tokens_int + 1;\n" + "".join(
        f"m{i} = m{i - 1} * 2 + {i};\n" for i in range(1, 200)))
    code, out, err = run_cli(capsys, "compile", path, "--vocab", "1,2", "--max-len", "2",
                             "-o", str(tmp_path / "m.npz"))
    assert code == 0, err
    assert (tmp_path / "m.npz").exists()


# A uid with no passwd entry and no HOME: what a container may run rasp-sim as.
_NO_HOME = """
import os, pwd, sys
def missing(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")
pwd.getpwuid = missing
os.environ.pop("HOME", None)
from rasp_sim.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_repl_runs_without_a_home_folder(tmp_path):
    done = subprocess.run([sys.executable, "-c", _NO_HOME, "repl"], input="x = 1;\n",
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "value: x =  1" in done.stdout


def test_without_a_home_folder_no_history_is_kept(monkeypatch):
    import pwd

    def missing(uid: int) -> None:
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("RASP_SIM_HISTORY", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", missing)
    assert history_file() is None
    monkeypatch.setenv("RASP_SIM_HISTORY", "/tmp/rasp-history")
    assert str(history_file()) == "/tmp/rasp-history"
