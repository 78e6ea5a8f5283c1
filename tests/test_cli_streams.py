"""Output streams that fail (closed, full, a broken pipe, an encoding without the
characters), strict JSON for non-finite floats, and load names the file system refuses:
each ends with its own message and exit status, never an internal error (issue 22)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_helpers import run_cli, write


def _cli(tmp_path, *argv: str, env: dict | None = None, **streams) -> subprocess.CompletedProcess:
    program = write(tmp_path, "y = tokens;\n")
    return subprocess.run([sys.executable, "-m", "rasp_sim", "run", program, *argv],
                          env={**os.environ, **(env or {})}, timeout=60, **streams)


def test_closed_stdout_is_an_error_saying_so(tmp_path):
    done = _cli(tmp_path, "--input", "ab", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                close_fds=True, pass_fds=(), preexec_fn=lambda: os.close(1))
    assert done.returncode == 1
    assert done.stderr.decode() == "rasp-sim: cannot write the output: Bad file descriptor\n"


def test_a_full_stdout_is_an_error_saying_so(tmp_path):
    with open("/dev/full", "w") as full:
        done = _cli(tmp_path, "--input", "ab", stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 1
    assert done.stderr.decode() == "rasp-sim: cannot write the output: No space left on device\n"


def test_a_broken_pipe_ends_quietly(tmp_path):
    lines = tmp_path / "many.txt"
    lines.write_text("abc\n" * 100_000)
    reader = subprocess.Popen(["head", "-n", "1"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    done = _cli(tmp_path, "--inputs", str(lines), stdout=reader.stdin, stderr=subprocess.PIPE)
    reader.stdin.close()
    assert reader.stdout.read() == b'y("abc") = [a, b, c] (strings)\n'
    reader.wait()
    assert done.returncode == 0
    assert done.stderr == b""


@pytest.mark.parametrize("env, ending", [
    ({"PYTHONIOENCODING": "ascii"}, b"[\\xe9] (strings)\n"),
    # Python reads the C locale as UTF-8 (PEP 538, 540)
    ({"LC_ALL": "C", "LANG": "C"}, "[é] (strings)\n".encode()),
])
def test_non_ascii_output_is_encoded_safely_under_any_locale(tmp_path, env, ending):
    done = _cli(tmp_path, "--input", "é", env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(ending)


def test_json_output_is_strict_json_for_infinities_and_nan(tmp_path, capsys):
    program = write(tmp_path, "y = tokens_float * 1e308 * 10;\nz = y - y;\n")
    for name, expected in [("y", ["Infinity", "-Infinity", 0.0]), ("z", ["NaN", "NaN", 0.0])]:
        code, out, _ = run_cli(capsys, "run", program, "--name", name, "--input", "[1, -1, 0]",
                               "--json")
        assert code == 0
        record = json.loads(out, parse_constant=lambda word: pytest.fail(f"bare {word}"))
        assert record["output"] == expected


def test_a_load_name_with_a_nul_is_a_load_error(tmp_path, capsys):
    program = write(tmp_path, 'load "a\x00b";\n')
    code, _, err = run_cli(capsys, "run", program, "--input", "ab", "--sandbox")
    assert code == 1
    assert "load error: cannot load 'a\\x00b': a file name cannot contain a NUL" in err


@pytest.mark.parametrize("sandbox", [[], ["--sandbox"]])
def test_a_load_name_too_long_for_the_file_system_is_a_load_error(tmp_path, capsys, sandbox):
    program = write(tmp_path, f'load "{"a" * 5000}";\n')
    code, _, err = run_cli(capsys, "run", program, "--input", "ab", *sandbox)
    assert code == 1
    assert "(5,000 characters): File name too long" in err
    assert "internal error" not in err
