"""The vectorised evaluator: kernels against the atom-function table
(`rasp_sim.core.atom_functions`, the rules of `rasp_sim.core.semantics`) element by element
(values and element types, bit for bit), and whole graphs on batches."""
from __future__ import annotations

import math
import typing
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rasp_sim.core import graph as g
from rasp_sim.core import atom_functions
from rasp_sim.core.atom_functions import BINARY_OPS, UNARY_OPS, atom_function
from rasp_sim.core import semantics as sem
from rasp_sim.base.errors import RaspError, RaspResourceError, RaspRuntimeError, RaspTypeError, Source, Span
from rasp_sim.evaluation.evaluate import estimate_bytes, evaluate, evaluate_batch, evaluate_one
from rasp_sim.evaluation.attention import aggregate, select
from rasp_sim.evaluation.columns import MixedColumn, float_view, from_objects, object_column
from rasp_sim.evaluation.elementwise import apply_map

# ------------------------------------------------------------------------------ helpers


def same_atom(x: Any, y: Any) -> bool:
    """Bit-equal atoms: same type, same value, NaN equal to NaN, -0.0 distinct from 0.0."""
    if type(x) is not type(y):
        return False
    if isinstance(x, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y and math.copysign(1, x) == math.copysign(1, y)
    if isinstance(x, complex):
        return same_atom(x.real, y.real) and same_atom(x.imag, y.imag)
    return x == y


def same_rows(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        len(r) == len(s) and all(same_atom(x, y) for x, y in zip(r, s)) for r, s in zip(a, b)
    )


def column(rows: list[list[Any]], exact: bool = False) -> np.ndarray:
    return from_objects(object_column([x for r in rows for x in r], (len(rows), len(rows[0]))), exact=exact)


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except RaspError as exc:
        return "error", type(exc)


def reference_rows(row_fn: Callable[[int], list], b: int) -> tuple[str, Any]:
    """Per-row reference outcomes: ("ok", rows) or ("error", {classes of failing rows})."""
    results = [outcome(lambda r=r: row_fn(r)) for r in range(b)]
    errors = {cls for kind, cls in results if kind == "error"}
    return ("error", errors) if errors else ("ok", [v for _, v in results])


def check_against(kernel: Callable[[], np.ndarray], row_fn: Callable[[int], list], b: int) -> None:
    expected = reference_rows(row_fn, b)
    got = outcome(lambda: kernel().tolist())
    if expected[0] == "error":
        assert got[0] == "error", f"expected one of {expected[1]}, got {got[1]!r}"
        assert got[1] in expected[1]
    else:
        assert got[0] == "ok", f"kernel raised {got[1]}, semantics gave {expected[1]!r}"
        assert same_rows(got[1], expected[1]), (got[1], expected[1])


def checked_row(values: list) -> list:
    sem.sequence_type(values)  # every produced sequence is type-checked (6.2)
    return values


# ---------------------------------------------------------------------------- strategies

SMALL_INTS = st.integers(-40, 40)
ANY_INTS = st.one_of(SMALL_INTS, st.integers(-(2**70), 2**70), st.sampled_from([2**53 + 1, 2**62, -(2**63)]))
FLOATS = st.one_of(
    st.floats(-100, 100), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 2.5, -1.5, 1e300, 2.0**53]),
)
BOOLS = st.booleans()
STRINGS = st.text(alphabet="ab\0é", max_size=3)
ELEMENTS = {
    "int": SMALL_INTS,
    "bigint": ANY_INTS,
    "float": FLOATS,
    "bool": BOOLS,
    "str": STRINGS,
    "num": st.one_of(SMALL_INTS, FLOATS, BOOLS),
    "intfloat": st.one_of(SMALL_INTS, FLOATS),  # a mixed column held as numbers
}
# Every row is a legal sequence (the evaluator never holds any other); with "per-row" the
# rows of one column have different element types, which only object arrays can hold.
PER_ROW = "per-row"
EXACT_ELEMENTS = {
    "int": SMALL_INTS,
    "frac": st.fractions(max_denominator=20),
    "float": st.floats(-100, 100),
    "bool": BOOLS,
    "str": STRINGS,
}


@st.composite
def columns(draw, count: int, elements: dict = ELEMENTS) -> tuple[int, int, list]:
    b, n = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    cols = []
    for _ in range(count):
        kind = draw(st.sampled_from(sorted(elements) + [PER_ROW]))
        rows = []
        for _ in range(b):
            row_kind = draw(st.sampled_from(sorted(elements))) if kind == PER_ROW else kind
            rows.append([draw(elements[row_kind]) for _ in range(n)])
        cols.append(rows)
    return b, n, cols


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ elementwise kernels


def test_the_atom_function_table_covers_every_map_op():
    # a MapOp missing from the table would fail only when a program first used it
    assert atom_functions.OPS == set(typing.get_args(g.MapOp))
    assert set(BINARY_OPS) | set(UNARY_OPS) < atom_functions.OPS


