"""Fused patterns (rasp_sim/evaluation/fusion.py) against the same graphs evaluated node by
node: the library's sort and selector_width, and gathers/scatters through selects on
indices, on random batches of ints (in and out of range, repeated), strings, floats and
mixed values; same atoms, types and errors."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rasp_sim import evaluate as ev
from rasp_sim.errors import RaspError
from rasp_sim.evaluation import fusion
from rasp_sim.interpreter import Interpreter

from .test_evaluate import same_rows

SOURCE = """
tokens = tokens_asis;
sorted = sort(tokens, tokens);
sorted_by_length_key = sort(tokens, length - tokens);
width = selector_width(select(tokens, tokens, ==));
width_of_shared = selector_width(select(indices, indices, <=));
at = aggregate(select(indices, tokens, ==), indices * 1.5, 0);
picked = aggregate(select(indices, tokens, ==), tokens, "none");
reversed = aggregate(select(indices, length - indices - 1, ==), tokens);
placed = aggregate(select(tokens, indices, ==), indices, -1);
placed_mean = aggregate(select(tokens, indices, ==), tokens, 0.5);
size = length;
before = select(tokens, tokens, <) or (select(tokens, tokens, ==) and select(indices, indices, <));
"""
NAMES = ["sorted", "sorted_by_length_key", "width", "width_of_shared", "at", "picked",
         "reversed", "placed", "placed_mean", "before", "before", "before", "size"]


def _roots() -> dict[str, Any]:
    interpreter = Interpreter()
    interpreter.run_source(SOURCE, "<fusion>")
    return {name: interpreter.lookup(name) for name in NAMES}


ROOTS = _roots()
ATOMS = {
    "int": st.integers(-2, 6),
    "str": st.sampled_from(["a", "b", "é", "ab", ""]),
    "float": st.sampled_from([0.0, 1.0, 2.5, -1.0, float("nan")]),
    "mixed": st.one_of(st.integers(-1, 4), st.sampled_from([1.0, 0.5])),
}


@st.composite
def batches(draw: Any) -> list[list[Any]]:
    atoms = ATOMS[draw(st.sampled_from(sorted(ATOMS)))]
    n = draw(st.integers(1, 6))
    return [[draw(atoms) for _ in range(n)] for _ in range(draw(st.integers(1, 4)))]


def _outcome(root: Any, batch: list) -> tuple[str, Any]:
    try:
        return "ok", [row[0] for row in ev.evaluate([root], batch)]
    except RaspError as error:
        return "error", (type(error), error.message)


def test_the_library_patterns_are_fused() -> None:
    kinds = {name: sorted(f.kind for f in ev._Plan((root,)).fused.values())
             for name, root in ROOTS.items()}
    assert kinds["sorted"] == ["before", "scatter", "width"]
    assert kinds["width"] == ["width"] and kinds["reversed"] == ["gather", "width"]
    assert kinds["placed"] == ["scatter"] and kinds["before"] == ["before"]
    assert kinds["size"] == ["width"]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), batches())
def test_fused_patterns_match_node_by_node_evaluation(name: str, batch: list) -> None:
    root = ROOTS[name]
    fused = _outcome(root, batch)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fusion, "find", lambda nodes: {})
        plain = _outcome(root, batch)
    assert fused[0] == plain[0], (fused, plain)
    if fused[0] == "ok":
        assert same_rows(fused[1], plain[1]), (fused[1], plain[1])
    else:
        assert fused[1] == plain[1]
