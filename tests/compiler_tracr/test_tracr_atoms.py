"""The compiler's atom functions against the interpreter: one Map op on random atoms gives
the same value (and type), or the same error kind and message, through
`compiler.tracr_backend.atoms.atom_function` and through evaluating the Map on a length-1
input. Both read rasp_sim.core.atom_functions; this pins what each adds around it."""
from __future__ import annotations

import math
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tracr")

from rasp_sim.core import graph as g  # noqa: E402
from rasp_sim.core import semantics  # noqa: E402
from rasp_sim.core.atom_functions import BINARY_OPS, UNARY_OPS  # noqa: E402
from rasp_sim.compiler.tracr_backend.atoms import atom_function  # noqa: E402
from rasp_sim.base.errors import RaspError  # noqa: E402
from rasp_sim.evaluation.evaluate import evaluate_one  # noqa: E402

ATOMS = st.one_of(
    st.integers(-8, 8), st.integers(-(2**70), 2**70), st.booleans(),
    st.floats(-8, 8), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, -1.5, -0.0, 2.5]), st.text(alphabet="ab\0", max_size=2),
)
# Tables may hold values no sequence can (a list): such a lookup is a type error.
TABLES = st.one_of(
    st.lists(st.one_of(ATOMS, st.just([1])), max_size=4),
    st.text(alphabet="xy", max_size=3),
    st.dictionaries(st.one_of(st.integers(-3, 3), st.text(alphabet="ab", max_size=1)), ATOMS,
                    max_size=3),
)
INPUT = "x"  # the length-1 input the interpreter evaluates on


@st.composite
def maps(draw) -> tuple[str, tuple, tuple]:
    """(op, input atoms, params) of one Map."""
    op = draw(st.sampled_from([*BINARY_OPS, *UNARY_OPS, "and", "or", "where", "lookup",
                               "member", "assert"]))
    if op == "lookup":
        return op, (draw(ATOMS),), (draw(TABLES),)
    if op == "member":
        return op, (draw(ATOMS),), (tuple(draw(st.lists(ATOMS, max_size=3))),)
    if op == "assert":
        return op, (draw(ATOMS),), ("the condition fails", ())
    arity = 1 if op in UNARY_OPS else 3 if op == "where" else 2
    return op, tuple(draw(ATOMS) for _ in range(arity)), ()


def outcome(fn: Callable[[], Any]) -> tuple:
    try:
        return ("value", type(result := fn()), result)
    except RaspError as error:
        return ("error", type(error), error.message)


def interpreter_message(message: str, op: str) -> str:
    """The interpreter's message less what it adds to locate the failure in the batch:
    the input, and for an assert the position (an atom function has neither)."""
    suffix = f", on input 0 ({INPUT!r})"
    assert message.endswith(suffix), message
    message = message.removesuffix(suffix)
    return message.removesuffix(", at position 0") if op == "assert" else message


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maps())
def test_compiler_atom_functions_agree_with_the_interpreter(case):
    op, atoms, params = case
    node = g.Map(op=op, inputs=tuple(g.Full(value=a) for a in atoms), params=params)
    compiled = outcome(lambda: atom_function(node)(*atoms))
    interpreted = outcome(lambda: evaluate_one(node, INPUT)[0])
    assert compiled[:2] == interpreted[:2], (compiled, interpreted)
    if compiled[0] == "value":
        assert same_value(compiled[2], interpreted[2]), (compiled, interpreted)
    else:
        assert compiled[2] == interpreter_message(interpreted[2], op)


@pytest.mark.parametrize("op, atoms, params", [
    ("^", (-1, 0.5), ()),           # Python's pow gives a complex number
    ("lookup", (0,), ([[1], 2],)),  # the table holds a list
])
def test_values_no_sequence_holds_are_the_interpreters_type_error(op, atoms, params):
    node = g.Map(op=op, inputs=tuple(g.Full(value=a) for a in atoms), params=params)
    with pytest.raises(RaspError, match="attempted to create sequence with illegal val types"):
        atom_function(node)(*atoms)


@pytest.mark.parametrize("source, name, vocab", [
    # keys of mixed types: 1 < 0 is fine, "a" < 0 the interpreter's type error (a crash
    # of the compiler before the select used the table)
    ("s = select(tokens_asis, indices, <);\ny = aggregate(s, indices, 0);", "y", [1, "a"]),
    # the table's list is no sequence value (a crash before: an unhashable value)
    ("tokens = tokens_int;\nw = [[1], 2, 3][tokens];", "w", [0, 1, 2]),
    # (-1) ^ 0.5 is complex (before: an output direction for it)
    ("tokens = tokens_int;\nz = tokens ^ 0.5;", "z", [-1, 4]),
])
def test_partially_defined_maps_and_selects_compile(driver, program, source, name, vocab):
    # The model is free where the interpreter fails and agrees everywhere else.
    result = driver.compile_program(program(source, name), vocab, 3)
    assert result.report.ok and result.report.compared and result.report.undefined
    # a categorical output has one direction per value (a numerical one a single direction)
    outputs = [d.value for d in result.compiled.output_space.basis]
    assert not result.compiled.categorical_output or all(semantics.atom_type(v) is not None for v in outputs), outputs