def tame(op: str, xs: list, ys: list) -> tuple[list, list]:
    """Keep Python from building astronomically large values: `^` with a huge exponent
    and a string repeated a huge number of times would not finish (in the original too)."""

    def small(v: Any) -> Any:
        return v % 61 if type(v) in (int, Fraction) and abs(v) > 60 else v

    if op == "^":
        return xs, [[small(y) for y in row] for row in ys]
    if op == "*":
        pairs = [[(small(x), small(y)) if str in (type(x), type(y)) else (x, y)
                  for x, y in zip(rx, ry)] for rx, ry in zip(xs, ys)]
        return [[p[0] for p in row] for row in pairs], [[p[1] for p in row] for row in pairs]
    return xs, ys


@FAST
@given(st.sampled_from(BINARY_OPS), columns(2))
def test_binary_maps_match_semantics(op, data):
    b, n, (xs, ys) = data
    xs, ys = tame(op, xs, ys)
    check_against(
        lambda: apply_map(op, [column(xs), column(ys)], (), False),
        lambda r: checked_row([atom_function(op)(x, y) for x, y in zip(xs[r], ys[r])]),
        b,
    )


@FAST
@given(st.sampled_from(["and", "or"]), columns(2))
def test_sop_logic_matches_semantics(op, data):
    b, n, (xs, ys) = data
    check_against(
        lambda: apply_map(op, [column(xs), column(ys)], (), False),
        lambda r: checked_row([atom_function(op)(x, y) for x, y in zip(xs[r], ys[r])]),
        b,
    )


def check_unary(op: str, data: tuple[int, int, list]) -> None:
    b, n, (xs,) = data
    check_against(
        lambda: apply_map(op, [column(xs)], (), False),
        lambda r: checked_row([atom_function(op)(x) for x in xs[r]]),
        b,
    )


@FAST
@given(st.sampled_from(UNARY_OPS), columns(1))
def test_unary_maps_match_semantics(op, data):
    check_unary(op, data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["exp", "log"]), columns(1))
def test_exp_and_log_are_pythons_bit_for_bit(op, data):
    # they run from float64 arrays, not through objects, but still call math.exp and
    # math.log: NumPy's own may differ in the last bit; out of the domain, the same error
    check_unary(op, data)


@FAST
@given(st.sampled_from(BINARY_OPS + UNARY_OPS), columns(2, EXACT_ELEMENTS))
def test_exact_maps_match_semantics(op, data):
    b, n, (xs, ys) = data
    xs, ys = tame(op, xs, ys)
    unary = op in UNARY_OPS
    cols = [column(xs, exact=True)] + ([] if unary else [column(ys, exact=True)])
    assert all(c.dtype != np.float64 for c in cols)  # exact mode holds no floats
    check_against(
        lambda: apply_map(op, cols, (), True),
        lambda r: checked_row(
            [atom_function(op, exact=True)(x) for x in xs[r]]
            if unary
            else [atom_function(op, exact=True)(x, y) for x, y in zip(xs[r], ys[r])]
        ),
        b,
    )


@FAST
@given(columns(3))
def test_where_matches_semantics(data):
    b, n, (cs, ts, es) = data
    check_against(
        lambda: apply_map("where", [column(cs), column(ts), column(es)], (), False),
        lambda r: checked_row([atom_function("where")(c, t, e) for c, t, e in zip(cs[r], ts[r], es[r])]),
        b,
    )


TABLES = st.one_of(
    st.lists(st.one_of(SMALL_INTS, STRINGS, FLOATS), max_size=5),
    st.text(alphabet="xyz", max_size=4),
    st.dictionaries(st.one_of(SMALL_INTS, STRINGS), st.one_of(SMALL_INTS, STRINGS), max_size=5),
)


@FAST
@given(TABLES, columns(1, {"int": st.integers(-6, 6), "bool": BOOLS, "str": STRINGS, "float": FLOATS}))
def test_lookup_and_member_match_semantics(table, data):
    b, n, (xs,) = data
    for op in ("lookup", "member"):
        check_against(
            lambda: apply_map(op, [column(xs)], (table,), False),
            lambda r: checked_row([atom_function(op, (table,))(x) for x in xs[r]]),
            b,
        )


# ---------------------------------------------------------------- selectors, aggregate


@FAST
@given(st.sampled_from(["==", "!=", "<", ">", "<=", ">="]), columns(2))
def test_select_matches_semantics(op, data):
    b, n, (keys, queries) = data

    def row(r: int) -> list:
        return [[atom_function(op)(k, q) for k in keys[r]] for q in queries[r]]

    check_against(lambda: select(column(keys), column(queries), op, False), row, b)


AGG_VALUES = dict(ELEMENTS, mixed=st.one_of(SMALL_INTS, st.floats(-1e6, 1e6)), tiny=st.floats(-1e-300, 1e-300))


