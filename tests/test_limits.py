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


@pytest.mark.parametrize("expression, fragment", [
    ('"ab" * (10 ^ 10)', "* on a string or list would have 20,000,000,000 elements"),
    ("[1, 2] + range(10) * 0", None),  # a small list op stays legal
    ("7 ^ (10 ^ 9)", "7 ^ 1000000000 would have more than 1,000,000 bits"),
    ("(2 ^ 900000) * (2 ^ 900000)", "would have more than 1,000,000 bits"),
])
def test_huge_atoms_are_refused_before_they_are_built(expression, fragment):
    text = f"x = {expression};\n"
    if fragment is None:
        run(text)
        return
    with pytest.raises(RaspResourceError) as info:
        run(text)
    assert fragment in info.value.message
    assert info.value.span.line == 1


def test_exact_mode_checks_rational_powers():
    interpreter = Interpreter(exact=True, output=lambda line: None)
    with pytest.raises(RaspResourceError):
        interpreter.run_source("x = (3 / 2) ^ (10 ^ 8);\n", "limits.rasp")
    interpreter.run_source("y = (3 / 2) ^ 3;\n", "limits.rasp")
    assert str(interpreter.lookup("y")) == "27/8"


def test_sequences_in_maps_obey_the_same_limit():
    from rasp_sim.evaluate import evaluate

    interpreter = run('s = tokens_int * 3;\nt = (tokens_int + 10) ^ (10 ^ 7);\n')
    assert evaluate([interpreter.lookup("s")], [[1, 2]])[0][0] == [3, 6]
    with pytest.raises(RaspResourceError):
        evaluate([interpreter.lookup("t")], [[1, 2]])
