"""Fused patterns (rasp_sim/evaluation/fusion.py) against the same graphs evaluated node by
node: the library's sort and selector_width (of == selects counted by value: ints, big
ints, bools, strings, and the floats and mixed values that keep the selector), and
gathers/scatters through selects on
indices, on random batches of ints (in and out of range, repeated), strings, floats and
mixed values; same atoms, types and errors."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rasp_sim.evaluation import evaluate as ev
from rasp_sim.base.errors import RaspError
from rasp_sim.evaluation import fusion
from rasp_sim.language.interpreter import Interpreter

from .test_evaluate import same_rows

SOURCE = """
tokens = tokens_asis;
sorted = sort(tokens, tokens);
sorted_by_length_key = sort(tokens, length - tokens);
sorted_positions = sort(indices, tokens);
width = selector_width(select(tokens, tokens, ==));
width_of_shared = selector_width(select(indices, indices, <=));
width_of_positions = selector_width(select(indices, tokens, ==));
width_of_shifted = selector_width(select(tokens, indices - 1, ==));
width_of_flags = selector_width(select(tokens == "a", indices == 0, ==));
at = aggregate(select(indices, tokens, ==), indices * 1.5, 0);
picked = aggregate(select(indices, tokens, ==), tokens, "none");
reversed = aggregate(select(indices, length - indices - 1, ==), tokens);
placed = aggregate(select(tokens, indices, ==), indices, -1);
placed_mean = aggregate(select(tokens, indices, ==), tokens, 0.5);
size = length;
before = select(tokens, tokens, <) or (select(tokens, tokens, ==) and select(indices, indices, <));
"""
NAMES = ["sorted", "sorted_by_length_key", "sorted_positions", "width", "width_of_shared",
         "width_of_positions", "width_of_shifted", "width_of_flags", "at", "picked", "reversed",
         "placed", "placed_mean", "before", "before", "before", "size"]


def _roots() -> dict[str, Any]:
    interpreter = Interpreter()
    interpreter.run_source(SOURCE, "<fusion>")
    return {name: interpreter.lookup(name) for name in NAMES}


ROOTS = _roots()
ATOMS = {
    "int": st.integers(-2, 6),
    "big int": st.sampled_from([-2**62, 2**62, 3, 2**40]),
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
    assert kinds["sorted"] == ["before", "before width", "sorted"]
    assert kinds["width"] == ["equal width"] and kinds["reversed"] == ["equal width", "gather"]
    assert kinds["width_of_shared"] == ["width"] and kinds["width_of_flags"] == ["equal width"]
    assert kinds["placed"] == ["scatter"] and kinds["before"] == ["before"]
    assert kinds["size"] == ["equal width"]  # length: the width of select(1, 1, ==)


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


def test_an_equality_width_of_many_distinct_values_counts_sorted_pairs() -> None:
    """90,000 distinct values in 300 inputs: too many for a count per input and value, so
    the (input, value) pairs are sorted and searched; the same counts as the selector."""
    import numpy as np

    from rasp_sim.evaluation.attention import row_counts, select

    rng = np.random.default_rng(0)
    keys = rng.integers(-2**62, 2**62, size=(300, 300))
    queries = np.where(rng.random((300, 300)) < 0.5, keys[:, ::-1], keys + 1)
    keys[:, :50] = keys[:, :1]  # repeats, so that counts above one occur
    want = row_counts(select(keys, queries, "==", False))
    assert want.max() > 1 and (want == 0).any()
    assert np.array_equal(fusion._equal_width(keys, queries, False), want)
    assert np.array_equal(fusion._equal_width(keys[:1], queries, False),
                          row_counts(select(keys[:1], queries, "==", False)))


@pytest.mark.parametrize("kind", ["int", "big int", "bool", "str", "float"])
def test_a_histograms_width_of_one_column_against_itself(kind: str) -> None:
    """select(x, x, ==) passes one array as keys and queries, which are numbered once (in
    place): the same counts as the selector, for a short value range (a table), a wide one
    (sorted pairs), bools, strings, and floats (which keep the selector)."""
    import numpy as np

    from rasp_sim.evaluation.attention import row_counts, select

    rng = np.random.default_rng(3)
    codes = rng.integers(0, 5, size=(60, 40))
    column = {"int": codes - 2, "big int": np.array([-2**62, 7, 2**62, 2**40, 8])[codes],
              "bool": codes > 2, "str": np.array(["a", "b", "é", "ab", ""])[codes],
              "float": np.where(codes == 4, np.nan, codes * 0.5)}[kind]
    for batch in (column, column[:1]):
        kept = batch.copy()
        want = row_counts(select(batch, batch, "==", False))
        assert np.array_equal(fusion._equal_width(batch, batch, False), want)
        assert np.array_equal(batch, kept, equal_nan=kind == "float")  # the input unchanged


def test_a_histogram_on_one_input_counts_code_points_at_its_tables_edge() -> None:
    """One input's characters are counted in a table of 4n + 256 slots, on the points
    clipped to that size: points just below, at and above the edge give the selector's
    counts (at and above, by the general path)."""
    import numpy as np

    from rasp_sim.evaluation.attention import row_counts, select

    n = 6
    edge = 4 * n + 256
    for points in ([edge - 1, edge - 1, 97], [edge, edge, 97], [edge + 1, edge, edge + 1],
                   [0x10FFFF, 97, 0x10FFFF]):
        chars = [chr(p) for p in points] + ["a", "b", "a"]
        column = np.array(chars)[None].astype("<U1")
        want = row_counts(select(column, column, "==", False))
        assert np.array_equal(fusion._equal_width(column, column, False), want), points


@pytest.mark.parametrize("kind", ["int", "uint8", "bool", "str", "float"])
def test_the_sort_selectors_width_is_each_keys_stable_rank(kind: str) -> None:
    """Long inputs with many ties (NumPy sorts short rows by insertion, stable anyway):
    the ranks equal the selector's row counts; floats, nan among them, keep the selector."""
    import numpy as np

    from rasp_sim.evaluation.attention import row_counts

    rng = np.random.default_rng(1)
    keys = rng.integers(0, 4, size=(40, 200))
    keys = {"int": keys - 2, "uint8": keys.astype(np.uint8), "bool": keys > 1,
            "str": np.array(list("abcé"))[keys],
            "float": np.where(keys == 3, np.nan, keys * 0.5)}[kind]
    for batch in (keys, keys[:1]):
        want = row_counts(fusion._before(batch, False))
        assert np.array_equal(fusion._before_width(batch, False), want)