@st.composite
def aggregations(draw, elements: dict = AGG_VALUES):
    b, n, (values,) = draw(columns(1, elements))
    sel = [[[draw(st.booleans()) for _ in range(n)] for _ in range(n)] for _ in range(b)]
    default = draw(st.one_of(st.just(0), SMALL_INTS, FLOATS, STRINGS, BOOLS))
    return b, sel, values, default


def aggregate_reference(sel, values, default, reduction, exact):
    def row(r: int) -> list:
        out = []
        for q_row in sel[r]:
            chosen = [v for s, v in zip(q_row, values[r]) if s]
            out.append(sem.aggregate_one(chosen, default, values[r], reduction=reduction, exact=exact))
        return checked_row(out)

    return row


@FAST
@given(aggregations(), st.sampled_from(["mean", "sum"]))
def test_aggregate_matches_semantics_bit_for_bit(data, reduction):
    """Means equal the original's left-to-right `sum(...) * 1.0 / |S|` exactly: the
    evaluator never reorders a float sum (see evaluation/attention.py), so no tolerance."""
    b, sel, values, default = data
    check_against(
        lambda: aggregate(np.array(sel), column(values), default, reduction, False),
        aggregate_reference(sel, values, default, reduction, False),
        b,
    )


@FAST
@given(aggregations({"int": SMALL_INTS, "frac": st.fractions(max_denominator=20), "str": STRINGS}))
def test_exact_aggregate_matches_semantics(data):
    b, sel, values, default = data
    default = sem.to_exact(default) if isinstance(default, float) and math.isfinite(default) else 0
    check_against(
        lambda: aggregate(np.array(sel), column(values, exact=True), default, "mean", True),
        aggregate_reference(sel, values, default, "mean", True),
        b,
    )


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32))
def test_float_means_are_bit_equal_on_wide_rows(n, seed):
    """Wide rows of arbitrary floats: the masked cumulative sum is strictly left to right."""
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal((2, n)) * 10.0 ** rng.integers(-5, 5, (2, n))).tolist()
    sel = (rng.random((2, n, n)) < 0.6).tolist()
    check_against(
        lambda: aggregate(np.array(sel), column(values), 0.0, "mean", False),
        aggregate_reference(sel, values, 0.0, "mean", False),
        2,
    )


# ------------------------------------------------------------------------ graph builders

T = g.Tokens(kind="int")
I = g.Indices()


def full(v: Any) -> g.Full:
    return g.Full(value=v)


def m(op: str, *inputs: g.SOp, params: tuple = ()) -> g.Map:
    return g.Map(op=op, inputs=inputs, params=params)  # type: ignore[arg-type]


def sel(keys: g.SOp, queries: g.SOp, op: str = "==") -> g.Select:
    return g.Select(keys=keys, queries=queries, op=op)  # type: ignore[arg-type]


def agg(s: g.Selector, values: g.SOp, default: Any = 0, reduction: str = "mean") -> g.Aggregate:
    return g.Aggregate(selector=s, values=values, default=default, reduction=reduction)  # type: ignore[arg-type]


def one(node: g.Node, x: Any, **kw: Any) -> Any:
    return evaluate_one(node, x, **kw)


def types(values: list) -> list[type]:
    return [type(v) for v in values]


# ----------------------------------------------------------------------- graph: maps


@pytest.mark.parametrize(
    "node, x, expected",
    [
        (m("+", T, full(1)), [1, 2], [2, 3]),
        (m("-", full(1), T), [1, 2], [0, -1]),
        (m("*", g.Tokens(kind="str"), full(2)), "ab", ["aa", "bb"]),
        (m("/", T, full(2)), [1, 4], [0.5, 2.0]),
        (m("%", T, full(-3)), [7, -7], [-2, -1]),
        (m("^", full(2), m("neg", T)), [1, 2], [0.5, 0.25]),
        (m("==", T, full(2.0)), [1, 2], [False, True]),
        (m("!=", T, full(2)), [1, 2], [True, False]),
        (m("<", T, I), [0, 0, 5], [False, True, False]),
        (m(">", T, I), [0, 0, 5], [False, False, True]),
        (m("<=", T, I), [0, 1, 5], [True, True, False]),
        (m(">=", T, I), [0, 0, 5], [True, False, True]),
        (m("and", T, I), [1, 1, 0], [False, True, False]),
        (m("or", T, I), [0, 0, 0], [False, True, True]),
        (m("not", T), [0, 3], [True, False]),
        (m("neg", g.Tokens(kind="bool")), [1, 0], [-1, 0]),
        (m("pos", g.Tokens(kind="bool")), [1, 0], [1, 0]),
        (m("round", g.Tokens(kind="float")), [0.5, 1.5, 2.5, -0.5], [0, 2, 2, 0]),
        (m("indicator", g.Tokens(kind="str")), "ab", [1, 1]),
        (m("where", m(">", T, full(1)), T, full(0.5)), [1, 2], [0.5, 2]),
        (m("lookup", T, params=(["a", "b", "c"],)), [2, -1, 0], ["c", "c", "a"]),
        (m("lookup", g.Tokens(kind="str"), params=({"a": 1, "b": 2.5},)), "ab", [1, 2.5]),
        (m("member", T, params=([1, 3],)), [1, 2, 3], [True, False, True]),
        (m("exp", T), [0], [1.0]),
        (m("log", T), [1], [0.0]),
        (m("sqrt", T), [4, 9], [2.0, 3.0]),
        (m("abs", T), [-3, 2], [3, 2]),
    ],
)
def test_map_ops(node, x, expected):
    result = one(node, x)
    assert result == expected and types(result) == types(expected)


