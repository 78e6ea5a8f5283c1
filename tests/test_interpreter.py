"""The language end to end (parse + interpret + evaluate): docs/language.md.

Expected values are worked out by hand from the spec (and Python's own operators for
atoms, which the spec says RASP follows exactly), not copied from the implementation.
"""
from __future__ import annotations

from fractions import Fraction

import pytest

import rasp_sim
from rasp_sim.core import graph
from rasp_sim.base.errors import RaspError, RaspNameError, RaspRuntimeError, RaspTypeError

from .interp_helpers import on, run, sop, value

# --------------------------------------------------------------------------- section 4


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("7 % 3 * 2", 1),  # 7 % (3 * 2)
        ("2 * 3 ^ 2", 18),  # 2 * (3 ^ 2)
        ("2 ^ 3 ^ 2", 64),  # (2 ^ 3) ^ 2
        ("-2 ^ 2", 4),  # (-2) ^ 2
        ("-0.5 ^ 2", 0.25),
        ("not 1 == 2", False),  # (not 1) == 2
        ("True or False and False", False),  # (True or False) and False
        ("1 if True else 2 if False else 3", 3),  # (1 if True else 2) if False else 3
        ("1 < 2 < 3", True),  # (1 < 2) < 3 = True < 3
        ("3 > 2 > 1", False),  # (3 > 2) > 1 = True > 1
        ("-[3, 4][0]", -3),  # postfix binds tightest
        ("1 + 2 if False else 7", 7),  # (1 + 2) if False else 7
        ("2 in [1] if False else [2]", True),  # 2 in ([1] if False else [2])
    ],
)
def test_quirk_table_values(expr: str, expected: object) -> None:
    result = value(f"x = {expr};")
    assert result == expected and type(result) is type(expected)


def test_not_binds_before_comparison_on_sops() -> None:
    # (not tokens) == "a": not of a non-empty string is False, and False == "a" is False.
    assert sop('x = not tokens == "a";', "aba") == [False, False, False]


def test_in_binds_looser_than_and() -> None:
    # "a" in (["a"] and False): the container is False, which is an error.
    with pytest.raises(RaspTypeError, match="expects X to be list or s-op"):
        run('x = "a" in ["a"] and False;')


def test_postfix_before_not() -> None:
    assert value("def f(a) { return a; } x = not f(0);") is True


# --------------------------------------------------------------------------- atoms (6.1)


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("4 / 2", 2.0),
        ("7 % -3", -2),
        ("-7 % 3", 2),
        ("2 ^ -1", 0.5),
        ('"ab" * 2', "abab"),
        ("[1, 2] + [3]", [1, 2, 3]),
        ("True + 1", 2),
        ("3 == 3.0", True),
        ("1 and 2", 2),
        ('0 or "x"', "x"),
        ("not []", True),
        ("round(2.5)", 2),
        ("round(3.5)", 4),
        ("round(-0.5)", 0),
        ("007", 7),
    ],
)
def test_atoms_follow_python(expr: str, expected: object) -> None:
    result = value(f"x = {expr};")
    assert result == expected and type(result) is type(expected)


def test_and_or_evaluate_both_operands() -> None:
    with pytest.raises(RaspRuntimeError, match="division by zero") as info:
        run("x = False and 1/0;")
    assert (info.value.span.line, info.value.span.column) == (1, 15)




# ----------------------------------------------------------------- elementwise (6.3)


def test_lifting_broadcasts_atoms_in_either_order() -> None:
    assert sop("x = 1 - tokens_int;", [1, 2, 3]) == [0, -1, -2]
    assert sop("x = tokens_int * 2 + 1;", [1, 2, 3]) == [3, 5, 7]
    assert sop('x = tokens + "!";', "ab") == ["a!", "b!"]


def test_lifted_atoms_are_full_nodes() -> None:
    node = value("x = tokens_int + 3;")
    assert isinstance(node, graph.Map) and node.op == "+"
    assert isinstance(node.inputs[1], graph.Full) and node.inputs[1].value == 3


