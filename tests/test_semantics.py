"""Atom-level value rules (docs/language.md): expectations are Python's own
behaviour and the language reference, written out by hand."""
from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rasp_sim.core import semantics as sem
from rasp_sim.base.errors import RaspRuntimeError, RaspTypeError


def same(a, b) -> bool:
    """Equal value and equal type (so 1 vs 1.0 vs True differ)."""
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------------------- binary


@pytest.mark.parametrize(
    "op, a, b, expected",
    [
        ("+", 1, 2, 3),
        ("-", 1, 2.5, -1.5),
        ("*", "ab", 2, "abab"),
        ("+", [1, 2], [3], [1, 2, 3]),
        ("+", True, 1, 2),
        ("/", 4, 2, 2.0),
        ("%", 7, -3, -2),
        ("%", -7, 3, 2),
        ("^", 2, -1, 0.5),
        ("^", 2, 10, 1024),
        ("==", 3, 3.0, True),
        ("!=", "a", 1, True),
        ("<", "ab", "b", True),
        (">=", 2, 2.0, True),
        ("and", 1, 2, 2),
        ("and", 0, "x", 0),
        ("or", 0, "x", "x"),
        ("or", [], False, False),
    ],
)
def test_binary_follows_python(op, a, b, expected):
    assert same(sem.binary(op, a, b), expected)


def test_negative_base_fractional_power_is_complex():
    result = sem.binary("^", -8, 0.5)
    assert isinstance(result, complex)
    assert result == pytest.approx(complex(0, math.sqrt(8)))


def test_type_error_names_operation_and_operands():
    with pytest.raises(RaspTypeError) as info:
        sem.binary("+", "a", 1)
    text = info.value.message
    assert "+" in text and "'a' (str)" in text and "1 (int)" in text
    assert info.value.span is None


@pytest.mark.parametrize("op, a, b", [("/", 1, 0), ("%", 5, 0), ("/", 1.5, 0.0), ("^", 0, -1)])
def test_division_by_zero_is_runtime_error(op, a, b):
    with pytest.raises(RaspRuntimeError, match="division by zero"):
        sem.binary(op, a, b)


def test_float_power_overflow_is_runtime_error():
    with pytest.raises(RaspRuntimeError, match="out of range"):
        sem.binary("^", 2.718, 1000.0)


def test_comparison_of_incomparable_types_is_type_error():
    with pytest.raises(RaspTypeError, match="cannot apply <"):
        sem.binary("<", "a", 1)


# -------------------------------------------------------------------------------- unary


@pytest.mark.parametrize(
    "op, x, expected",
    [
        ("not", [], True),
        ("not", "a", False),
        ("neg", True, -1),
        ("pos", True, 1),
        ("neg", 2.5, -2.5),
        ("round", 2.5, 2),
        ("round", 3.5, 4),
        ("round", -0.5, 0),
        ("round", True, 1),
        ("indicator", "x", 1),
        ("indicator", 0.0, 0),
        ("abs", -3, 3),
        ("sqrt", 4, 2.0),
        ("exp", 0, 1.0),
        ("log", 1, 0.0),
    ],
)
def test_unary_follows_python(op, x, expected):
    assert same(sem.unary(op, x), expected)


def test_round_is_bankers():
    assert [sem.rasp_round(x) for x in (0.5, 1.5, 2.5, -1.5)] == [0, 2, 2, -2]


@pytest.mark.parametrize(
    "op, x, error, text",
    [
        ("log", 0, RaspRuntimeError, "math domain error"),
        ("sqrt", -1.0, RaspRuntimeError, "math domain error"),
        ("exp", 1000.0, RaspRuntimeError, "out of range"),
        ("round", float("inf"), RaspRuntimeError, "out of range"),
        ("round", float("nan"), RaspRuntimeError, "round"),
        ("neg", "a", RaspTypeError, "cannot apply neg to 'a' (str)"),
    ],
)
def test_unary_errors(op, x, error, text):
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        sem.unary(op, x)


# ----------------------------------------------------------------------------- exact mode


def test_exact_division_gives_fractions():
    third = sem.binary("/", 1, 3, exact=True)
    assert same(third, Fraction(1, 3))
    assert sem.binary("*", third, 3, exact=True) == 1
    assert same(sem.binary("^", 2, -2, exact=True), Fraction(1, 4))
    assert same(sem.binary("^", Fraction(4, 9), Fraction(1, 2), exact=True), Fraction(2, 3))


def test_exact_mode_turns_floats_into_their_exact_value():
    assert sem.binary("+", 0.5, 1, exact=True) == Fraction(3, 2)
    assert sem.binary("+", 0.1, 0, exact=True) == Fraction(0.1)  # the binary value, not 1/10


@pytest.mark.parametrize(
    "op, x, expected",
    [("sqrt", Fraction(9, 4), Fraction(3, 2)), ("sqrt", 16, Fraction(4)), ("exp", 0, 1), ("log", 1, 0)],
)
def test_exact_maps_exact_when_rational(op, x, expected):
    assert sem.unary(op, x, exact=True) == expected


@pytest.mark.parametrize(
    "op, a", [("sqrt", 2), ("exp", Fraction(1, 2)), ("log", 2)]
)
def test_exact_maps_refuse_irrational_results(op, a):
    with pytest.raises(RaspTypeError, match="exact mode cannot represent"):
        sem.unary(op, a, exact=True)