def test_where_is_rejected_when_it_mixes_strings_and_ints():
    node = m("where", m(">", T, full(1)), T, full("x"))
    assert one(node, [2, 3]) == [2, 3]  # all ints: fine
    with pytest.raises(RaspTypeError, match="vals of different types"):
        one(node, [1, 2])


def test_both_branches_of_a_ternary_are_computed():
    node = m("where", m("==", T, full(0)), full(0), m("/", full(1), T))
    with pytest.raises(RaspRuntimeError, match="division by zero"):
        one(node, [0, 2])


def test_complex_values_are_illegal_in_sequences():
    with pytest.raises(RaspTypeError, match="illegal val types"):
        one(m("^", T, full(0.5)), [-8, 4])


# -------------------------------------------------------------------- graph: selectors

COMPARISONS = {
    "==": lambda k, q: k == q, "!=": lambda k, q: k != q, "<": lambda k, q: k < q,
    ">": lambda k, q: k > q, "<=": lambda k, q: k <= q, ">=": lambda k, q: k >= q,
}


@pytest.mark.parametrize("op", sorted(COMPARISONS))
def test_select_matrix_is_keys_op_queries(op):
    x = [3, 1, 2, 1]
    result = one(sel(T, m("+", I, full(0)), op), x)
    assert result == [[COMPARISONS[op](x[k], q) for k in range(4)] for q in range(4)]


def test_select_with_constants():
    assert one(sel(I, full(0)), "abc") == [[True, False, False]] * 3
    assert one(sel(full(0), I), "abc") == [[True] * 3, [False] * 3, [False] * 3]


def test_selector_logic():
    lt, eq = sel(I, I, "<"), sel(I, I, "==")
    assert one(g.SelectorOr(left=lt, right=eq), "abc") == [[k <= q for k in range(3)] for q in range(3)]
    assert one(g.SelectorAnd(left=lt, right=eq), "abc") == [[False] * 3] * 3
    assert one(g.SelectorNot(operand=lt), "abc") == [[k >= q for k in range(3)] for q in range(3)]


# -------------------------------------------------------------------- graph: aggregate


def test_aggregate_zero_one_many_selected():
    before = sel(I, I, "<")
    result = one(agg(before, T), [4, 6, 11])
    assert result == [0, 4, 5.0] and types(result) == [int, int, float]


def test_aggregate_passes_strings_and_bools_through_single_selection():
    shift = sel(I, m("-", I, full(1)))
    assert one(agg(shift, g.Tokens(kind="str"), default="_"), "abc") == ["_", "a", "b"]
    assert one(agg(shift, g.Tokens(kind="bool"), default=False), [1, 0, 1]) == [False, True, False]


def test_aggregate_default_zero_next_to_strings_is_an_error():
    shift = sel(I, m("-", I, full(1)))
    with pytest.raises(RaspTypeError, match="attempted to create sequence with vals of different types"):
        one(agg(shift, g.Tokens(kind="str")), "abc")


def test_averaging_bools_or_strings_is_an_error():
    full_s = sel(full(1), full(1))
    with pytest.raises(RaspRuntimeError, match="asked to average multiple values, but they are non-numbers"):
        one(agg(full_s, m("==", g.Tokens(kind="str"), full("a"))), "ab")
    with pytest.raises(RaspRuntimeError, match="non-numbers"):
        one(agg(full_s, g.Tokens(kind="str")), "ab")
    assert one(agg(full_s, m("indicator", m("==", g.Tokens(kind="str"), full("a")))), "ab") == [0.5, 0.5]


def test_aggregate_type_checks_the_whole_column_not_the_selection():
    # Query 0 averages keys 0 and 1, both True. With an int elsewhere the column is an
    # int column and the bools average; in an all-bool column they may not.
    first_two = sel(I, full(1), "<=")
    assert one(agg(first_two, m("lookup", I, params=([True, True, 5],))), "abc") == [1.0, 1.0, 1.0]
    with pytest.raises(RaspRuntimeError, match="non-numbers"):
        one(agg(first_two, m("lookup", I, params=([True, True, False],))), "abc")


def test_sum_reduction():
    full_s = sel(full(1), full(1))
    result = one(agg(full_s, T, reduction="sum"), [1, 2, 4])
    assert result == [7, 7, 7] and types(result) == [int] * 3