def test_unary_on_sops() -> None:
    assert sop("x = -tokens_int;", [1, -2]) == [-1, 2]
    assert sop("x = +tokens_int;", [1, -2]) == [1, -2]
    assert sop("x = not tokens_int;", [0, 3]) == [True, False]


def test_sop_and_or_give_bools() -> None:
    assert sop("x = tokens_int and 5;", [0, 2]) == [False, True]
    assert sop("x = 0 or tokens_int;", [0, 2]) == [False, True]


def test_indicator_and_round() -> None:
    assert sop('x = indicator(tokens == "a");', "aba") == [1, 0, 1]
    assert sop("x = round(tokens_float);", ["0.5", "1.5", "2.5", "-0.5"]) == [0, 2, 2, 0]



def test_not_equal_extension() -> None:
    assert sop("x = tokens_int != 2;", [1, 2]) == [True, False]
    assert value("x = 1 != 2;") is True


# ---------------------------------------------------------------- select/aggregate (6.4, 6.5)


def test_select_matrix_orientation() -> None:
    # M[q][k] = keys[k] < queries[q]: query q selects the keys strictly before it.
    assert sop("x = select(indices, indices, <);", "abc") == [
        [False, False, False],
        [True, False, False],
        [True, True, False],
    ]
    assert sop("x = select(indices, 0, ==);", "abc") == [[True, False, False]] * 3
    assert sop("x = select(0, indices, ==);", "abc") == [
        [True, True, True],
        [False, False, False],
        [False, False, False],
    ]


def test_selector_composition() -> None:
    text = "a = select(indices, indices, <); b = select(indices, 1, ==);"
    assert sop(text + "x = a and b;", "abc") == [[False] * 3, [False] * 3, [False, True, False]]
    assert sop(text + "x = a or b;", "abc") == [
        [False, True, False],
        [True, True, False],
        [True, True, False],
    ]
    assert sop(text + "x = not b;", "ab") == [[True, False], [True, False]]


def test_selector_with_non_selector_is_an_error() -> None:
    with pytest.raises(RaspTypeError, match="Cannot apply and/or between selector and non-selector"):
        run("x = select(indices, indices, <) and tokens;")
    with pytest.raises(RaspTypeError, match="Cannot apply and/or between selector and non-selector"):
        run("x = True or select(indices, indices, <);")



def test_aggregate_rules() -> None:
    sel = "s = select(indices, indices, <);"
    # query 0 selects nothing -> default 0; query 1 one key -> value unchanged (int);
    # query 2 two keys -> float mean.
    assert sop(sel + "x = aggregate(s, tokens_int);", [4, 6, 9]) == [0, 4, 5.0]


def test_aggregate_single_values_pass_unchanged() -> None:
    result = sop('x = aggregate(select(indices, indices, ==), tokens, "");', "ab")
    assert result == ["a", "b"]



def test_aggregate_needs_a_selector() -> None:
    with pytest.raises(RaspTypeError, match="Expected selector, got: tokens"):
        run("x = aggregate(tokens, tokens);")


def test_averaging_strings_fails_on_evaluation() -> None:
    node = value("x = aggregate(select(1, 1, ==), tokens);")
    with pytest.raises(RaspRuntimeError, match="non-numbers") as info:
        on(node, "ab")
    assert info.value.span.line == 1


# --------------------------------------------------------------------------- ternary (6.7)


def test_sop_ternary_computes_both_branches() -> None:
    assert sop("x = tokens_int if tokens_int > 1 else 0;", [1, 2, 3]) == [0, 2, 3]
    node = value("x = 0 if tokens_int == 0 else 1 / tokens_int;")
    with pytest.raises(RaspRuntimeError, match="division by zero"):
        on(node, [0, 1])


def test_recursion_through_lazy_ternary() -> None:
    assert value("def fact(n) { return 1 if n == 0 else n * fact(n - 1); } x = fact(5);") == 120


# ---------------------------------------------------------------------- indexing (6.8)


