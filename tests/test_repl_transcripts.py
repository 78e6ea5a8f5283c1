"""`rasp-sim repl` with stdin piped prints what the original prints, byte for byte apart
from error messages (rasp-sim's own format, the one deliberate difference): banner,
prompts (`>> `, `.. ` indented by def depth), displays and the final line break.

The transcripts in tests/repl_transcripts were written for this project, in the format of
the original's own transcript tests: `in/NAME.txt` is typed in, `tgt/NAME.txt` is what the
original (tech-srl/RASP 61dde62) printed for it, run in that folder (it loads
`rasps/...`). With RASP_ORIGINAL set, the original's own 21 transcript tests are checked
too (they stay in its checkout), and this project's targets are made again by the original
and compared with the stored ones.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rasp_sim.cli import main
from repl_transcript_compare import without_errors

HERE = Path(__file__).parent / "repl_transcripts"
NAMES = sorted(p.name for p in (HERE / "in").iterdir())
ORIGINAL = os.environ.get("RASP_ORIGINAL")
ORIGINAL_PYTHON = os.environ.get("RASP_ORIGINAL_PYTHON")
needs_original = pytest.mark.skipif(
    not (ORIGINAL and ORIGINAL_PYTHON),
    reason="set RASP_ORIGINAL and RASP_ORIGINAL_PYTHON to compare with the original")


def repl_transcript(folder: Path, text: str, monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    capsys.readouterr()
    main(["repl"])
    return capsys.readouterr().out


@pytest.mark.parametrize("name", NAMES)
def test_the_repl_prints_the_originals_transcript(name, monkeypatch, capsys):
    ours = repl_transcript(HERE, (HERE / "in" / name).read_text(), monkeypatch, capsys)
    target = (HERE / "tgt" / name).read_text()
    assert without_errors(ours, original=False) == without_errors(target, original=True)


def test_error_messages_are_the_only_difference_and_are_matched_one_for_one(
        monkeypatch, capsys):
    """The comparison is not blind: errors_and_loads.txt has 9 error messages, each
    one `<error>` line on both sides, and the rest is equal byte for byte."""
    name = "errors_and_loads.txt"
    ours = repl_transcript(HERE, (HERE / "in" / name).read_text(), monkeypatch, capsys)
    target = (HERE / "tgt" / name).read_text()
    assert ours != target
    assert sum("<error>" in line for line in without_errors(target, original=True)) == 9
    assert sum("<error>" in line for line in without_errors(ours, original=False)) == 9


def _original(folder: Path, stdin: Path) -> str:
    with open(stdin) as typed:
        return subprocess.run(
            [str(ORIGINAL_PYTHON), "-m", "RASP_support"], stdin=typed, capture_output=True,
            text=True, cwd=folder, timeout=300,
            env={**os.environ, "ANSI_COLORS_DISABLED": "1", "NO_COLOR": "1"}).stdout


@needs_original
def test_the_stored_targets_are_what_the_original_prints(tmp_path):
    (tmp_path / "RASP_support").symlink_to(Path(str(ORIGINAL), "RASP_support").resolve())
    (tmp_path / "rasps").symlink_to(HERE / "rasps")
    for name in NAMES:
        assert _original(tmp_path, HERE / "in" / name) == (HERE / "tgt" / name).read_text()


@needs_original
def test_the_originals_21_transcript_tests(monkeypatch, capsys):
    """Its tests/in run from its checkout, as its test_all.py runs them (its targets have
    the checkout's path replaced by `[current]` and one more line break)."""
    root = Path(str(ORIGINAL)).resolve()
    names = sorted(p.name for p in (root / "tests" / "in").iterdir())
    assert len(names) == 21
    differing = []
    for name in names:
        ours = repl_transcript(root, (root / "tests" / "in" / name).read_text(),
                               monkeypatch, capsys)
        ours = ours.replace(str(root), "[current]") + "\n"
        target = (root / "tests" / "tgt" / name).read_text()
        if without_errors(ours, original=False) != without_errors(target, original=True):
            differing.append(name)
    assert differing == []