def test_mixed_int_float_output_keeps_ints():
    result = one(agg(sel(I, I, "<="), T), [1, 2, 3])
    assert result == [1, 1.5, 2.0] and types(result) == [int, float, float]


def test_library_length_selector_width_and_sort():
    full_s = sel(full(1), full(1))
    is0 = m("indicator", m("==", I, full(0)))
    length = m("round", m("/", full(1), agg(full_s, is0)))

    def width(s: g.Selector) -> g.SOp:
        key0 = sel(I, full(0))
        share = agg(g.SelectorOr(left=s, right=key0), is0)
        had0 = agg(g.SelectorAnd(left=s, right=key0), full(1), 0)
        return m("round", m("+", m("-", m("/", full(1), share), full(1)), had0))

    before = g.SelectorOr(left=sel(T, T, "<"), right=g.SelectorAnd(left=sel(T, T), right=sel(I, I, "<")))
    sort = agg(sel(width(before), I), T)
    hist = width(sel(T, T))
    x = [5, 3, 5, 1, 3, 5]
    assert evaluate([length, sort, hist], [x]) == [[[6] * 6, sorted(x), [x.count(v) for v in x]]]


# ------------------------------------------------------------------------- tokens kinds


def test_token_kinds():
    assert one(g.Tokens(kind="int"), "123") == [1, 2, 3]
    assert one(g.Tokens(kind="float"), "12") == [1.0, 2.0]
    assert one(g.Tokens(kind="bool"), "01") == [True, True]  # bool("0") is True
    assert one(g.Tokens(kind="bool"), [0, 1]) == [False, True]
    assert one(g.Tokens(kind="str"), [1, 2]) == ["1", "2"]
    asis = one(g.Tokens(kind="asis"), [1, 2.5])
    assert asis == [1, 2.5] and types(asis) == [int, float]


def test_token_conversion_failure_names_the_input():
    with pytest.raises(RaspRuntimeError, match=r"tokens_int of 'h'.*input 1 \('hi'\)"):
        evaluate([g.Tokens(kind="int")], ["12", "hi"])


def test_asis_tokens_are_type_checked():
    with pytest.raises(RaspTypeError, match="vals of different types"):
        one(g.Tokens(kind="asis"), [1, "a"])


# ----------------------------------------------------------------------------- exact mode


def test_exact_one_third_times_three_is_one():
    node = m("*", m("/", full(1), full(3)), full(3))
    assert one(node, "ab") == [1.0, 1.0]
    exact = one(node, "ab", exact=True)
    assert exact == [1, 1] and all(isinstance(v, Fraction) for v in exact)


def test_exact_integer_mean_is_a_fraction():
    result = one(agg(sel(full(1), full(1)), T), [1, 2, 2], exact=True)
    assert result == [Fraction(5, 3)] * 3


def test_exact_float_mean_has_no_rounding():
    values = [0.1, 0.2, 0.3]
    result = one(agg(sel(full(1), full(1)), g.Tokens(kind="float")), values, exact=True)
    assert result == [(Fraction(0.1) + Fraction(0.2) + Fraction(0.3)) / 3] * 3


def test_exact_sqrt_refuses_irrational():
    with pytest.raises(RaspTypeError, match="exact mode cannot represent"):
        one(m("sqrt", T), [4, 2], exact=True)
    assert one(m("sqrt", T), [4, 9], exact=True) == [2, 3]


# --------------------------------------------------------------------------------- errors


def test_failing_node_carries_span_and_input_index():
    span = Span(Source("prog.rasp"), 3, 5, 3, 12)
    node = g.Map(op="/", inputs=(full(1), T), span=span)
    with pytest.raises(RaspRuntimeError) as info:
        evaluate([node], [[1, 2], [3, 0], [0, 1]])
    assert info.value.span == span
    assert "division by zero" in info.value.message
    assert "input 1 ([3, 0])" in info.value.message  # the first failing input


def test_long_inputs_are_abbreviated_in_errors():
    with pytest.raises(RaspRuntimeError) as info:
        evaluate([m("/", full(1), T)], [[0] * 100])
    assert "..." in info.value.message and len(info.value.message) < 200


def test_empty_and_non_sequence_inputs_are_rejected():
    with pytest.raises(RaspTypeError, match="input 1 is empty"):
        evaluate([T], [[1], []])
    with pytest.raises(RaspTypeError, match="input 0 is not a sequence"):
        evaluate([T], [5])
    for dtype in (np.int64, np.float64, "U1"):  # a batch of rows of no positions
        with pytest.raises(RaspTypeError, match="input 0 is empty"):
            evaluate_batch([T], np.empty((2, 0), dtype=dtype))
        with pytest.raises(RaspTypeError, match="input 0 is empty"):
            evaluate([T], np.empty((2, 0), dtype=dtype))


# ---------------------------------------------------------------------- batches, memory


def test_mixed_length_batch_keeps_input_order():
    node = m("+", T, I)
    inputs = [[1], [1, 1, 1], [2, 2], [5]]
    assert evaluate([node], inputs) == [[[x + i for i, x in enumerate(row)]] for row in inputs]


