"""The original's precedence and associativity quirks (docs/language.md).

Each parse is rendered back with every operation parenthesised (`ast_text.unparse`), so
the expected shape is written in RASP itself: `7 % 3 * 2` must come back as
`(7 % (3 * 2))`, not Python's `((7 % 3) * 2)`.
"""
from __future__ import annotations

import pytest
from ast_text import unparse
from hypothesis import given, settings
from hypothesis import strategies as st

from rasp_sim.language import ast
from rasp_sim.language.parser import parse_expression


def shape(text: str) -> str:
    return unparse(parse_expression(text))


# Every row of the quirk table, plus the Python reading it must NOT produce.
QUIRK_TABLE = [
    ("7 % 3 * 2", "(7 % (3 * 2))", "((7 % 3) * 2)"),
    ("2 * 3 ^ 2", "(2 * (3 ^ 2))", None),
    ("2 ^ 3 ^ 2", "((2 ^ 3) ^ 2)", "(2 ^ (3 ^ 2))"),
    ("-2 ^ 2", "((- 2) ^ 2)", "(- (2 ^ 2))"),
    ("-0.5 ^ 2", "((- 0.5) ^ 2)", "(- (0.5 ^ 2))"),
    ("not 1 == 2", "((not 1) == 2)", "(not (1 == 2))"),
    ('not tokens == "a"', '((not tokens) == "a")', '(not (tokens == "a"))'),
    ("True or False and False", "((True or False) and False)", "(True or (False and False))"),
    ("1 if True else 2 if False else 3",
     "((1 if True else 2) if False else 3)", "(1 if True else (2 if False else 3))"),
    ('"a" in ["a"] and False', '("a" in (["a"] and False))', '(("a" in ["a"]) and False)'),
    ("x + 1 if c else y", "((x + 1) if c else y)", None),
    ("a in b if c else d", "(a in (b if c else d))", "((a in b) if c else d)"),
    ("1 < 2 < 3", "((1 < 2) < 3)", None),
    ("3 > 2 > 1", "((3 > 2) > 1)", None),
    ("-x[0]", "(- x[0])", "(- x)[0]"),
    ("not f(x)", "(not f(x))", "(not f)(x)"),
]


@pytest.mark.parametrize(("text", "original", "python"), QUIRK_TABLE)
def test_quirk_table_row(text, original, python):
    assert shape(text) == original
    assert shape(text) != python


def test_quirk_table_rows_by_node_type():
    """The first row spelled out as nodes, in case unparse itself were wrong."""
    tree = parse_expression("7 % 3 * 2")
    assert isinstance(tree, ast.BinaryOp) and tree.op == "%"
    assert isinstance(tree.left, ast.IntLiteral) and tree.left.value == 7
    assert isinstance(tree.right, ast.BinaryOp) and tree.right.op == "*"
    assert (tree.right.left.value, tree.right.right.value) == (3, 2)
    minus = parse_expression("-3")
    assert isinstance(minus, ast.UnaryOp) and minus.op == "-"
    assert isinstance(minus.operand, ast.IntLiteral) and minus.operand.value == 3


