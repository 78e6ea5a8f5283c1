"""Every `rasp-sim run` command documented in the construction examples runs as
documented (the singular-matrix one fails with the singular-matrix error)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rasp_sim.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MINE = ["transpose", "matmul", "softmax", "inverse", "universal_attention",
        "multihead_attention", "encoder", "match2", "dyck2"]
COMMANDS = [(name, line) for name in MINE
            for line in re.findall(r"^#\s+(rasp-sim run .*)$", (EXAMPLES / f"{name}.rasp").read_text(), re.M)]


@pytest.mark.parametrize("strict", [False, True], ids=["", "strict"])
@pytest.mark.parametrize("name,command", COMMANDS, ids=[c[1] for c in COMMANDS])
def test_documented_command(name, command, strict, capsys, monkeypatch):
    # the examples use no extension, so they also run under --strict (portable numerics)
    monkeypatch.chdir(EXAMPLES.parent)
    code = main(shlex.split(command)[1:] + (["--strict"] if strict else []))
    captured = capsys.readouterr()
    if "[1, 2, 3, 4, 5, 6, 7, 8, 9]" in command:  # the documented singular example
        assert code == 1 and "the matrix is singular" in captured.err
    else:
        assert code == 0, captured.err


def test_example_values(capsys, monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent)
    assert main(["run", "examples/matmul.rasp", "--input", "[1, 2, 3, 4, 5, 6, 1, 0, 0, 1, 1, 1]"]) == 0
    assert "[4.0, 5.0, 10.0, 11.0, 0, 0" in capsys.readouterr().out
    assert main(["run", "examples/inverse.rasp", "--exact", "--input", "[7, 8, 12, 10, 11, 9, 2, 4, 21]"]) == 0
    assert "13/3" in capsys.readouterr().out
