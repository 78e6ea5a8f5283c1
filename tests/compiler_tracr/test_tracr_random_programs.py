"""Random programs compiled and validated on their whole domain.

Each program of `compilable_programs` (maps, composite selects, means with any default,
categorical aggregates with numeric and boolean defaults, selector widths, means feeding
maps and selects) is compiled for a small vocabulary and length, so validation is
exhaustive; the property: refused with a reason and a location, or validated on every
input of the declared domain. A generator that mostly gets refused would prove nothing,
so at least half of the programs must validate.

Known miscompiles (all around BOS, the position a head attends to when its selection is
empty): the shapes in `KNOWN_BOS_SHAPES` are listed, with minimal programs, in the xfail
test at the end; a random program that fails validation AND has one of those shapes is
counted, not failed. Every other failure fails the test. Remove `_known_bos_shape` once
the lowering fixes land (the xfail test then passes).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterator

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("tracr")

from rasp_sim import graph as g  # noqa: E402
from rasp_sim.compiler.tracr_backend import patterns  # noqa: E402
from rasp_sim.compiler.tracr_backend.checks import Unsupported  # noqa: E402
from rasp_sim.compiler.tracr_backend.validate import domain_size  # noqa: E402

from program_strategy import compilable_programs  # noqa: E402

KNOWN_BOS_SHAPES = {
    "select_on_aggregate": "an aggregate (categorical, or a mean converted to categorical) "
                           "read by a select as keys or queries",
    "aggregate_of_aggregate": "an aggregate whose values are another aggregate",
    "map_of_aggregate": "an aggregate read by a map (besides the library's length and "
                        "selector_width)",
    "select_on_width_keys": "a select whose keys read a selector_width or length (the "
                            "BOS position's value can satisfy the predicate)",
}


def _aggregates_read(node: g.SOp) -> Iterator[g.Aggregate]:
    """The aggregates `node` reads through maps only; `length` and `selector_width`
    (lowered to tracr's SelectorWidth, not to an aggregate) are not counted."""
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if id(current) in seen or patterns.selector_width_of(current) is not None:
            continue
        seen.add(id(current))
        if isinstance(current, g.Aggregate):
            yield current
        elif isinstance(current, g.Map):
            stack.extend(current.inputs)


def _program_nodes(root: g.SOp) -> Iterator[g.Node]:
    """The program's nodes as the compiler sees them: `length` and `selector_width` are
    one node each (their library internals, maps of aggregates, are not visited)."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        width = patterns.selector_width_of(node) if isinstance(node, g.SOp) else None
        stack.extend((width,) if width is not None else node.children())


def _reads_width(node: g.SOp) -> bool:
    """Whether `node` is, or reads through maps, a selector_width or `length`."""
    stack = [node]
    while stack:
        current = stack.pop()
        if patterns.selector_width_of(current) is not None:
            return True
        if isinstance(current, g.Map):
            stack.extend(current.inputs)
    return False


def _known_bos_shape(root: g.SOp) -> str | None:
    """Which of KNOWN_BOS_SHAPES the program has, if any."""
    for node in _program_nodes(root):
        if isinstance(node, g.Select) and any(
                True for side in (node.keys, node.queries) for _ in _aggregates_read(side)):
            return "select_on_aggregate"
        if isinstance(node, g.Aggregate) and any(True for _ in _aggregates_read(node.values)):
            return "aggregate_of_aggregate"
        if isinstance(node, g.Map) and patterns.selector_width_of(node) is None and any(
                True for x in node.inputs for _ in _aggregates_read(x)):
            return "map_of_aggregate"
        if isinstance(node, g.Select) and _reads_width(node.keys):
            return "select_on_width_keys"
    return None


def _outcome(driver, program, text: str, size: int, max_len: int) -> str:
    """Compile and validate; 'refused', 'validated' or 'known BOS miscompile' (any
    other outcome fails)."""
    root = program(text, "y")
    try:
        result = driver.compile_program(root, list(range(size)), max_len, tracr_oracle=False)
    except Unsupported as refusal:
        assert refusal.reason and refusal.span is not None, refusal.format()
        event(f"refused: {refusal.construct.split(' ')[0]}")
        return "refused"
    report = result.report
    assert report.mode == "exhaustive" and report.inputs == domain_size(size, max_len)
    if report.ok:
        return "validated"
    assert report.disagreement is not None, f"{text}nothing compared"
    shape = _known_bos_shape(root)
    assert shape is not None, f"{text}vocab 0..{size - 1}, max-len {max_len}: " \
                              f"{report.disagreement.describe()}"
    event(f"known BOS miscompile: {shape}")
    return "known BOS miscompile"


def _check_random_programs(driver, program, examples: int, derandomize: bool) -> None:
    outcomes: Counter = Counter()

    @settings(max_examples=examples, deadline=None, derandomize=derandomize,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(compilable_programs(), st.integers(2, 4), st.integers(3, 5))
    def check(text: str, size: int, max_len: int) -> None:
        outcomes[_outcome(driver, program, text, size, max_len)] += 1

    check()
    # Counted here, not in a later test: under xdist another worker may run that one.
    assert outcomes["validated"] >= 0.5 * sum(outcomes.values()), outcomes


def test_random_programs_are_refused_or_validated_on_their_whole_domain(driver, program):
    # The same 100 programs every run, so that the default suite does not turn red on
    # a new miscompile by chance; the slow variant draws new ones each run.
    _check_random_programs(driver, program, 100, derandomize=True)


@pytest.mark.slow
def test_many_random_programs_are_refused_or_validated_on_their_whole_domain(driver, program):
    _check_random_programs(driver, program, 500, derandomize=False)


# Minimal programs of the known miscompiles, found by the random programs above
# (vocab 0..2, max-len 3; exhaustive validation). Non-strict: they pass once fixed.
BOS_MISCOMPILES = [
    pytest.param("m = aggregate(select(indices, indices, <=), x);\n"
                 "y = aggregate(select(m, x, <), x, 5);", id="mean-as-select-key"),
    pytest.param("c = aggregate(select(indices, indices - 1, ==), x);\n"
                 "y = selector_width(select(c, x, <));", id="categorical-aggregate-as-select-key"),
    pytest.param("c = aggregate(select(indices, indices + 1, ==), x, -1);\n"
                 "y = selector_width(select(c, c, >=));", id="categorical-default-as-select-key"),
    pytest.param("m = aggregate(select(x, x, <), x, 0.5);\n"
                 "y = selector_width(select(m, m, ==));", id="mean-with-default-as-select-key"),
    pytest.param("c = aggregate(select(indices, indices + 1, ==), x, 3);\n"
                 "y = aggregate(select(x, 0, <), c, 0.5);", id="mean-of-categorical-aggregate"),
    pytest.param("m = aggregate(select(x, 1, <), x, 0.5);\n"
                 "y = aggregate(select(indices, indices + 1, ==), m, 2);",
                 id="categorical-aggregate-of-mean"),
    pytest.param("m = aggregate(select(length, 1, !=), length, 0.5);\n"
                 "y = round(2 * m);", id="map-of-mean-with-default"),
    pytest.param("c = aggregate(select(indices, length, ==), length);\n"
                 "y = c - 1 + x;", id="map-of-never-selecting-categorical-aggregate"),
    pytest.param("w = selector_width(select(0, 0, ==));\n"
                 "y = selector_width(select(length, w, !=));", id="width-as-select-key"),
    pytest.param("w = selector_width(select(0, 0, ==));\n"
                 "v = selector_width(select(0, 0, ==) and select(w, 0, ==));\n"
                 "y = length == v;",
                 id="width-as-key-of-composite-select"),
]


@pytest.mark.xfail(strict=False, reason="BOS: an empty selection's default, or a value "
                   "written at BOS, reaches a later select, aggregate or map wrongly "
                   "(lowering fix pending on main)")
@pytest.mark.parametrize("body", BOS_MISCOMPILES)
def test_known_bos_miscompiles(driver, program, body):
    text = f"x = tokens_int;\n{body}\n"
    root = program(text, "y")
    assert _known_bos_shape(root) is not None  # the random test's exemption covers it
    result = driver.compile_program(root, [0, 1, 2], 3, tracr_oracle=False)
    assert result.report.ok, result.report.disagreement.describe()