def test_tiny_memory_limit_splits_into_chunks_with_identical_results():
    s = sel(T, T, "<")
    node = agg(s, m("*", T, full(1.5)))
    rng = np.random.default_rng(0)
    inputs = rng.integers(0, 5, (50, 8)).tolist()
    one_input = estimate_bytes([node, s], 8)
    big = evaluate([node, s], inputs)
    small = evaluate([node, s], inputs, memory_limit_bytes=one_input * 3)
    assert small == big


def test_refuses_when_one_input_exceeds_the_limit():
    node = agg(sel(T, T, "<"), T)
    with pytest.raises(RaspResourceError) as info:
        evaluate([node], [[1] * 100], memory_limit_bytes=1000)
    text = info.value.message
    assert f"{estimate_bytes([node], 100):,}" in text and "1,000" in text
    assert "memory_limit_bytes" in text and "--memory-limit" in text


def test_each_node_runs_once(monkeypatch):
    import rasp_sim.evaluation.evaluate as ev

    calls: list[g.Node] = []
    real = ev._compute

    def counting(node, *args):
        calls.append(node)
        return real(node, *args)

    monkeypatch.setattr(ev, "_compute", counting)
    shared = m("+", T, full(1))
    unused = m("/", full(1), full(0))  # not an ancestor of the roots: never evaluated
    roots = [m("*", shared, shared), agg(sel(shared, shared), shared)]
    evaluate(roots + [], [[1, 2]])
    assert unused not in calls
    assert len(calls) == len({id(c) for c in calls}) == len(list(g.ancestors(roots)))


def test_evaluate_batch_returns_arrays():
    node = m("+", T, I)
    out = evaluate_batch([node, sel(I, I)], np.array([[1, 2], [3, 4]]))
    assert out[node].tolist() == [[1, 3], [3, 5]]
    assert out[node].dtype == np.int64
    with pytest.raises(RaspTypeError, match="one length"):
        evaluate_batch([node], [[1], [1, 2]])


@pytest.mark.parametrize("source", ["same = select(tokens, tokens, ==); y = selector_width(same);",
                                    "y = sort(tokens, tokens);", "y = tokens + \"!\";",
                                    "y = aggregate(select(indices, length - indices - 1, ==), tokens);",
                                    "y = tokens_int;"])
@pytest.mark.parametrize("rows", [["abca", "hhha", "zay4"], ["ab\0c", "abcd"], ["12", "34"]])
def test_an_array_of_characters_gives_what_its_rows_as_lists_give(source, rows, monkeypatch):
    # A NumPy array of characters, one input a row, is taken whole (no element-wise
    # conversion) and gives what its rows as lists of strings give; an element "" (NumPy's
    # "\0") goes the element-wise way.
    from rasp_sim.language.interpreter import Interpreter

    interpreter = Interpreter()
    interpreter.run_source(source, "<test>")
    root = interpreter.lookup("y")
    array = np.array([list(x) for x in rows])
    as_lists = outcome(lambda: evaluate_batch([root], array.tolist())[root].tolist())
    converted = []
    convert = sem.convert_token
    monkeypatch.setattr(sem, "convert_token", lambda *a, **k: converted.append(a) or convert(*a, **k))
    assert outcome(lambda: evaluate_batch([root], array)[root].tolist()) == as_lists
    assert bool(converted) == ("tokens_int" in source or "\0" in "".join(rows))
    assert outcome(lambda: evaluate([root], array)) == outcome(
        lambda: evaluate([root], array.tolist()))


@FAST
@given(aggregations({"int": SMALL_INTS}), st.sampled_from([*BINARY_OPS, "round"]), st.sampled_from([3, 0.5]))
def test_ops_on_mixed_aggregate_results_match_semantics(data, op, c):
    """Aggregate results that mix ints and float means carry their float64 values along
    (evaluation/columns.py `mixed_numeric`); ops reading them must still be exact."""
    b, sel, values, default = data
    got = outcome(lambda: aggregate(np.array(sel), column(values), default, "mean", False))
    if got[0] == "error":
        return
    result = aggregate(np.array(sel), column(values), default, "mean", False)
    rows = result.tolist()
    other = column([[c] * len(rows[0])] * b)
    if op == "round":
        check_against(lambda: apply_map(op, [result], (), False),
                      lambda r: checked_row([atom_function(op)(x) for x in rows[r]]), b)
        return
    for left, right, lrows, rrows in ((result, other, rows, other.tolist()), (other, result, other.tolist(), rows)):
        check_against(
            lambda: apply_map(op, [left, right], (), False),
            lambda r: checked_row([atom_function(op)(x, y) for x, y in zip(lrows[r], rrows[r])]),
            b,
        )


