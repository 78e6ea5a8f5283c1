"""The one-line stage display of long commands (`compile`): on a terminal it names the
step and its elapsed time, and erases itself; elsewhere it writes nothing."""
from __future__ import annotations

import io

from rasp_sim.cli.stages import StageLine


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_each_stage_then_a_clean_line() -> None:
    stream = Terminal()
    with StageLine("compile", stream) as line:
        line.stage("lowering")
        line.stage("assembling the weights")
    text = stream.getvalue()
    assert "\rcompile: lowering (0 s)" in text
    assert "\rcompile: assembling the weights (0 s)" in text
    assert text.endswith("\r" + " " * len("compile: assembling the weights (0 s)") + "\r")


def test_a_log_gets_no_progress_frames() -> None:
    stream = io.StringIO()
    with StageLine("compile", stream) as line:
        line.stage("lowering")
    assert stream.getvalue() == ""


def test_compile_writes_no_frames_into_a_log(tmp_path, capsys) -> None:
    from pathlib import Path

    import pytest

    pytest.importorskip("tracr")
    from rasp_sim.cli import main

    example = Path(__file__).resolve().parent.parent / "examples" / "compile" / "reverse.rasp"
    assert main(["compile", str(example), "--name", "reversed", "--vocab", "a,b",
                 "--max-len", "3", "-o", str(tmp_path / "r.npz")]) == 0
    assert "\r" not in capsys.readouterr().err