def test_exact_power_refuses_irrational_results():
    with pytest.raises(RaspTypeError, match="exact mode cannot represent"):
        sem.binary("^", 2, Fraction(1, 2), exact=True)


@given(st.integers(0, 10**12), st.integers(1, 10**6))
def test_exact_sqrt_of_squares(num, den):
    assert sem.unary("sqrt", Fraction(num, den) ** 2, exact=True) == Fraction(num, den)


# ------------------------------------------------------------------------------ typing


@pytest.mark.parametrize(
    "values, label",
    [
        (["a", "b"], "string"),
        ([True, False], "bool"),
        ([1, 2], "int"),
        ([True, 2], "int"),
        ([1.5, 2.0], "float"),
        ([1, 2.5], "float"),
        ([True, 2.5], "float"),
        ([Fraction(1, 3), 1], "float"),
    ],
)
def test_sequence_type_table(values, label):
    assert sem.sequence_type(values) == label


@pytest.mark.parametrize("values", [["a", 1], ["a", True], [1.5, "b"]])
def test_mixed_sequence_is_rejected(values):
    with pytest.raises(RaspTypeError, match="attempted to create sequence with vals of different types"):
        sem.sequence_type(values)


@pytest.mark.parametrize("values", [[1, [2]], [complex(1, 1)], [None, 1]])
def test_illegal_sequence_values_are_rejected(values):
    with pytest.raises(RaspTypeError, match=r"illegal val types \(vals must be bool, float, int or string\)"):
        sem.sequence_type(values)


# --------------------------------------------------------------------------- aggregate


def test_aggregate_one_rules():
    assert same(sem.aggregate_one([], 7, [1, 2]), 7)
    assert same(sem.aggregate_one(["x"], 0, ["x", "y"]), "x")
    assert same(sem.aggregate_one([True], 0, [True, False]), True)
    assert same(sem.aggregate_one([3], 0, [3, 4]), 3)
    assert same(sem.aggregate_one([1, 2], 0, [1, 2]), 1.5)
    assert same(sem.aggregate_one([1, 2, 2], 0, [1, 2, 2], exact=True), Fraction(5, 3))
    assert same(sem.aggregate_one([1, 2, 2], 0, [1, 2, 2], reduction="sum"), 5)


@pytest.mark.parametrize("column", [[True, False, True], ["a", "b", "c"], [1, "a", 2]])
def test_averaging_non_numbers_fails(column):
    with pytest.raises(RaspRuntimeError, match="asked to average multiple values, but they are non-numbers"):
        sem.aggregate_one(column[:2], 0, column)


def test_aggregate_checks_the_whole_column():
    # the selected values are numbers, but the column is not
    with pytest.raises(RaspRuntimeError, match="non-numbers"):
        sem.aggregate_one([1, 2], 0, [1, 2, "x"])


def test_mean_of_huge_ints_overflows():
    with pytest.raises(RaspRuntimeError, match="out of range"):
        sem.aggregate_one([10**400, 10**400], 0, [10**400, 10**400])


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=2, max_size=20))
def test_mean_is_left_to_right_sum_times_one_over_count(values):
    expected = 0  # Python's sum starts from the int 0
    for v in values:
        expected = expected + v
    assert sem.aggregate_one(values, 0, values) == expected * 1.0 / len(values)


@given(st.lists(st.fractions(max_denominator=50), min_size=2, max_size=20))
def test_exact_mean_is_the_rational_mean(values):
    total = Fraction(0)
    for v in values:
        total += v
    assert sem.aggregate_one(values, 0, values, exact=True) == total / len(values)


# ------------------------------------------------------------------------------- tokens


@pytest.mark.parametrize(
    "kind, x, expected",
    [
        ("str", 5, "5"),
        ("int", "7", 7),
        ("int", 2.9, 2),
        ("float", "1.5", 1.5),
        ("bool", "0", True),
        ("bool", 0, False),
        ("asis", [1], [1]),
    ],
)
def test_convert_token(kind, x, expected):
    assert same(sem.convert_token(kind, x), expected)


@pytest.mark.parametrize("kind, x", [("int", "1.5"), ("int", "h"), ("float", "h")])
def test_convert_token_failures_are_runtime_errors(kind, x):
    with pytest.raises(RaspRuntimeError, match=f"tokens_{kind} of '{x}'"):
        sem.convert_token(kind, x)


def test_convert_token_exact_floats():
    assert same(sem.convert_token("float", "0.5", exact=True), Fraction(1, 2))


# ------------------------------------------------------------------------ map helpers


def test_sop_logic_always_bool():
    assert same(sem.sop_logic("and", 1, 2), True)
    assert same(sem.sop_logic("or", 0, ""), False)


def test_index_and_member():
    assert sem.index([10, 20, 30], -1) == 30
    assert sem.index("abc", 1) == "b"
    assert sem.index({1: "one"}, 1.0) == "one"
    assert sem.member(1, [1.0, "a"]) is True
    with pytest.raises(RaspTypeError, match="index 5 out of range for list of length 2"):
        sem.index([1, 2], 5)
    with pytest.raises(RaspTypeError, match=r"index \[ 'k' \] not in dict."):
        sem.index({"a": 1}, "k")
    with pytest.raises(RaspTypeError, match="indices must be ints"):
        sem.index([1, 2], 1.5)
