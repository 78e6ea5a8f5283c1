"""`-o -`: pictures, pages and program text go to standard output; model files only to
files (rasp_sim/cli/output_file.py)."""
from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = "r = aggregate(select(indices, length - indices - 1, ==), tokens);\n"


def rasp_sim(*argv: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rasp_sim", *argv], capture_output=True,
                          cwd=cwd, timeout=120)


@pytest.mark.parametrize("format, start", [(None, b"<?xml"), ("png", b"\x89PNG\r\n\x1a\n"),
                                           ("pdf", b"%PDF"), ("dot", b"digraph rasp {")])
def test_draw_writes_the_picture_to_standard_output(tmp_path, format, start):
    (tmp_path / "p.rasp").write_text(PROGRAM)
    options = ["--format", format] if format else []
    done = rasp_sim("draw", "p.rasp", "-o", "-", *options, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(start)  # nothing printed before the picture
    assert b"wrote" not in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.rasp"]  # no file named "-"


def test_draw_format_belongs_to_standard_output(tmp_path):
    (tmp_path / "p.rasp").write_text(PROGRAM)
    done = rasp_sim("draw", "p.rasp", "-o", "p.svg", "--format", "png", cwd=tmp_path)
    assert done.returncode == 2
    assert b"--format is for -o -" in done.stderr


def test_from_tracr_writes_the_program_to_standard_output(tmp_path):
    done = rasp_sim("from-tracr", "tracr.compiler.lib:make_hist", "--vocab", "a,b",
                    "--max-len", "3", "-o", "-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"hist" in done.stdout and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["compile", "p.rasp", "--vocab", "a,b", "--max-len", "3"],
    ["universal", "target", "--dim", "4", "--heads", "1", "--layers", "1", "--seed", "0"],
])
def test_model_files_are_never_written_to_standard_output(tmp_path, argv):
    (tmp_path / "p.rasp").write_text(PROGRAM)
    done = rasp_sim(*argv, "-o", "-", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert b"-o -: this command writes a model file" in done.stderr
    assert done.stdout == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["p.rasp"]


def test_an_empty_output_name_is_a_usage_error(tmp_path):
    """`-o ''` made compile write its default NAME.npz, and draw name the current
    folder as the output."""
    (tmp_path / "p.rasp").write_text(PROGRAM)
    for argv in (["draw", "p.rasp"], ["compile", "p.rasp", "--vocab", "a", "--max-len", "2"]):
        done = rasp_sim(*argv, "-o", "", cwd=tmp_path)
        assert done.returncode == 2
        assert b"-o '': the output needs a file name" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.rasp"]
