"""The standard library (docs/language.md): values against hand-computed expectations,
property tests against plain-Python references, and the original's costs (section 7)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rasp_sim.language.analyse import analyse

from .interp_helpers import on, run, sop

INTS = st.lists(st.integers(-4, 4), min_size=1, max_size=8)


def test_length() -> None:
    assert sop("x = length;", "hello") == [5] * 5
    assert sop("x = length;", "a") == [1]


def test_selector_width() -> None:
    assert sop("x = selector_width(select(indices, indices, <));", "abcd") == [0, 1, 2, 3]
    # `==` on tokens: "hello" has two l's; each other letter is alone.
    assert sop("x = selector_width(select(tokens, tokens, ==));", "hello") == [1, 1, 2, 2, 1]
    # a selector that selects nothing, and one that selects key 0 only
    assert sop("x = selector_width(select(indices, -1, ==));", "abc") == [0, 0, 0]
    assert sop("x = selector_width(select(indices, 0, ==));", "abc") == [1, 1, 1]


@settings(max_examples=60, deadline=None)
@given(INTS, st.sampled_from(["<", "<=", "==", ">", ">=", "!="]))
def test_selector_width_counts_selected_keys(xs: list[int], op: str) -> None:
    interpreter = run(f"x = selector_width(select(tokens_int, tokens_int, {op}));")
    matrix = on(run(f"x = select(tokens_int, tokens_int, {op});").lookup("x"), xs)
    assert on(interpreter.lookup("x"), xs) == [sum(row) for row in matrix]


def test_has_focus() -> None:
    assert sop("x = has_focus(select(indices, indices, <));", "abc") == [False, True, True]


def test_count_and_contains() -> None:
    assert sop('x = count(tokens, "l");', "hello") == [2] * 5
    assert sop('x = contains(tokens, "o");', "hello") == [True] * 5
    assert sop('x = contains(tokens, "z");', "hello") == [False] * 5


@settings(max_examples=60, deadline=None)
@given(INTS, st.integers(-4, 4))
def test_count_matches_list_count(xs: list[int], v: int) -> None:
    assert sop(f"x = count(tokens_int, {v});", xs) == [xs.count(v)] * len(xs)


def test_max_min() -> None:
    assert sop("x = max(tokens_int, 2);", [1, 3, 2]) == [2, 3, 2]
    assert sop("x = min(tokens_int, indices);", [1, 3, 0]) == [0, 1, 0]
    assert run("x = max(1, 4); y = min(1, 4);").lookup("x") == 4


def test_average() -> None:
    assert sop("x = average(tokens_int);", [1, 2, 6]) == [3.0] * 3


def test_load_from_location() -> None:
    assert sop("x = load_from_location(tokens, 2 - indices);", "abc") == ["c", "b", "a"]


def test_shift() -> None:
    assert sop('x = shift(tokens, 1, "_");', "abc") == ["_", "a", "b"]
    assert sop("x = shift(tokens_int, 2, 0);", [5, 6, 7, 8]) == [0, 0, 5, 6]


def test_mark_instances() -> None:
    assert sop('x = mark_first_instance(tokens, "l");', "hello") == [False, False, True, False, False]
    assert sop('x = mark_last_instance(tokens, "l");', "hello") == [False, False, False, True, False]


def test_select_from_first_and_last() -> None:
    first = sop('x = select_from_first(tokens, "a");', "baba")
    assert first == [[False, True, False, False]] * 4
    last = sop('x = select_from_last(tokens, "a");', "aab")
    assert last == [[False, True, False]] * 3


def test_sort() -> None:
    assert sop("x = sort(tokens_int, tokens_int);", [3, 1, 2]) == [1, 2, 3]
    # ties keep input order: sort letters by a key that only separates vowels
    text = 'x = sort(tokens, 0 if tokens in ["a", "e", "o"] else 1);'
    assert sop(text, "hello") == ["e", "o", "h", "l", "l"]


@settings(max_examples=60, deadline=None)
@given(INTS)
def test_sort_is_a_stable_sort(xs: list[int]) -> None:
    # sorting the positions by value gives the stable argsort (Python's sort is stable)
    result = sop("x = sort(indices, tokens_int);", xs)
    assert result == sorted(range(len(xs)), key=lambda i: xs[i])


def test_select_next_identical() -> None:
    # "abab": position 0 (a) -> next a at 2; 1 (b) -> 3; 2 and 3 have no next.
    assert sop("x = select_next_identical(tokens);", "abab") == [
        [False, False, True, False],
        [False, False, False, True],
        [False] * 4,
        [False] * 4,
    ]


def test_histogram() -> None:
    # a histogram: for each position, how many tokens equal it
    assert sop("x = selector_width(select(tokens, tokens, ==));", "abcab") == [2, 2, 1, 2, 2]


# ---------------------------------------------------------------------- costs (section 7)


@pytest.mark.parametrize(
    "text, layers, heads",
    [
        ("x = length;", 1, [1]),
        ("x = selector_width(select(indices, indices, <));", 1, [2]),
        ("s = select(indices, indices, ==); x = aggregate(s, tokens) + aggregate(s, tokens_float);", 1, [1]),
        (
            "x = aggregate(select(indices, indices, ==), tokens) "
            "+ aggregate(select(indices, indices, ==), tokens_float);",
            1,
            [2],
        ),
        # full_s is shared: length and count merge into one head; `atom in sop` has a
        # selector of its own (the original's numbers: its width_and_depth)
        ('x = length + count(tokens, "a");', 1, [1]),
        ('x = length + count(tokens, "a") + indicator("b" in tokens);', 1, [2]),
        ("x = tokens_int[0];", 1, [1]),
        ("x = tokens_int[-1];", 2, [1, 1]),
        ("x = sort(tokens_int, tokens_int);", 2, [2, 1]),
        ("x = has_focus(select(indices, indices, <));", 1, [1]),
        ("x = shift(tokens, 1, \"_\");", 1, [1]),
    ],
)
def test_reference_costs(text: str, layers: int, heads: list[int]) -> None:
    analysis = analyse(run(text).lookup("x"))
    assert (analysis.n_layers, list(analysis.heads)) == (layers, heads)
