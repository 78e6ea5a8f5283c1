"""File arguments that must be regular files are checked before they are opened (a FIFO
blocked every loader but the program reader), and the inputs reader bounds its lines and
ignores a UTF-8 byte order mark (issue 22)."""
from __future__ import annotations

import os

import pytest
from cli_helpers import run_cli, write

from rasp_sim.cli.inputs import MAX_INPUT_LINE_BYTES
from rasp_sim.cli.universal import _load_embedding
from rasp_sim.base.errors import RaspLoadError

NOT_REGULAR = "not a regular file (a FIFO, socket or device): only regular files"


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize("argv, what", [
    (["run", "PROGRAM", "--inputs", "FIFO"], "inputs files"),
    (["run", "--weights", "FIFO", "--input", "ab"], "weights files"),
    (["verify", "FIFO", "PROGRAM", "--name", "y"], "weights files"),
    (["verify", "FIFO", "FIFO", "--name", "y"], "program files"),  # the program first
    (["universal", "verify", "--ut", "FIFO", "FIFO"], "weights files"),
])
def test_a_fifo_is_refused_before_it_is_opened(tmp_path, capsys, fifo, argv, what):
    program = write(tmp_path, "y = tokens;\n")
    argv = [{"FIFO": fifo, "PROGRAM": program}.get(arg, arg) for arg in argv]
    code, _, err = run_cli(capsys, *argv)
    assert code == 1
    assert "load error: " in err and f"{NOT_REGULAR} are read as {what}" in err


def test_an_embedding_fifo_is_refused_before_it_is_opened(fifo):
    with pytest.raises(RaspLoadError, match="only regular files are read as embedding files"):
        _load_embedding(fifo, None)


def test_an_inputs_file_with_a_byte_order_mark_reads_its_first_input_without_it(tmp_path,
                                                                                  capsys):
    program = write(tmp_path, "y = tokens;\n")
    inputs = tmp_path / "inputs.txt"
    inputs.write_bytes(b"\xef\xbb\xbfab\ncd\n")
    code, out, _ = run_cli(capsys, "run", program, "--inputs", str(inputs))
    assert code == 0
    assert out.splitlines() == ['y("ab") = [a, b] (strings)', 'y("cd") = [c, d] (strings)']


def test_an_inputs_line_past_the_limit_is_refused_where_it_starts(tmp_path, capsys):
    program = write(tmp_path, "y = tokens;\n")
    inputs = tmp_path / "inputs.txt"
    inputs.write_bytes(b"ab\n" + b"x" * (MAX_INPUT_LINE_BYTES + 1) + b"\n")
    code, _, err = run_cli(capsys, "run", program, "--inputs", str(inputs))
    assert code == 1
    assert err.startswith(f"{inputs}:2:1: resource limit: inputs file line 2 has "
                          f"{MAX_INPUT_LINE_BYTES + 1:,} bytes, above the limit")
