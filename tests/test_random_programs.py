"""Robustness: random programs either run or raise a RaspError, never anything else.

Each statement of a random program (tests/program_strategy.py) runs on its own, as the
REPL runs them, so one failing statement does not hide the rest; every s-op and
selector left bound is then evaluated on random inputs (and displayed, in the REPL).
"""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rasp_sim.core import graph
from rasp_sim.base.errors import RaspError
from rasp_sim.evaluation.evaluate import evaluate
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.language.repl_session import ReplSession
from rasp_sim.language.parser import parse

from program_strategy import programs

INPUTS = st.lists(
    st.one_of(
        st.text(alphabet="ab1 ", min_size=1, max_size=5),
        st.lists(st.integers(-3, 3), min_size=1, max_size=5),
        st.lists(st.sampled_from(["0.5", "1", "x", True]), min_size=1, max_size=5),
    ),
    min_size=1,
    max_size=3,
)


def _run_each(interpreter: Interpreter, text: str) -> None:
    try:
        program = parse(text, "random.rasp", strict=interpreter.strict)
    except RaspError:
        return
    for statement in program.statements:
        try:
            interpreter.execute(statement)
        except RaspError:
            pass
        if interpreter.exit_requested:
            return


def _evaluate_bindings(interpreter: Interpreter, inputs: list[Any]) -> None:
    for value in list(interpreter.top.variables.values()):
        if isinstance(value, (graph.SOp, graph.Selector)):
            try:
                evaluate([value], inputs, exact=interpreter.exact)
            except RaspError:
                pass


@settings(max_examples=200, deadline=None)
@given(programs(), INPUTS, st.booleans())
def test_run_mode_raises_only_rasp_errors(text: str, inputs: list[Any], exact: bool) -> None:
    interpreter = Interpreter(exact=exact)
    _run_each(interpreter, text)
    _evaluate_bindings(interpreter, inputs)


@settings(max_examples=200, deadline=None)
@given(programs(extensions=True, repl_statements=True), INPUTS)
def test_repl_mode_raises_only_rasp_errors(text: str, inputs: list[Any]) -> None:
    interpreter = ReplSession(output=lambda line: None).interpreter
    _run_each(interpreter, text)
    _evaluate_bindings(interpreter, inputs)
