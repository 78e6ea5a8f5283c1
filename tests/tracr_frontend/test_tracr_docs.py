"""docs/tracr.md runs as written: its >>> examples as a doctest, from the repository root."""
from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("tracr")


def test_every_example_of_the_tracr_page_gives_its_output(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "docs" / "tracr.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 20  # the page's examples were found
    assert result.failed == 0