def test_list_and_string_indexing() -> None:
    assert value("x = [1, 2, 3][-1];") == 3
    assert value('x = "abc"[1];') == "b"



def test_list_and_dict_indexed_by_sop_are_lookups() -> None:
    assert sop('x = ["a", "b", "c"][tokens_int];', [2, 0]) == ["c", "a"]
    assert sop('x = {"a": 1, "b": 2}[tokens];', "bab") == [2, 1, 2]



def test_sop_indexed_by_int_broadcasts() -> None:
    assert sop("x = tokens_int[1];", [5, 7, 9]) == [7, 7, 7]
    assert sop("x = tokens_int[-1];", [5, 7, 9]) == [9, 9, 9]



# ---------------------------------------------------------------------- membership (6.8)


def test_membership_forms() -> None:
    assert value("x = 2 in [1, 2];") is True
    assert sop('x = "l" in tokens;', "hello") == [True] * 5
    assert sop('x = "z" in tokens;', "hello") == [False] * 5
    assert sop('x = tokens in ["a", "b"];', "abc") == [True, True, False]


def test_an_sop_equals_no_list_dict_or_function() -> None:
    """As in the original, which compares each atom with the value in Python: False
    everywhere, with the s-op's layer (1 here: the original's width_and_depth too)."""
    assert sop("x = indices == [1];", "abc") == [False] * 3
    assert sop('x = {"a": 1} == tokens;', "abc") == [False] * 3
    assert sop("def f(a) { return a; } x = tokens == f;", "ab") == [False] * 2
    program = "x = aggregate(select(indices, indices, ==), tokens) == [1];"
    assert rasp_sim.parse(program).analyse("x").heads == (1,)
    with pytest.raises(RaspError):  # `<` with a list fails, as the original's
        sop("x = indices < [1];", "abc")


def test_membership_of_selectors_is_an_error() -> None:
    with pytest.raises(RaspTypeError, match="don't check if select is contained"):
        run("x = select(1, 1, ==) in [1];")


# ------------------------------------------------------------ lists, dicts, builtins (6.9)


def test_comprehensions_use_a_nested_scope() -> None:
    interpreter = run("x = [i * 2 for i in [1, 2, 3]]; d = {k: v for k, v in zip([1, 2], [3, 4])};")
    assert interpreter.lookup("x") == [2, 4, 6]
    assert interpreter.lookup("d") == {1: 3, 2: 4}
    with pytest.raises(RaspNameError, match="Undefined variable: i"):
        interpreter.lookup("i")


def test_iterating_a_dict_gives_keys() -> None:
    assert value('x = [k for k in {"a": 1, "b": 2}];') == ["a", "b"]


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("range(3)", [0, 1, 2]),
        ("range(1, 7, 2)", [1, 3, 5]),
        ("zip([1, 2], [3, 4])", [[1, 3], [2, 4]]),
        ("len([1, [2, 3]])", 2),
    ],
)
def test_builtins(expr: str, expected: object) -> None:
    assert value(f"x = {expr};") == expected


@pytest.mark.parametrize(
    "expr, message",
    [
        ("range(1.5)", "range expects all integer inputs"),
        ("range(1, 2, 3, 4)", "wrong number of inputs to range"),
        ('len("ab")', "attempting to compute length of non-list"),
        ("zip([1], [1, 2])", "attempting to zip lists of length 1"),
        ("zip([1], 2)", "2 -th element is not list"),
        ('{[1]: 2}', "dictionary keys can only be atoms"),
        ("[x for x in 3]", "list comprehension should have got a list or dict"),
    ],
)
def test_builtin_errors(expr: str, message: str) -> None:
    with pytest.raises(RaspTypeError, match=message):
        run(f"y = {expr};")


# --------------------------------------------------------------------------- loops (6.10)


def test_for_loop_binds_in_enclosing_scope() -> None:
    interpreter = run("t = 0; for i in [1, 2, 3] { t = t + i; }")
    assert interpreter.lookup("t") == 6 and interpreter.lookup("i") == 3


