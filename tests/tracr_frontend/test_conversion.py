"""from_tracr on the cases its tables and stand-ins must get right (docs/tracr.md): opaque
functions, predicates, None, tuples, names, constants, averages; and its refusals."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

rasp = pytest.importorskip("tracr.rasp.rasp")

from rasp_sim.base.errors import RaspError  # noqa: E402
from rasp_sim.tracr_frontend import ConversionError, from_tracr, to_rasp  # noqa: E402
from rasp_sim.tracr_frontend.agreement import compare, domain  # noqa: E402
from rasp_sim.tracr_frontend.columns import Column, means, stand_in  # noqa: E402
from rasp_sim.tracr_frontend.selects import relation, select_text  # noqa: E402


def agrees(sop, vocab, max_len: int):
    program = from_tracr(sop, vocab, max_len)
    inputs, _ = domain(vocab, 1, max_len)
    result = compare(lambda x: rasp.evaluate(sop, x), program, inputs)
    assert result.ok, result.disagreements
    return result


def test_maps_of_python_functions_with_branches_and_math() -> None:
    def helper(x):
        if x % 3 == 0:
            return math.cosh(x / 4)
        return -x

    mapped = rasp.numerical(rasp.Map(helper, rasp.tokens))
    both = rasp.SequenceMap(lambda a, i: a * 10 + i if a > i else a - i, mapped, rasp.indices)
    result = agrees(both, {0, 1, 2, 3, 4, 6}, 4)
    assert result.positions > 1000


@pytest.mark.parametrize("comparison", list(rasp.Comparison))
def test_every_comparison_keeps_tracr_orientation(comparison) -> None:
    """Comparison(key, query): LT selects keys smaller than the query."""
    selector = rasp.Select(rasp.tokens, rasp.indices, comparison)
    counted = rasp.SelectorWidth(selector)
    fetched = rasp.Aggregate(rasp.Select(rasp.indices, rasp.tokens, comparison), rasp.tokens)
    agrees(counted, {0, 1, 2, 3}, 4)
    agrees(rasp.numerical(fetched), {0, 1, 2, 3}, 4)


def test_composite_selectors() -> None:
    first = rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)
    second = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LT)
    third = rasp.Select(rasp.indices, rasp.tokens, rasp.Comparison.GEQ)
    composite = rasp.SelectorOr(rasp.SelectorAnd(first, second), rasp.SelectorNot(third))
    agrees(rasp.SelectorWidth(composite), {0, 1, 2}, 5)


@pytest.mark.parametrize("predicate", [
    lambda k, q: k == q - 1 or (k == 0 and q == 0),  # a shift: one key per query
    lambda k, q: k == 0,  # keys only
    lambda k, q: (k + q) % 3 == 0,  # no single comparison, many keys per query
    lambda k, q: k * 2 >= q,  # a comparison of maps
])
def test_python_predicates(predicate) -> None:
    selector = rasp.Select(rasp.indices, rasp.indices, predicate)
    agrees(rasp.SelectorWidth(selector), {"a", "b"}, 6)
    agrees(rasp.numerical(rasp.Aggregate(selector, rasp.indices, default=0)), {"a"}, 6)


@settings(max_examples=60, deadline=None)
@given(keys=st.sets(st.integers(-3, 5), min_size=1, max_size=4),
       queries=st.sets(st.integers(-3, 5), min_size=1, max_size=4),
       bits=st.integers(0, 2**16 - 1))
def test_any_relation_is_written_exactly(keys, queries, bits) -> None:
    """select_text writes any finite relation over the values exactly: checked by running
    the RASP text on every pair of a key value and a query value."""
    pairs = list(itertools.product(sorted(keys), sorted(queries)))
    chosen = {pair: bool(bits >> i & 1) for i, pair in enumerate(pairs)}
    table, _ = relation(lambda k, q: chosen[k, q], Column(frozenset(keys)),
                        Column(frozenset(queries)))
    text = select_text(table, Column(frozenset(keys)), Column(frozenset(queries)), "k", "q", "t")
    from rasp_sim import parse

    # position p holds key ks[p % |K|] and query qs[p // |K|]: every pair meets
    ks, qs = sorted(keys), sorted(queries)
    n = len(ks) * len(qs)
    key_at = [ks[p % len(ks)] for p in range(n)]
    query_at = [qs[p // len(ks)] for p in range(n)]
    program = parse(f"k = {key_at}[indices]; q = {query_at}[indices];\nsel = {text};")
    rows = program.run([[0] * n], "sel")[0]
    for qi in range(n):
        for ki in range(n):
            assert rows[qi][ki] == chosen[key_at[ki], query_at[qi]], (text, qi, ki)


def test_none_from_aggregates_propagates_as_tracr_does() -> None:
    """shift_by gives None at the first positions; maps of it give None there too, and a
    SequenceMap reading it is not called there; the other positions must agree."""
    shifted = rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices,
                                         lambda k, q: q == k + 1), rasp.tokens)
    same = rasp.SequenceMap(lambda x, y: x == y, rasp.tokens, shifted)
    upper = rasp.Map(lambda x: x.upper(), shifted)
    for sop in (same, upper):
        result = agrees(sop, {"a", "b"}, 5)
        assert result.none_positions > 0 and result.positions > 0
    text = to_rasp(upper, {"a", "b"}, 3).text
    assert '"None"' in text  # the stand-in of a string column


def test_function_returning_none_is_a_stand_in() -> None:
    maybe = rasp.Map(lambda x: None if x == 2 else x + 1, rasp.tokens)
    twice = rasp.Map(lambda x: x * 2, maybe, simplify=False)  # not called on None
    result = agrees(rasp.SequenceMap(lambda a, b: a - b, twice, rasp.indices), {1, 2, 3}, 4)
    assert result.none_positions > 0


def test_function_that_raises_fails_where_it_is_reached() -> None:
    """1 / (x - 2) raises on x = 2: left out of the table, with a note; an input holding a
    2 fails in rasp-sim as it raises in tracr, and the others agree."""
    inverse = rasp.numerical(rasp.Map(lambda x: 1 / (x - 2), rasp.tokens))
    translation = to_rasp(inverse, {1, 2, 3}, 3)
    assert any("ZeroDivisionError" in note and "map" in note for note in translation.notes)
    result = agrees(inverse, {1, 2, 3}, 3)
    assert result.tracr_failed == sum(1 for x in domain({1, 2, 3}, 1, 3)[0] if 2 in x)
    program = from_tracr(inverse, {1, 2, 3}, 3)
    with pytest.raises(RaspError, match="not in dict"):
        program.run([[1, 2]])


def test_tuples_between_maps_are_coded() -> None:
    pair = rasp.SequenceMap(lambda x, i: (x, i), rasp.tokens, rasp.indices)
    used = rasp.Map(lambda t: t[0] * t[1], pair)
    selected = rasp.SelectorWidth(rasp.Select(pair, pair, lambda a, b: a[0] == b[0]))
    agrees(used, {1, 2, 3}, 4)
    agrees(selected, {1, 2, 3}, 4)
    with pytest.raises(ConversionError, match="tuples"):
        from_tracr(pair, {1, 2}, 3)


def test_averages_of_bools_and_numbers() -> None:
    """tracr averages bools as 0/1 (rasp-sim counts them with indicator) and numbers left
    to right; the means that reach a map are in its table."""
    bools = rasp.numerical(rasp.Map(lambda x: x == "a", rasp.tokens))
    frac = rasp.numerical(rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices,
                                                     rasp.Comparison.LEQ), bools, default=0))
    scaled = rasp.Map(lambda f: round(f * 100), frac)
    agrees(scaled, {"a", "b"}, 6)
    values = rasp.numerical(rasp.Map(lambda x: x / 10, rasp.tokens))
    mean = rasp.numerical(rasp.Aggregate(rasp.Select(rasp.tokens, rasp.tokens,
                                                     rasp.Comparison.LEQ), values))
    agrees(rasp.Map(lambda m: m * 3, mean), {1, 2, 7}, 5)


@settings(max_examples=40, deadline=None)
@given(st.sets(st.one_of(st.integers(-5, 5), st.sampled_from([0.1, 0.2, 0.3, -0.7, 1e-9])),
               min_size=1, max_size=4), st.integers(2, 4))
def test_means_are_every_left_to_right_mean(values, count) -> None:
    """means() against brute force: every sequence of 2..count values, summed as Python's
    sum does (from 0, left to right) and divided by its length. Exact: floats included."""
    expected = {sum(seq) / len(seq) for m in range(2, count + 1)
                for seq in itertools.product(sorted(values), repeat=m)}
    assert means(frozenset(values), count, "t") == expected


def test_stand_ins_are_outside_the_values() -> None:
    assert stand_in(frozenset({"None", "a"}), numeric=False) == "None_1"
    assert stand_in(frozenset({-1, 0, 3}), numeric=True) == -2
    assert stand_in(frozenset({0.5, 2}), numeric=True) == -1


def test_labels_become_names_and_reserved_ones_are_renamed() -> None:
    length = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens,
                                            rasp.Comparison.TRUE)).named("length")
    odd = rasp.Map(lambda n: n % 2 == 1, length).named("is odd?")
    translation = to_rasp(odd, {"a"}, 4)
    assert translation.names[length.label] == length.label  # "length_N": a free name
    assert translation.names[odd.label] == odd.label.replace("?", "_").replace(" ", "_")
    program = from_tracr(odd, {"a"}, 4)
    assert program.last_name == translation.names[odd.label]
    assert program.run(["aaa", "aa"]) == [[True] * 3, [False] * 2]
    # tracr's base values keep their bare labels, which RASP reserves
    assert from_tracr(rasp.tokens, {"a"}, 3).last_name == "tokens_"
    assert from_tracr(rasp.length, {"a"}, 3).run(["aa"]) == [[2, 2]]


def test_constants_fold_and_a_constant_program_is_an_sop() -> None:
    full = rasp.Full(3)
    plus = rasp.SequenceMap(lambda a, b: a + b, full, rasp.Map(lambda c: c * 2, full))
    agrees(plus, {"x"}, 3)
    mixed = rasp.SequenceMap(lambda t, c: t * c, rasp.tokens, full)
    agrees(mixed, {1, 2}, 3)
    agrees(rasp.numerical(rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices,
                                                     rasp.Comparison.LEQ), full)), {1}, 4)


def test_linear_sequence_map_is_arithmetic() -> None:
    a = rasp.numerical(rasp.Map(lambda x: x, rasp.tokens))
    b = rasp.numerical(rasp.Map(lambda i: i / 2, rasp.indices))
    linear = rasp.numerical(rasp.LinearSequenceMap(a, b, 2, -0.5))
    assert "(2 * " in to_rasp(linear, {1, 5}, 3).text
    agrees(linear, {1, 5}, 4)
    for factors, shape in (((1, -1), " - "), ((-1, 1), " - "), ((1, 1), " + ")):
        unit = rasp.numerical(rasp.LinearSequenceMap(a, b, *factors))
        assert shape in to_rasp(unit, {1, 5}, 3).text.splitlines()[-1]
        agrees(unit, {1, 5}, 4)


def test_a_predicate_that_raises_is_noted_and_the_rest_agrees() -> None:
    selector = rasp.Select(rasp.tokens, rasp.tokens, lambda k, q: 1 / (k - q) > 0)
    width = rasp.SelectorWidth(selector)
    notes = to_rasp(width, {1, 2}, 3).notes
    assert len(notes) == 1 and "ZeroDivisionError" in notes[0] and selector.label in notes[0]
    agrees(width, {1, 2}, 3)


def test_comments_name_functions_by_paths_that_do_not_depend_on_the_machine() -> None:
    text = to_rasp(rasp.Map(lambda x: x == "a", rasp.tokens), {"a"}, 2).text
    assert "tests/tracr_frontend/test_conversion.py:" in text or "test_conversion.py:" in text
    library = to_rasp(rasp.numerical(rasp.tokens == "a"), {"a"}, 2).text
    assert "at tracr/rasp/rasp.py:" in library


@pytest.mark.parametrize("sop, vocab, message", [
    (rasp.Map(lambda x: [x], rasp.tokens), {1}, r"map_\d+: its function .* gives \[1\]"),
    (rasp.Map(lambda x: float("nan"), rasp.tokens), {1}, "nan"),
    (rasp.Map(lambda x: 'say "hi"', rasp.tokens), {1}, "double quote"),
    (rasp.Map(lambda x: x if x == 1 else "one", rasp.tokens), {1, 2}, "strings and numbers"),
    (rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ), {1}, "s-op"),
    (rasp.Map(lambda x: x, rasp.tokens), set(), "vocabulary is empty"),
])
def test_refusals_name_the_sop_and_the_value(sop, vocab, message) -> None:
    with pytest.raises(ConversionError, match=message):
        from_tracr(sop, vocab, 3)


def test_tables_too_large_for_a_program_are_refused_by_label() -> None:
    def pairs(size: int):
        return rasp.SequenceMap(lambda a, b: a * 1000 + b, rasp.tokens,
                                rasp.Map(lambda x: x + 1, rasp.tokens)).named("big")

    with pytest.raises(ConversionError, match=r"big_\d+ can take more than 10,000 values"):
        from_tracr(pairs(200), set(range(200)), 3)
    with pytest.raises(ConversionError, match=r"big_\d+: its table needs a statement of"):
        from_tracr(pairs(80), set(range(80)), 3)


def test_inputs_outside_the_vocabulary_fail_located() -> None:
    program = from_tracr(rasp.Map(lambda x: x + 1, rasp.tokens), {1, 2}, 3)
    with pytest.raises(RaspError) as caught:
        program.run([[1, 5]])
    assert caught.value.span is not None and caught.value.span.line > 1


def test_a_converted_program_does_what_a_program_does(tmp_path) -> None:
    """run_batch, analyse, the notebook picture, compile with a proof, trace and save."""
    import numpy as np

    import rasp_sim
    from tracr.compiler import lib

    sop = lib.make_sort_unique(rasp.tokens, rasp.tokens)
    program = from_tracr(sop, {1, 2, 3}, 3)
    batch = program.run_batch(np.array([[3, 1, 2], [2, 3, 1]]))
    assert batch.tolist() == [[1, 2, 3], [1, 2, 3]]
    assert len(program.analyse().layers) >= 1
    assert program._repr_svg_().lstrip().startswith("<")
    model = rasp_sim.compile(program, vocab=[1, 2, 3], max_len=3, exhaustive=True, workers=1)
    assert model.proof is not None and model.proof["inputs"] == 3 + 9 + 27
    assert model.trace([3, 1, 2]).output == [1, 2, 3]
    model.save(tmp_path / "sorted.npz")
    assert rasp_sim.load_model(tmp_path / "sorted.npz").run([[2, 1]]) == [[1, 2]]


def test_an_absurd_length_is_refused_before_any_table_is_built() -> None:
    from tracr.compiler import lib

    with pytest.raises(ConversionError, match="max_seq_len 1,000,000,000: indices would"):
        to_rasp(lib.make_length(), {"a"}, 10**9)