@pytest.mark.parametrize("name", ["sorted", "sorted_by_length_key", "sorted_positions",
                                  "placed"])
def test_sorts_of_long_inputs_with_ties_match_node_by_node(name: str) -> None:
    """Lengths above NumPy's insertion-sort cut-off, few distinct tokens: an order that
    is not stable would be caught here (sorted_positions: equal keys, different values)."""
    import random

    rng = random.Random(2)
    for atoms in ("abc", [0, 1, 2, 30], [True, False]):
        batch = [[rng.choice(atoms) for _ in range(100)] for _ in range(8)]
        fused = _outcome(ROOTS[name], batch)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fusion, "find", lambda nodes: {})
            plain = _outcome(ROOTS[name], batch)
        assert fused[0] == plain[0]
        assert same_rows(fused[1], plain[1]) if fused[0] == "ok" else fused[1] == plain[1]


_COLUMNS = {
    "int": lambda rng, shape: rng.integers(-3, 4, size=shape),
    "wide int": lambda rng, shape: rng.choice([-2**62, 0, 5, 2**62], size=shape),
    "bool": lambda rng, shape: rng.random(shape) < 0.5,
    "char": lambda rng, shape: rng.choice(["a", "b", "é", "\U0001f600", ""], size=shape),
    "ascii": lambda rng, shape: rng.choice(["a", "z", "~"], size=shape),
}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_COLUMNS)), st.sampled_from(sorted(_COLUMNS)),
       st.integers(1, 5), st.integers(1, 70), st.booleans(), st.booleans(), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_equal_width_and_sorted_values_match_the_selector(key_kind, query_kind, rows, n,
                                                          one_key_row, one_query_row, same,
                                                          seed):
    """The fused counts of select(k, q, ==) on random columns of every kind the fast forms
    take (one row of keys or queries shared by the batch, one column against itself,
    non-ASCII characters and "", values spanning a wide range), and sort(k, k), against
    the selector and the stable order's gather."""
    import numpy as np

    from rasp_sim.evaluation.attention import gather, row_counts, select

    rng = np.random.default_rng(seed)
    keys = _COLUMNS[key_kind](rng, (1 if one_key_row else rows, n))
    queries = keys if same else _COLUMNS[query_kind](rng, (1 if one_query_row else rows, n))
    if keys.dtype.kind != queries.dtype.kind and {keys.dtype.kind, queries.dtype.kind} & {"U"}:
        return  # strings against numbers: the selector's own comparison, not fused
    want = row_counts(select(keys, queries, "==", False))
    got = fusion._equal_width(keys, queries, False)
    assert got.dtype == want.dtype and np.array_equal(np.broadcast_to(got, want.shape), want)
    ordered = gather(keys, np.argsort(fusion._orderable_codes(keys), axis=-1, kind="stable"))
    sorted_keys = fusion._sorted_values(keys)
    assert sorted_keys.dtype == ordered.dtype and np.array_equal(sorted_keys, ordered)