def test_for_loop_partial_effects_persist() -> None:
    from rasp_sim.language.interpreter import Interpreter

    interpreter = Interpreter()
    with pytest.raises(RaspRuntimeError, match="division by zero"):
        interpreter.run_source("for i in [1, 0, 2] { q = 1 / i; }", "loop.rasp")
    assert interpreter.lookup("q") == 1.0 and interpreter.lookup("i") == 0


def test_for_loop_unpacks() -> None:
    assert value("x = 0; for a, b in [[1, 2], [3, 4]] { x = x + a * b; }") == 14


# -------------------------------------------------------------------- multi-assign (6.11)


def test_multi_assignment() -> None:
    interpreter = run("a, b = 1, 2; c = 1, 2; def two() { return 3, 4; } d, e = two();")
    assert [interpreter.lookup(n) for n in "abcde"] == [1, 2, [1, 2], 3, 4]


def test_multi_assignment_count_mismatch_binds_nothing() -> None:
    from rasp_sim.language.interpreter import Interpreter

    interpreter = Interpreter()
    with pytest.raises(RaspTypeError, match="expected 3 values, but got: 2"):
        interpreter.run_source("a, b, c = 1, 2;", "m.rasp")
    with pytest.raises(RaspNameError):
        interpreter.lookup("a")


# ------------------------------------------------------------------- functions (6.12)


def test_closures_are_by_reference() -> None:
    assert value("y = 1; def f(a) { return a + y; } y = 2; x = f(1);") == 3


def test_functions_are_first_class() -> None:
    text = "def twice(g, v) { return g(g(v)); } def inc(a) { return a + 1; } fs = [inc]; x = twice(fs[0], 1);"
    assert value(text) == 3



def test_each_call_has_a_fresh_scope() -> None:
    interpreter = run("def f(a) { inner = a; return inner; } x = f(1);")
    with pytest.raises(RaspNameError, match="Undefined variable: inner"):
        interpreter.lookup("inner")


def test_returned_sop_is_renamed() -> None:
    node = value("def inc(s) { return s + 1; } x = inc(tokens_int);", "x")
    assert node.name == "x"  # then renamed again by the assignment
    node = value("def inc(s, k) { return s + k; } y = [inc(tokens_int, 2)]; x = y[0];")
    assert node.name == "x"
    node = value("def inc(s, k) { return s + k; } y = [inc(tokens_int, 2)];", "y")[0]
    assert node.name == "inc(tokens_int , 2)"


def test_library_names_may_be_parameters() -> None:
    assert value("def f(length) { return length + 1; } x = f(1);") == 2


def test_base_value_parameter_fails_at_call_time() -> None:
    interpreter = run("def f(indices) { return 1; }")
    with pytest.raises(RaspNameError, match="Cannot set reserved name: indices"):
        interpreter.run_source("x = f(1);", "call.rasp")


def test_fresh_selectors_per_call() -> None:
    interpreter = run("def s() { return select(indices, indices, <); } a = s(); b = s();")
    assert interpreter.lookup("a") is not interpreter.lookup("b")



# -------------------------------------------------------------- reserved names (5.1, 6.13)


@pytest.mark.parametrize(
    "name", ["tokens_str", "tokens_int", "indices", "True", "out", "range", "zip", "len", "get", "length", "sort", "full_s"]
)
def test_reserved_names_cannot_be_assigned(name: str) -> None:
    with pytest.raises(RaspNameError, match=f"Cannot set reserved name: {name}") as info:
        run(f"{name} = 1;")
    assert info.value.span.line == 1


def test_tokens_is_an_ordinary_variable() -> None:
    assert sop("tokens = tokens_int; x = tokens + 1;", [1, 2]) == [2, 3]



# ----------------------------------------------------------------------------- out (6.14)


def test_out_holds_the_last_value() -> None:
    interpreter = run("1 + 2; a = out; b = 5; c = out + 1;")
    assert interpreter.lookup("a") == 3
    # `out` is rebound after every subexpression: reading it gives 5 (b's value), then
    # evaluating `1` rebinds it, and the sum is 6.
    assert interpreter.lookup("c") == 6


