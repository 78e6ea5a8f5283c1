"""Opt-in differential check of the REPL's printing against the original RASP's REPL.

Runs only when both are set (as tests/test_parser_differential.py):
    RASP_ORIGINAL         a checkout of tech-srl/RASP (LANGUAGE.md: commit 61dde62)
    RASP_ORIGINAL_PYTHON  a Python with antlr4-python3-runtime 4.9.x and termcolor
Each session is typed into the original's REPL (`python -m RASP_support`, in a folder
that holds the session's files and a link to the checkout's RASP_support, since the
original loads its library and files from the current folder) and into rasp-sim's
`session`; their printed lines must be equal once the original's banner and prompts are
removed. The sessions print no errors, whose text is rasp-sim's own.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path

import pytest

from rasp_sim.cli.repl import session
from rasp_sim.repl_session import ReplSession

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
    "library functions": ({}, "count;\nselector_width;\n"),
}

_PROMPTS = re.compile(r"^(?:>> |\.\. )+")


def original_lines(folder: Path, text: str) -> list[str]:
    (folder / "RASP_support").symlink_to(Path(ORIGINAL, "RASP_support").resolve())
    done = subprocess.run(
        [ORIGINAL_PYTHON, "-m", "RASP_support"], input=text, capture_output=True, text=True,
        cwd=folder, env={**os.environ, "ANSI_COLORS_DISABLED": "1", "NO_COLOR": "1"},
        timeout=120)
    lines = [_PROMPTS.sub("", line) for line in done.stdout.splitlines()[2:]]  # no banner
    while lines and not lines[-1]:  # the newline it prints at end of input
        lines.pop()
    return lines


def our_lines(folder: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.chdir(folder)
    out = io.StringIO()
    typed = iter(text.splitlines())
    session(ReplSession(output=out), lambda prompt: next(typed, None), out)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("name", SESSIONS)
def test_the_repl_prints_what_the_original_prints(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files, text = SESSIONS[name]
    for file, source in files.items():
        (tmp_path / f"{file}.rasp").write_text(source)
    assert our_lines(tmp_path, text, monkeypatch) == original_lines(tmp_path, text)
