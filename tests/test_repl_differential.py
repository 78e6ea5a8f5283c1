"""Opt-in differential check of the REPL's printing against the original RASP's REPL.

Runs only when both are set (as tests/test_parser_differential.py):
    RASP_ORIGINAL         a checkout of tech-srl/RASP (docs/language.md: commit 61dde62)
    RASP_ORIGINAL_PYTHON  a Python with antlr4-python3-runtime 4.9.x and termcolor
Each session is typed into the original's REPL (`python -m RASP_support`, in a folder
that holds the session's files and a link to the checkout's RASP_support, since the
original loads its library and files from the current folder) and into `rasp-sim repl`,
stdin piped in both; their transcripts must be equal byte for byte: banner, prompts and
all. The sessions print no errors, whose text is rasp-sim's own (the one deliberate
difference).
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rasp_sim.cli import main

ORIGINAL = os.environ.get("RASP_ORIGINAL")
ORIGINAL_PYTHON = os.environ.get("RASP_ORIGINAL_PYTHON")
pytestmark = pytest.mark.skipif(
    not (ORIGINAL and ORIGINAL_PYTHON),
    reason="set RASP_ORIGINAL and RASP_ORIGINAL_PYTHON to compare with the original REPL")

# (files the session can load, the text typed at the prompt)
SESSIONS = {
    "a loaded file prints bindings and public names only": (
        {"exprs": 'x = tokens;\ntokens;\n3+4;\n_y = 3;\n_y;\nout;\nx("ab");\nshow example\n'
                  "(tokens);\nindices;\nz = 5;\nz;\n"},
        'load "exprs";\nx;\n'),
    "a nested load prints in the order the statements run": (
        {"inner": "a = 1;\nb = 2;\nb = 3;\n",
         "outer": 'b = 0;\na = 1;\nload "inner";\na = 5;\nc = 3;\nc = 4;\n'},
        'load "outer";\n'),
    "unnamed selectors in containers": (
        {},
        'd = {"a": select(indices, indices, ==), "n": 1};\n'
        "l = [select(indices, indices, <) and select(indices, indices, ==), indices];\n"
        "def f(s) { return s; }\nm = [f(select(indices, indices, ==))];\n"
        "select(indices, indices, ==);\n"),
    "library functions": ({}, "count;\nselector_width;\naverage;\n"),
    "blank and comment lines, and prompts indented by def depth": (
        {},
        "\n# a comment\nx = 1;\n\ndef f(a) {\n  def g(b) {\n    return b;\n  }\n"
        "  return g(a) + 1;\n}\nf(indices);\n\n\n"),
    "s-ops named by their expressions": (
        {},
        "def f(x) { return x + 1; }\n"
        "[indices + 1, (indices + 1) * 2, -indices, not (tokens == \"a\")];\n"
        "[tokens_str, tokens, f(indices), indices + 1 + 2 + 3 + 4 + 5 + 6 + 7];\n"
        "[\"a\" in tokens, tokens in [\"a\"], indicator(tokens == \"a\"), "
        "round(indices / 2)];\n"
        "[indices > 1 and indices < 3, indices * 2 if indices > 1 else 3, indices ^ 2];\n"
        "l = [1, 2, 3, 4, 5];\n[indices[0], l[indices], tokens == tokens_str];\n"),
    "full seq display": (
        {},
        "full seq display on\nset example [1, 2, 2]\nx = tokens_int + 1;\nz = length;\n"
        "x([3, 3]);\nx([1, 2]);\nfull seq display off\nx([1, 2]);\n"),
    "exit prints no final line break": ({}, "x = 1;\nexit\ny = 2;\n"),
}

_PROMPTS = re.compile(r"^(?:>> |\.\. )+")


def original_transcript(folder: Path, text: str) -> str:
    """What the original prints with `text` piped into its REPL, run in `folder`."""
    (folder / "RASP_support").symlink_to(Path(ORIGINAL, "RASP_support").resolve())
    done = subprocess.run(
        [ORIGINAL_PYTHON, "-m", "RASP_support"], input=text, capture_output=True, text=True,
        cwd=folder, env={**os.environ, "ANSI_COLORS_DISABLED": "1", "NO_COLOR": "1"},
        timeout=120)
    return done.stdout


def original_lines(folder: Path, text: str) -> list[str]:
    """The original's printed lines without its banner, prompts and final line break."""
    lines = [_PROMPTS.sub("", line)
             for line in original_transcript(folder, text).splitlines()[2:]]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def our_transcript(folder: Path, text: str, monkeypatch: pytest.MonkeyPatch,
                   capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    capsys.readouterr()
    assert main(["repl"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", SESSIONS)
def test_the_repl_prints_what_the_original_prints(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    files, text = SESSIONS[name]
    for file, source in files.items():
        (tmp_path / f"{file}.rasp").write_text(source)
    ours = our_transcript(tmp_path, text, monkeypatch, capsys)
    assert ours == original_transcript(tmp_path, text)