# ----------------------------------------------------------------------- exact mode


def test_exact_mode() -> None:
    assert value("x = 1/3*3 == 1;", exact=True) is True
    assert value("x = 0.1 + 0.2 == 0.3;", exact=True) is True
    assert value("x = 0.1 + 0.2 == 0.3;") is False
    assert value("x = 0.1;", exact=True) == Fraction(1, 10)
    assert sop("x = tokens_int / 3;", [1, 2], exact=True) == [Fraction(1, 3), Fraction(2, 3)]


# ----------------------------------------------------------------------- extensions


def test_extension_maps() -> None:
    assert value("x = sqrt(16);") == 4.0
    assert value("x = abs(-3);") == 3
    assert sop("x = abs(tokens_int);", [-1, 2]) == [1, 2]
    assert sop("x = exp(tokens_int) > 2;", [0, 1]) == [False, True]


def test_sum_aggregate_extension() -> None:
    assert sop("x = sum(select(indices, indices, <=), tokens_int);", [1, 2, 3]) == [1, 3, 6]


def test_whitespace_builtins_extension() -> None:
    assert sop("x = aggregate (select (indices, indices, ==), tokens_int);", [4, 5]) == [4, 5]
    assert value("x = len ([1, 2]) + len (range (3));") == 5
    assert value("x = zip ([1], [2]);") == [[1, 2]]


def test_user_bindings_shadow_extensions() -> None:
    assert value("def exp(a) { return 42; } x = exp(1);") == 42
    assert value("def aggregate (a, b) { return a + b; } x = aggregate (1, 2);") == 3


def test_strict_mode_disables_extensions() -> None:
    with pytest.raises(RaspNameError, match="Undefined variable: exp"):
        run("x = exp(1);", strict=True)
    with pytest.raises(RaspNameError, match="Undefined variable: sum"):
        run("x = sum(select(1, 1, ==), 1);", strict=True)


# ------------------------------------------------------------------------ application


def test_applying_sops_and_selectors() -> None:
    interpreter = run("t = tokens_int * 3; a = t([0, 1, 2]); s = select(indices, indices, <); m = s(\"ab\");")
    assert interpreter.lookup("a") == [0, 3, 6]
    assert interpreter.lookup("m") == [[False, False], [True, False]]


def test_applying_needs_one_iterable() -> None:
    with pytest.raises(RaspTypeError, match="expects iterable input, got: 5"):
        run("x = tokens(5);")
    with pytest.raises(RaspTypeError, match="wrong number of args for evaluate unfinished"):
        run('x = tokens("a", "b");')


def test_applying_an_atom_is_an_error() -> None:
    with pytest.raises(RaspTypeError, match="cannot apply atom 5"):
        run('x = 5("abc");')


def test_last_assigned_name() -> None:
    assert run("a = 1; def f(x) { return x; } b = tokens; f(1);").last_assigned_name == "b"


def test_unary_minus_on_a_selector_is_an_error() -> None:
    with pytest.raises(RaspTypeError, match="cannot apply neg to a selector"):
        run("x = -select(1, 1, ==);")


def test_sops_keep_the_dependencies_they_were_built_with() -> None:
    # Rebinding `a` later does not change `b`, built from the old `a` (6.14).
    assert sop("a = tokens_int; b = a + 1; a = tokens_str; x = b;", [1, 2]) == [2, 3]


def test_the_documented_divergences_of_in_and_string_formatting() -> None:
    """docs/language.md, "Divergences from the original": an atom is in a list only if an
    element equals it (the original says True for any list holding an s-op), and `%` on a
    string and an s-op formats each element (the original formats the s-op object)."""
    assert value("x = 3 in [indices];") is False
    assert value("x = 3 in [indices, 3];") is True
    assert sop('x = "%s!" % tokens;', "ab") == ["a!", "b!"]
