"""The string input path (rasp_sim/evaluation/texts.py) and the sliced gather by one index
row (attention.gather): the same values as the general paths they shortcut."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rasp_sim.evaluation import attention
from rasp_sim.evaluation.evaluate import evaluate, evaluate_batch
from rasp_sim.evaluation.texts import Texts, one_length_texts
from rasp_sim.language.interpreter import Interpreter

# ASCII, NUL, a non-ASCII letter, an astral code point, a lone surrogate
_CHARS = st.sampled_from(["a", "b", "~", "\0", "é", "\U0001f600", "\ud800"])
_TEXT = st.text(_CHARS, min_size=0, max_size=6)
_BATCH = st.lists(st.one_of(_TEXT, st.integers(), st.lists(st.integers(), max_size=2)),
                  min_size=0, max_size=12)


def _expected(inputs: list) -> np.ndarray | None:
    """What one_length_texts must give, by the obvious per-input reading."""
    if not inputs or not all(isinstance(x, str) for x in inputs):
        return None
    if len({len(x) for x in inputs}) != 1 or not inputs[0] or any("\0" in x for x in inputs):
        return None
    return np.array([list(x) for x in inputs], dtype="U1")


@settings(max_examples=300, deadline=None)
@given(_BATCH)
def test_one_length_texts_is_the_characters_of_strs_of_one_length(inputs):
    texts = one_length_texts(inputs)
    expected = _expected(inputs)
    if expected is None:
        assert texts is None
        return
    assert texts == inputs and isinstance(texts, Texts)
    got = texts.characters
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    assert got.flags.c_contiguous
    chunk = texts.rows(1, 3)  # a chunk keeps its rows of the matrix
    assert chunk == inputs[1:3] and np.array_equal(chunk.characters, got[1:3])


@pytest.mark.parametrize("inputs", [["ab", "cd", "e"], ["abc", "d", "ef"], ["a", "bc"],
                                    ["ab\0", "cde"], ["a\0", "bc"], ["", ""], []],
                         ids=["short-last", "same-total", "long-last", "nul-end", "nul-mid",
                              "empty", "none"])
def test_lengths_that_add_up_or_hide_behind_a_nul_are_refused(inputs):
    assert one_length_texts(inputs) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(_CHARS, min_size=3, max_size=3), min_size=1, max_size=8))
def test_programs_on_strs_agree_with_one_input_at_a_time(inputs):
    # reverse, sort and a histogram on the batch against each input alone (lists of
    # characters, which go through the general path)
    interp = Interpreter()
    interp.run_source("r = aggregate(select(indices, length - indices - 1, ==), tokens);\n"
                      "h = selector_width(select(tokens, tokens, ==));\n"
                      "s = sort(tokens, tokens);\n", "<texts>")
    roots = [interp.lookup(name) for name in ("r", "h", "s")]
    batch = evaluate(roots, inputs)
    singles = [evaluate(roots, [list(x)])[0] for x in inputs]
    assert [[[(type(v), v) for v in root] for root in row] for row in batch] == [
        [[(type(v), v) for v in root] for root in row] for row in singles]


@pytest.mark.parametrize("index", [[5, 4, 3, 2, 1, 0], [0, 1, 2, 3, 4, 5], [0, 2, 4], [5, 3, 1],
                                   [4, 2, 0], [1, 1, 1], [3, 1, 2], [2]],
                         ids=["reversed", "forward", "step-2", "step-minus-2", "to-zero",
                              "constant", "no-progression", "one"])
def test_a_gather_by_one_index_row_is_take(index):
    rng = np.random.default_rng(3)
    values = rng.integers(0, 9, size=(attention._SLICED_ROWS + 1, 6))
    idx = np.array([index], dtype=np.int64)
    got = attention.gather(values, idx)
    assert got.flags.writeable and not np.shares_memory(got, values)
    assert np.array_equal(got, values.take(idx[0], axis=-1))


def test_evaluate_batch_on_strs_reads_their_characters():
    interp = Interpreter()
    interp.run_source("y = aggregate(select(indices, length - indices - 1, ==), tokens);",
                      "<texts>")
    root = interp.lookup("y")
    inputs = ["héllo", "wörld"] * 200  # non-ASCII, more rows than the sliced gather needs
    got = evaluate_batch([root], inputs)[root]
    assert got.dtype == np.dtype("U1")
    assert got.tolist() == [list(x[::-1]) for x in inputs]