def test_a_mixed_aggregate_column_is_held_as_numbers():
    """aggregate's int/float column is float64 values plus an is-int mask (columns.py
    `MixedColumn`), not Python objects; it reads as the atoms (ints where the mask is
    set), and slices of it stay mixed."""
    sel_rows = np.array([[[True, False, False], [True, True, False], [True, True, True]]] * 2)
    result = aggregate(sel_rows, column([[1, 2, 4], [5, 6, 10]]), 0, "mean", False)
    assert isinstance(result, MixedColumn)
    assert result.values.dtype == np.float64 and result.ints.tolist() == [[True, False, False]] * 2
    rows = result.tolist()
    assert rows == [[1, 1.5, 7 / 3], [5, 5.5, 7.0]]
    assert [list(map(type, row)) for row in rows] == [[int, float, float]] * 2
    assert float_view(result) is result.values
    assert result[:, :1].dtype == np.int64 and result[:, 1:].dtype == np.float64  # narrowest
    reversed_floats = apply_map("/", [result[:, ::-1], column([[2] * 3] * 2)], (), False)
    assert reversed_floats.tolist() == [[x / 2 for x in row[::-1]] for row in rows]


def test_a_mixed_column_with_an_int_beyond_2_53_stays_objects():
    """An int that float64 would round (2^53 + 1) keeps the column as Python objects."""
    exact_ints = column([[2**53 - 1, 0.5]])
    assert isinstance(exact_ints, MixedColumn)
    big = column([[2**53 + 1, 0.5]])
    assert big.dtype == object and not isinstance(big, MixedColumn)
    assert big.tolist() == [[2**53 + 1, 0.5]]
    doubled = apply_map("+", [big, big], (), False)
    assert doubled.tolist() == [[2**54 + 2, 1.0]]


def test_exact_division_of_a_gathered_object_column_stays_rational():
    # A gather out of a column mixing ints and Fractions leaves ints in an object column;
    # `/` on it must still divide exactly (it used to take the float fast path).
    from fractions import Fraction

    from rasp_sim.language import library

    expression = "aggregate(select(indices, indices - indices % 2, ==), tokens_asis, 0) / 3"
    (values,) = library.run(expression, [[1, 0, 3, Fraction(1)]], exact=True)
    assert values == [Fraction(1, 3), Fraction(1, 3), Fraction(1), Fraction(1)]
    assert all(type(v) is Fraction for v in values)


@FAST
@given(
    aggregations(dict(AGG_VALUES, integral=st.integers(-3, 3).map(float))),
    st.sampled_from(["mean", "sum"]),
    st.sampled_from(["as drawn", "constant", "sparse"]),
)
def test_aggregate_of_one_row_for_the_whole_batch(data, reduction, shape):
    """A value column that is one (1, n) row for the batch (e.g. `indicator(indices == 0)`
    or a constant) is checked once, and a constant or sparse one is summed from the
    selector's columns without a matrix product: the result must equal both the semantics
    and the same aggregate over the row copied into every input."""
    b, sel, values, default = data
    row = [list(values[0])]
    if shape == "constant":
        row = [[row[0][0]] * len(row[0])]
    elif shape == "sparse":  # one nonzero value, the rest zeros of the same type
        row = [[x if i == 0 else type(x)(0) for i, x in enumerate(row[0])]]
    one_row = outcome(lambda: aggregate(np.array(sel), column(row), default, reduction, False).tolist())
    copied = outcome(lambda: aggregate(np.array(sel), column(row * b), default, reduction, False).tolist())
    assert one_row[0] == copied[0] and (
        same_rows(one_row[1], copied[1]) if one_row[0] == "ok" else one_row[1] == copied[1])
    check_against(
        lambda: aggregate(np.array(sel), column(row), default, reduction, False),
        aggregate_reference(sel, row * b, default, reduction, False),
        b,
    )


@FAST
@given(st.sampled_from(["==", "!=", "<", ">", "<=", ">="]), st.integers(1, 3), st.integers(1, 4), st.data())
def test_select_on_characters_of_every_code_width(op, b, n, data):
    """Single characters are compared as code points narrowed to uint8 / uint16 when they
    fit (elementwise.py `_string_ranks`); each width must order like Python's strings."""
    alphabet = data.draw(st.sampled_from(["ab\0é", "aé\u0101\u20ac", "a\u20ac\U0001d11e"]))
    char = st.sampled_from(alphabet)
    keys, queries = ([[data.draw(char) for _ in range(n)] for _ in range(b)] for _ in range(2))

    def row(r: int) -> list:
        return [[atom_function(op)(k, q) for k in keys[r]] for q in queries[r]]

    check_against(lambda: select(column(keys), column(queries), op, False), row, b)


