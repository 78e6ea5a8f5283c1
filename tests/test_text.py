"""Values shortened for messages (rasp_sim/base/text.py): the one helper every error, the REPL
display and the drawing use. The oracle for ordinary values is repr itself, cut."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rasp_sim.base.errors import RaspTypeError
from rasp_sim.base.text import short_repr, shorten

from .interp_helpers import run, sop

ATOMS = st.one_of(st.integers(-(2**100), 2**100), st.floats(), st.booleans(), st.text(max_size=5),
                  st.fractions(min_value=-(2**100), max_value=2**100, max_denominator=1000))
# (bounded so that every number prints: above 128 bits a number is described by its size)
VALUES = st.recursive(ATOMS, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.tuples(inner), st.tuples(inner, inner),
    st.dictionaries(st.one_of(st.integers(), st.text(max_size=3)), inner, max_size=4)),
    max_leaves=30)


@given(VALUES, st.integers(4, 80))
def test_short_repr_is_repr_cut_to_the_limit(value, limit):
    expected = repr(value)
    if len(expected) > limit:
        expected = expected[: limit - 3] + "..."
    assert short_repr(value, limit) == expected


def test_a_long_list_is_cut_without_printing_it_all():
    assert short_repr(list(range(10**6)), 20) == "[0, 1, 2, 3, 4, 5..."
    assert short_repr(np.arange(5), 40) == "[0, 1, 2, 3, 4]"  # NumPy as Python values


@pytest.mark.parametrize("value, text", [
    (2**20000, "an int of 20,001 bits"),
    ([-(2**200), "a"], "[an int of 201 bits, 'a']"),
    (Fraction(1, 3**100), "a fraction with a 1-bit numerator and a 159-bit denominator"),
    (2**127, repr(2**127)),  # 39 digits: still printed
], ids=["huge-int", "in-a-list", "fraction", "int-of-128-bits"])
def test_big_numbers_are_described_by_their_size(value, text):
    # repr of an int over 4300 digits raises ValueError in Python
    assert short_repr(value, 100) == text


def test_shorten():
    assert shorten("abcdef", 6) == "abcdef" and shorten("abcdefg", 6) == "abc..."


# Messages that printed a huge number crashed with Python's ValueError before.
def test_a_column_with_a_huge_int_names_it_by_size():
    with pytest.raises(RaspTypeError) as caught:
        sop('x = (2 ^ 20000) if indices == 0 else "a";', [1, 2])
    assert "vals of different types: [an int of 20,001 bits, 'a']" in caught.value.message


def test_an_exact_fraction_with_a_huge_denominator_is_described_by_size():
    with pytest.raises(RaspTypeError) as caught:
        run('x = (1 / 3) ^ 10000;\ny = x + "a";', exact=True)
    assert caught.value.message == (
        "cannot apply + to a fraction with a 1-bit numerator and a 15,850-bit denominator "
        "and 'a' (str)")


def test_the_original_style_messages_describe_a_huge_int_by_size():
    with pytest.raises(RaspTypeError) as caught:
        run("x = 2 ^ 20000;\ny = len(x);")
    assert caught.value.message == "attempting to compute length of non-list: an int of 20,001 bits"


def test_the_repl_prints_a_huge_int_in_full():
    # The REPL shows values, not messages: a 6,021-digit int prints whole (Python's
    # 4,300-digit str limit is raised to what the bit limit allows, limits.allow_int_text).
    interpreter = run("x = 2 ^ 20000;\nx;\ns = x + 0 * indices;", repl=True)
    shown = "\n".join(interpreter.lines)
    assert f"value: x =  {2 ** 20000}" in shown
    assert f"= [{2 ** 20000}]*5 (ints)" in shown
