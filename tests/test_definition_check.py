"""The incremental definition check must agree with evaluating each node from scratch:
the same values (and element types), or the same error."""
from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rasp_sim.core import graph
from rasp_sim.language.definition_check import DefinitionCheck
from rasp_sim.base.errors import RaspError
from rasp_sim.evaluation.evaluate import evaluate
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.language.repl_session import ReplSession
from rasp_sim.language.parser import parse

from program_strategy import programs

EXAMPLES = st.one_of(
    st.text(alphabet="ab1 ", min_size=1, max_size=5),
    st.lists(st.integers(-3, 3), min_size=1, max_size=5),
)


def _outcome(compute) -> Any:
    try:
        values = compute()
    except RaspError as error:
        return ("error", type(error), error.message)
    return ("ok", values, repr([[type(v) for v in row] if isinstance(row, list) else type(row) for row in values]))


def _built_nodes(text: str) -> list[graph.Node]:
    interpreter = Interpreter()
    try:
        program = parse(text, "p.rasp")
    except RaspError:
        return []
    for statement in program.statements:
        try:
            interpreter.execute(statement)
        except RaspError:
            pass
    roots = [v for v in interpreter.top.variables.values() if isinstance(v, (graph.SOp, graph.Selector))]
    return list(graph.ancestors(roots))


def _assert_agree(nodes: list[graph.Node], example: Any, rng: random.Random, shuffle: bool) -> None:
    """Check the nodes one by one, children first (the REPL's order) or shuffled."""
    if shuffle:
        rng.shuffle(nodes)
    check = DefinitionCheck(exact=False)
    for node in nodes:
        incremental = _outcome(lambda: check.check([(node, node.span)], example)[0])
        assert incremental == _outcome(lambda: evaluate([node], [example])[0][0])


@settings(max_examples=100, deadline=None)
@given(programs(max_statements=8), EXAMPLES, st.randoms(use_true_random=False), st.booleans())
def test_incremental_check_agrees_with_plain_evaluation(
    text: str, example: Any, rng: random.Random, shuffle: bool
) -> None:
    _assert_agree(_built_nodes(text), example, rng, shuffle)


# Chains of library calls and operators over int s-ops: mostly valid, deep graphs.
_STEPS = (
    "sort({a}, {b})", "{a} + {b}", "selector_width(select({a}, {b}, <))",
    "aggregate(select({a}, {b}, ==), {c})", "{a}[0]", "{a}[-1]", "shift({a}, 1, 0)",
    "count({a}, 1)", "{a} / {b}", "{a} if {b} > 0 else {c}", "round(average({a}))",
    "max({a}, {b})", "{a} % 3", "load_from_location({a}, {b})",
)


@st.composite
def chains(draw) -> str:
    names = ["tokens_int", "indices", "length"]
    lines = []
    for k in range(draw(st.integers(1, 10))):
        step = draw(st.sampled_from(_STEPS))
        a, b, c = (draw(st.sampled_from(names)) for _ in range(3))
        lines.append(f"v{k} = {step.format(a=a, b=b, c=c)};")
        names.append(f"v{k}")
    return "\n".join(lines)


@settings(max_examples=100, deadline=None)
@given(chains(), st.lists(st.integers(-3, 3), min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_incremental_check_agrees_on_library_chains(text: str, example: list, rng: random.Random) -> None:
    _assert_agree(_built_nodes(text), example, rng, rng.random() < 0.3)


def test_known_values_are_reused_and_reset_with_the_example() -> None:
    repl = ReplSession(output=lambda line: None)
    interpreter = repl.interpreter
    interpreter.run_source("set example [3, 1, 2]\ns = sort(tokens_int, tokens_int);", "c.rasp")
    check = repl._main_check
    node = interpreter.lookup("s")
    assert check.values(node, interpreter.sop_example) == [1, 2, 3]
    # a new example object starts afresh
    assert check.values(node, [2, 1]) == [1, 2]
