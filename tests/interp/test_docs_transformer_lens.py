"""docs/transformer_lens.md's Python examples run as shown (their asserts hold), in one
namespace from the repository root, in page order."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformer_lens")
pytest.importorskip("tracr")

pytestmark = pytest.mark.interp

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "transformer_lens.md"
PYTHON = re.compile(r"^( *)```python\n(.*?)^\1```", re.DOTALL | re.MULTILINE)


def test_examples_run(monkeypatch):
    blocks = [textwrap.dedent(code) for _, code in PYTHON.findall(PAGE.read_text())]
    assert len(blocks) >= 4
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 (the page's own code)
