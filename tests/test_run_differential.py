"""Opt-in differential check of `rasp-sim run --example X` against the original: each
program of tests/run_statement_cases.py is typed into the original's REPL after
`set example X`, its target applied to each input, and the values it prints must be the
cases' `original` values, which tests/test_run_statements.py holds `run --example` to.

Runs only when RASP_ORIGINAL and RASP_ORIGINAL_PYTHON are set (see
tests/test_repl_differential.py, whose `original_lines` it uses).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from run_statement_cases import CASES
from test_repl_differential import ORIGINAL, ORIGINAL_PYTHON, original_lines

pytestmark = pytest.mark.skipif(
    not (ORIGINAL and ORIGINAL_PYTHON),
    reason="set RASP_ORIGINAL and RASP_ORIGINAL_PYTHON to compare with the original")

APPLIED = "\t =  "  # how the original prints an application's values


@pytest.mark.parametrize("name", CASES)
def test_the_original_gives_the_values_run_example_gives(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    for file, source in case.files.items():
        (tmp_path / f"{file}.rasp").write_text(source)
    # typed at the prompt, since `run` runs the program at the top level (a loaded file
    # may bind library names for itself, the top level may not)
    typed = f"set example {case.example}\n{case.program}" + "".join(
        f"{case.target}({x});\n" for x in case.inputs)
    lines = original_lines(tmp_path, typed)
    values = tuple(line[len(APPLIED):] for line in lines if line.startswith(APPLIED))
    assert values == case.original, "\n".join(lines)