@pytest.mark.parametrize(("text", "expected"), [
    # the ternary's middle operand is a full expression
    ("a if b in c else d", "(a if (b in c) else d)"),
    ("a if b if c else d else e", "(a if (b if c else d) else e)"),
    # its else-operand stops below the ternary and `in`, but takes and/or
    ("a if c else b and d", "(a if c else (b and d))"),
    ("a if c else b in d", "((a if c else b) in d)"),
    # `in` is left-associative and the loosest
    ("a in b in c", "((a in b) in c)"),
    ("a + 1 in b", "((a + 1) in b)"),
    # every binary level is left-associative
    ("a - b + c", "((a - b) + c)"),
    ("a / b * c", "((a / b) * c)"),
    ("a % b % c", "((a % b) % c)"),
    ("a or b and c or d", "(((a or b) and c) or d)"),
    ("a == b < c", "((a == b) < c)"),
    # % between * and +
    ("a * b % c", "((a * b) % c)"),
    ("a + b % c", "(a + (b % c))"),
    ("a % b + c", "((a % b) + c)"),
    ("a % b ^ c", "(a % (b ^ c))"),
    # prefix operators: tighter than every binary operator, looser than postfix
    ("- 2 * 3", "((- 2) * 3)"),
    ("2 ^ -1", "(2 ^ (- 1))"),
    ("not a and b", "((not a) and b)"),
    ("- - 3", "(- (- 3))"),
    ("not not x", "(not (not x))"),
    ("+x ^ 2", "((+ x) ^ 2)"),
    ("a == not b", "(a == (not b))"),
    ("-f(x)(y)", "(- f(x)(y))"),
    # postfix operators chain left to right on any primary
    ("f(x)(y)[0]", "f(x)(y)[0]"),
    ("[1, 2][0]", "[1, 2][0]"),
    ('"abc"[1]', '"abc"[1]'),
    ("(a + b)[0]", "(a + b)[0]"),
    ("select(a, b, ==)(x)", "select(a, b, ==)(x)"),
    ("round(x)[0]", "round(x)[0]"),
    # comparisons sit below arithmetic and above and/or
    ("a + 1 == b * 2 and c", "(((a + 1) == (b * 2)) and c)"),
])
def test_precedence_and_associativity(text, expected):
    assert shape(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # EXTENSION `!=` sits at the comparison level, left-associative with the others
    ("a + 1 != b", "((a + 1) != b)"),
    ("a != b and c", "((a != b) and c)"),
    ("a != b == c", "((a != b) == c)"),
    ("a == b != c", "((a == b) != c)"),
    ("not a != b", "((not a) != b)"),
])
def test_not_equal_extension_takes_the_comparison_level(text, expected):
    assert shape(text) == expected


# ---------------------------------------------------------------- independent oracle
# Binding power of each binary operator, loosest first, transcribed from the EBNF of
# docs/language.md (all levels left-associative). The test builds the expected
# parenthesisation with precedence climbing and compares it with the parser's.
LEVELS = [("in",), ("and", "or"), ("==", "<=", ">=", "<", ">", "!="), ("+", "-"), ("%",),
          ("*", "/"), ("^",)]
POWER = {op: level for level, ops in enumerate(LEVELS) for op in ops}


def climb(operands: list[str], operators: list[str]) -> str:
    """Fully parenthesised reading of operands[0] op0 operands[1] op1 ..."""
    pending = list(zip(operators, operands[1:]))

    def parse_level(lhs: str, min_power: int) -> str:
        while pending and POWER[pending[0][0]] >= min_power:
            op, rhs = pending.pop(0)
            while pending and POWER[pending[0][0]] > POWER[op]:
                rhs = parse_level(rhs, POWER[op] + 1)
            lhs = f"({lhs} {op} {rhs})"
        return lhs

    return parse_level(operands[0], 0)


@st.composite
def operator_chains(draw):
    count = draw(st.integers(1, 7))
    operands = [draw(st.sampled_from(["a", "b", "1", "2.5", '"s"', "x[0]", "f(y)"]))
                for _ in range(count + 1)]
    operators = [draw(st.sampled_from(list(POWER))) for _ in range(count)]
    return operands, operators


@settings(max_examples=300, deadline=None)
@given(operator_chains())
def test_binary_chains_match_the_precedence_table(chain):
    operands, operators = chain
    text = operands[0] + "".join(f" {op} {rhs}" for op, rhs in zip(operators, operands[1:]))
    assert shape(text) == climb(operands, operators)


@settings(max_examples=200, deadline=None)
@given(operator_chains(), st.lists(st.sampled_from(["-", "+", "not "]), min_size=1, max_size=2),
       st.data())
def test_prefix_operator_applies_to_one_operand_only(chain, prefixes, data):
    operands, operators = chain
    which = data.draw(st.integers(0, len(operands) - 1))
    prefix = "".join(prefixes)
    wrapped = operands[which]
    for op in reversed(prefixes):
        wrapped = f"({op.strip()} {wrapped})"
    plain = [prefix + o if i == which else o for i, o in enumerate(operands)]
    expected_operands = [wrapped if i == which else o for i, o in enumerate(operands)]
    text = plain[0] + "".join(f" {op} {rhs}" for op, rhs in zip(operators, plain[1:]))
    assert shape(text) == climb(expected_operands, operators)
