"""Atom-level resource limits: refused before the work starts, with location."""
from __future__ import annotations

import pytest

from rasp_sim.errors import RaspResourceError
from rasp_sim.interpreter import Interpreter
from rasp_sim.limits import MAX_COLLECTION_LENGTH


def run(text: str) -> Interpreter:
    interpreter = Interpreter(output=lambda line: None)
    interpreter.run_source(text, "limits.rasp")
    return interpreter


def test_huge_range_is_refused_with_location():
    with pytest.raises(RaspResourceError) as info:
        run("x = 1;\ny = range(10 ^ 9);\n")
    assert "range would have 1,000,000,000 elements" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (2, 5)


def test_range_at_the_limit_is_allowed():
    interpreter = run(f"y = range({MAX_COLLECTION_LENGTH});\n")
    assert len(interpreter.lookup("y")) == MAX_COLLECTION_LENGTH
