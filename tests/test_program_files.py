"""Reading program files (rasp_sim/base/program_files.py): files that are not UTF-8, cannot
be read, are not regular files or are too large give a located error, for a command's
FILE and for a `load`, never a traceback or a hang."""
from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rasp_sim.base import program_files
from rasp_sim.cli import main
from rasp_sim.base.errors import RaspResourceError

# A program whose second line holds a byte that is not UTF-8 after two characters that
# are (é is two bytes): the column counts characters, as every other column does.
PREFIX = 'x = indices;\ny = "é'
BAD_PROGRAM = PREFIX.encode("utf-8") + b'\xff";\n'
BAD_LINE = PREFIX.count("\n") + 1
BAD_COLUMN = len(PREFIX.split("\n")[-1]) + 1


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    """The exit code and what was printed (stderr, then stdout, where the REPL reports)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", [["run"], ["analyse"], ["draw"], ["repl"]])
def test_program_that_is_not_utf8_is_located_at_its_first_bad_byte(capsys, in_tmp, command,
                                                                  monkeypatch):
    (in_tmp / "bad.rasp").write_bytes(BAD_PROGRAM)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # the REPL's input: none
    extra = {"run": ["--input", "a"], "draw": ["-o", "out.dot"]}.get(command[0], [])
    code, err = run_cli(capsys, *command, "bad.rasp", *extra)
    assert code == (0 if command == ["repl"] else 1)  # the REPL reports it and goes on
    assert (f"bad.rasp:{BAD_LINE}:{BAD_COLUMN}: load error: not UTF-8 text: byte 0xff "
            "cannot be decoded (program files must be UTF-8)") in err
    assert "Traceback" not in err


def test_loaded_file_that_is_not_utf8_is_reported_at_the_load(capsys, in_tmp):
    (in_tmp / "bad.rasp").write_bytes(BAD_PROGRAM)
    (in_tmp / "main.rasp").write_text('x = indices;\nload "bad";\n')
    message = (f"load error: cannot load bad.rasp:{BAD_LINE}:{BAD_COLUMN}: not UTF-8 text: "
               "byte 0xff cannot be decoded (program files must be UTF-8)")
    code, err = run_cli(capsys, "run", "main.rasp", "--input", "a", "--strict-statements")
    assert code == 1
    assert err.splitlines()[:3] == [f"main.rasp:2:1: {message}", '    load "bad";',
                                    "    ^^^^^^^^^^^"]
    # x does not depend on the load: without --strict-statements, a warning
    code, err = run_cli(capsys, "run", "main.rasp", "--input", "a")
    assert code == 0
    assert err.splitlines()[0] == f"main.rasp:2:1: warning: {message}"


def test_missing_program(capsys, in_tmp):
    code, err = run_cli(capsys, "run", "absent.rasp", "--input", "a")
    assert code == 1
    assert err == ("absent.rasp: load error: cannot read it: "
                   f"{os.strerror(errno.ENOENT)}\n")


def test_unreadable_program_and_load(capsys, in_tmp, monkeypatch):
    """Permission is simulated: the tests may run as root, who may read anything."""
    (in_tmp / "secret.rasp").write_text("x = indices;\n")
    (in_tmp / "main.rasp").write_text('load "secret";\n')
    real_open = os.open

    def denying_open(path, flags, *args):
        if Path(path).name == "secret.rasp":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(program_files.os, "open", denying_open)
    code, err = run_cli(capsys, "run", "secret.rasp", "--input", "a")
    assert (code, err) == (1, f"secret.rasp: load error: cannot read it: "
                              f"{os.strerror(errno.EACCES)}\n")
    code, err = run_cli(capsys, "analyse", "main.rasp")
    assert code == 1  # the load fails as run's statements fail: reported, located
    assert err.splitlines()[0] == ("main.rasp:1:1: warning: load error: cannot load "
                                   f"secret.rasp: cannot read it: {os.strerror(errno.EACCES)}")


def test_a_directory_is_refused_as_program_and_as_load(capsys, in_tmp):
    (in_tmp / "folder.rasp").mkdir()
    code, err = run_cli(capsys, "run", "folder.rasp", "--input", "a")
    assert (code, err) == (1, "folder.rasp: load error: a directory, not a program file\n")
    (in_tmp / "main.rasp").write_text('load "folder";\n')
    code, err = run_cli(capsys, "run", "main.rasp", "--input", "a", "--strict-statements")
    assert code == 1
    assert err.splitlines()[0] == ("main.rasp:1:1: load error: cannot load folder.rasp: "
                                   "a directory, not a program file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(in_tmp):
    """Opening a FIFO for reading blocks until someone writes: the old reader hung.
    A subprocess with a timeout, so a regression fails instead of hanging the suite."""
    os.mkfifo(in_tmp / "pipe.rasp")
    (in_tmp / "main.rasp").write_text('load "pipe";\n')
    refusal = "not a regular file (a FIFO, socket or device): only regular files are read"
    for program, expected in [
        ("pipe.rasp", f"pipe.rasp: load error: {refusal}"),
        ("main.rasp", f"main.rasp:1:1: load error: cannot load pipe.rasp: {refusal}"),
    ]:
        result = subprocess.run([sys.executable, "-m", "rasp_sim", "run", program,
                                 "--input", "a", "--strict-statements"],
                                capture_output=True, text=True,
                                timeout=120, check=False)
        assert result.returncode == 1
        assert result.stderr.startswith(expected)


def test_program_over_the_size_limit_is_refused_before_reading(capsys, in_tmp, monkeypatch):
    big = in_tmp / "big.rasp"
    with big.open("wb") as stream:  # sparse: no disk used, and never read
        stream.truncate(program_files.MAX_PROGRAM_BYTES + 1)
    code, err = run_cli(capsys, "run", "big.rasp", "--input", "a")
    limit = program_files.MAX_PROGRAM_BYTES
    assert (code, err) == (1, f"big.rasp: resource limit: the file has {limit + 1:,} bytes, "
                              f"above the limit of {limit:,} bytes (10 MiB) on program files "
                              "(rasp_sim.base.program_files.MAX_PROGRAM_BYTES)\n")
    assert limit == 10 * 2**20  # the "10 MiB" the message and docs/cli.md state


def test_file_that_grows_past_the_limit_after_the_size_check(in_tmp, monkeypatch):
    (in_tmp / "grows.rasp").write_bytes(b"#" * 101)
    monkeypatch.setattr(program_files, "MAX_PROGRAM_BYTES", 100)
    real_fstat = os.fstat
    monkeypatch.setattr(program_files.os, "fstat",  # reports the size before it grew
                        lambda fd: os.stat_result((*real_fstat(fd)[:6], 10, *real_fstat(fd)[7:])))
    with pytest.raises(RaspResourceError, match="the file has more than 100 bytes"):
        program_files.read_program("grows.rasp")
