"""docs/python.md runs as written: its >>> examples as a doctest (outputs compared), and
its example test file under pytest, from the repository root as the page says."""
from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "python.md"

pytest.importorskip("tracr")  # the page compiles models


def test_every_example_of_the_page_gives_its_output(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(PAGE), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 20  # the page's examples were found
    assert result.failed == 0


def test_the_example_test_file_passes(tmp_path):
    blocks = re.findall(r"```python\n(# (test_\w+\.py)\n.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 1, "the page shows one user test file"
    text, file_name = blocks[0]
    (tmp_path / file_name).write_text(text)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / file_name)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