def test_values_that_read_no_tokens_are_computed_once_per_group(monkeypatch):
    """Chunks reuse the first chunk's rows for nodes that read no tokens (evaluate.py);
    the results must equal a one-chunk run, and only token-reading nodes run per chunk."""
    import rasp_sim.evaluation.evaluate as ev

    key0 = sel(I, full(0))
    first = agg(g.SelectorOr(left=key0, right=sel(T, T)), m("indicator", m("==", I, full(0))))
    invariant = agg(key0, m("+", I, full(1)))  # reads no tokens: one row for all inputs
    roots = [m("+", first, invariant), invariant]
    inputs = np.random.default_rng(1).integers(0, 3, (40, 6)).tolist()
    whole = evaluate(roots, inputs)
    calls: list[g.Node] = []
    real = ev._compute
    monkeypatch.setattr(ev, "_compute", lambda node, *args: (calls.append(node), real(node, *args))[1])
    # none kept from the call above (`test_values_that_read_no_tokens_are_kept_between_calls`)
    monkeypatch.setattr(ev, "_INVARIANTS", ev._Invariants(256, 2**24))
    chunked = evaluate(roots, inputs, memory_limit_bytes=estimate_bytes(roots, 6) * 4)
    assert same_rows([sum(r, []) for r in chunked], [sum(r, []) for r in whole])
    chunks = calls.count(T)
    assert chunks > 2
    for node in g.ancestors(roots):
        reads_tokens = any(a is T for a in g.ancestors([node]))
        assert calls.count(node) == (chunks if reads_tokens else 1), node
    assert all(r[1] == [1] * 6 for r in whole)
    assert [r[0] for r in whole] == [[x + 1 for x in r[0]] for r in evaluate([first], inputs)]


@pytest.mark.parametrize("n", [12, 300])  # 300: the counts no longer fit uint8, the product path
@pytest.mark.parametrize("kind", ["constant", "one-hot", "dense"])
def test_aggregate_of_wide_one_row_columns(n, kind):
    rng = np.random.default_rng(n)
    row = {"constant": [3] * n, "one-hot": [0] * (n - 1) + [5], "dense": rng.integers(-9, 9, n).tolist()}[kind]
    sel = (rng.random((2, n, n)) < rng.choice([0.01, 0.5], (2, n, 1))).tolist()
    check_against(
        lambda: aggregate(np.array(sel), column([row]), 0, "mean", False),
        aggregate_reference(sel, [row, row], 0, "mean", False),
        2,
    )


# ------------------------------------------------- evaluate_defined: failing inputs in bulk

# Programs that fail on some inputs and not others, in different nodes: a division by a
# token, a mean of bools only (a mixed bool/int column averages), a selector's side,
# tokens_int of a letter; each with the tokens its inputs are drawn from.
PARTIAL_PROGRAMS = {
    "division": ("x = tokens_int; y = aggregate(select(indices, indices, <=), 6 / x);", "y",
                 [0, 1, 2, 3]),
    "mixed-mean": ("x = tokens_int; v = (x == 1) if x < 2 else x;"
                   "y = aggregate(full_s, v) > 0;", "y", [0, 1, 2, 3]),
    "selector": ("x = tokens_int; s = select(6 / x, indices, <);", "s", [0, 1, 2]),
    "tokens": ("y = aggregate(full_s, tokens_int);", "y", ["1", "2", "a"]),
}


@FAST
@given(st.sampled_from(sorted(PARTIAL_PROGRAMS)), st.integers(1, 4), st.data())
def test_evaluate_defined_keeps_exactly_the_inputs_the_program_is_defined_on(name, n, data):
    from interp_helpers import run
    from rasp_sim.evaluation.evaluate import evaluate_defined

    text, root_name, tokens = PARTIAL_PROGRAMS[name]
    root = run(text).lookup(root_name)
    batch = data.draw(st.lists(st.lists(st.sampled_from(tokens), min_size=n, max_size=n),
                               min_size=1, max_size=40))
    as_matrix = isinstance(tokens[0], int) and data.draw(st.booleans())
    values, defined = evaluate_defined([root], np.array(batch) if as_matrix else batch)
    expected = {}  # the oracle: every input alone
    for i, x in enumerate(batch):
        try:
            expected[i] = evaluate([root], [x])[0][0]
        except RaspError:
            pass
    assert defined.tolist() == sorted(expected)
    got = values[root].tolist()
    assert len(got) == len(defined)
    def types(row: list) -> list:  # of an s-op's atoms, or a selector's rows' bools
        return [type(a) for v in row for a in (v if isinstance(v, list) else [v])]
    for i, row in zip(defined.tolist(), got):
        assert row == expected[i] and types(row) == types(expected[i])


def test_a_program_evaluated_again_is_planned_once():
    from rasp_sim.evaluation import evaluate as ev
    from rasp_sim.language.interpreter import Interpreter

    interpreter = Interpreter()
    interpreter.run_source("y = sort(tokens, tokens);\n", "<plan>")
    root = interpreter.lookup("y")
    first = ev.evaluate_batch([root], ["cab", "bca"])[root]
    hits = ev._plan.cache_info().hits
    again = ev.evaluate_batch([root], ["cab", "bca"])[root]
    assert ev._plan.cache_info().hits == hits + 1
    assert first.tolist() == again.tolist() == [["a", "b", "c"]] * 2
