"""The Python API's per-call path (issue 37): `Program.run` on one input at a time keeps
the values that read no input between calls, `run` on a list gives exactly what
`run_batch` gives (as Python values), and the argument checks look at a list of inputs in
bulk. Timings are in benchmarks/interpreter.py (`per_call_rows`), not here."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rasp_sim
import rasp_sim.evaluation.evaluate as ev
from rasp_sim.base import api_arguments
from rasp_sim.base.errors import RaspTypeError
from rasp_sim.base.limits import MAX_INT_BITS
from rasp_sim.core import graph as g
from rasp_sim.evaluation.columns import python_rows

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# (file or source, name): string programs of the library and the examples
STRING_PROGRAMS = {
    "reverse": (EXAMPLES / "reverse.rasp", None),
    "hist": (EXAMPLES / "histogram.rasp", "hist"),
    "sort": ("sorted = sort(tokens, tokens);\n", None),
    "length": ("size = length;\n", None),
    "flip": ("flip = select(indices, length - indices - 1, ==);\n", None),
}


def _program(name: str, exact: bool = False) -> tuple[rasp_sim.Program, str | None]:
    where, sop = STRING_PROGRAMS[name]
    if isinstance(where, Path):
        return rasp_sim.load(where, exact=exact), sop
    return rasp_sim.parse(where, file=f"<{name}>", exact=exact), sop


def _typed(values: object) -> object:
    """Values with each atom's type beside it, so that 1 == 1.0 == True do not pass."""
    if isinstance(values, list):
        return [_typed(v) for v in values]
    return (type(values), values)


@pytest.fixture
def fresh_invariants(monkeypatch):
    monkeypatch.setattr(ev, "_INVARIANTS", ev._Invariants(256, 2**24))


def _counting_compute(monkeypatch) -> list[g.Node]:
    calls: list[g.Node] = []
    real = ev._compute

    def counted(node: g.Node, *args: object) -> object:
        calls.append(node)
        return real(node, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ev, "_compute", counted)
    return calls


def test_values_that_read_no_tokens_are_kept_between_calls(monkeypatch, fresh_invariants):
    program, _ = _program("reverse")
    root = program["reverse"]
    plan = ev._plan((root,))
    varying = [node for node, _ in plan.varying_steps]
    assert plan.invariant and varying  # reverse's flip reads no input; its aggregate does
    calls = _counting_compute(monkeypatch)
    first = program.run(["abcd"])
    assert len(calls) == len(plan.order)
    calls.clear()
    assert program.run(["wxyz"]) == [list("zyxw")] and first == [list("dcba")]
    assert calls == varying  # the second call at n = 4 computes only what reads the input
    calls.clear()
    program.run(["abcde"])  # another length: its own values
    assert len(calls) == len(plan.order)
    calls.clear()
    exact, _ = _program("reverse", exact=True)
    assert exact.run(["dcba"]) == [list("abcd")]  # exact mode: its own values
    assert len(calls) == len(plan.order)


def test_kept_values_are_read_only_and_bounded():
    kept = ev._Invariants(2, 1000)
    values = {key: {g.Indices(): np.arange(4)[None]} for key in "abc"}
    kept.put(("a",), values["a"], 10)
    kept.put(("b",), values["b"], 10)
    assert all(not v.flags.writeable for v in values["a"].values())
    assert kept.get(("a",)) is values["a"]  # used last: "b" goes first
    kept.put(("c",), values["c"], 10)
    assert kept.get(("b",)) is None and kept.get(("a",)) is values["a"]
    kept.put(("d",), {}, 1001)  # above the budget alone: not kept
    assert kept.get(("d",)) is None
    kept.put(("e",), {}, 995)  # the budget holds it only without the others
    assert kept.get(("e",)) is not None
    assert kept.get(("a",)) is None and kept.get(("c",)) is None


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(1, 6), st.data())
def test_python_rows_is_tolist(rows, n, data):
    # characters, NUL (which a U1 element reads back as "") and beyond the BMP included
    alphabet = st.sampled_from(["a", "b", "\0", "é", "\U0001F600"])
    cells = [[data.draw(alphabet) for _ in range(n)] for _ in range(rows)]
    column = np.array(cells, dtype="U1").reshape(rows, n)
    assert _typed(python_rows(column)) == _typed(column.tolist())
    assert _typed(python_rows(column[:, ::-1])) == _typed(column[:, ::-1].tolist())


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(STRING_PROGRAMS)), st.booleans(), st.integers(1, 7),
       st.integers(1, 24), st.data())
def test_run_gives_run_batchs_values_on_lists_arrays_and_one_input_at_a_time(
        name, exact, n, size, data):
    program, sop = _program(name, exact)
    word = st.text(st.sampled_from("abcé"), min_size=n, max_size=n)
    inputs = [data.draw(word) for _ in range(size)]
    characters = np.array([list(x) for x in inputs], dtype="U1")
    on_list = program.run(inputs, sop)
    assert _typed(on_list) == _typed([program.run([x], sop)[0] for x in inputs])
    assert _typed(on_list) == _typed(program.run(characters, sop))
    assert _typed(on_list) == _typed(program.run_batch(inputs, sop).tolist())
    batch = program.run_batch(characters, sop)
    assert batch.dtype == program.run_batch(inputs, sop).dtype
    assert _typed(on_list) == _typed(batch.tolist())


def test_run_on_int_rows_gives_run_batchs_typed_values():
    program = rasp_sim.load(EXAMPLES / "sort.rasp")
    rows = np.random.default_rng(3).integers(-5, 5, (20, 6))
    expected = program.run_batch(rows).tolist()
    assert _typed(program.run(rows.tolist())) == _typed(expected)
    assert _typed(program.run(rows)) == _typed(expected)
    assert _typed([program.run([r])[0] for r in rows.tolist()]) == _typed(expected)


def test_a_list_of_inputs_is_checked_in_bulk(monkeypatch):
    looked_at: list[int] = []
    real = api_arguments.one_input
    monkeypatch.setattr(api_arguments, "one_input",
                        lambda function, x, index=0: (looked_at.append(index),
                                                      real(function, x, index))[1])
    strings = ["abc"] * 1000
    assert api_arguments.checked_inputs("run", strings) is strings
    assert api_arguments.checked_inputs("run", [[1, -2]] * 500 + [(3, 4)]) is not None
    assert api_arguments.checked_inputs("run", [[1.5, True]] * 500 + [("a", 2.0)]) is not None
    characters = np.array([list("abc")] * 100)
    assert api_arguments.checked_inputs("run", characters) is characters  # not its rows
    assert looked_at == []
    # a wrong input is still named, by its position
    with pytest.raises(RaspTypeError, match="run: input 2 element 1 is object"):
        api_arguments.checked_inputs("run", [[1], [2], [3, object()]])
    with pytest.raises(RaspTypeError, match="input 1 element 0 has 1,000,001 bits"):
        api_arguments.checked_inputs("run", [[1], [-(2**MAX_INT_BITS)]])
    with pytest.raises(RaspTypeError, match="input 1 is not a sequence"):
        api_arguments.checked_inputs("run", ["ab", 3])
