"""The abstract syntax tree: frozen dataclasses, each node carrying its source span.

The parser (`rasp_sim.language.parser`) builds these from `grammar.lark`; the interpreter
(`rasp_sim.language.interpreter`) walks them. Precedence quirks are resolved by the grammar, so
the tree already has the original's shape (docs/language.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from ..base.errors import Span

# --------------------------------------------------------------------------- expressions

BinaryOperator = Literal[
    "+", "-", "*", "/", "%", "^", "==", "!=", "<", ">", "<=", ">=", "and", "or"
]
UnaryOperator = Literal["not", "-", "+"]
SelectOperator = Literal["==", "!=", "<", ">", "<=", ">="]


@dataclass(frozen=True)
class IntLiteral:
    value: int
    span: Span


@dataclass(frozen=True)
class FloatLiteral:
    """`text` is kept so exact mode can read the decimal literal as a Fraction."""

    value: float
    text: str
    span: Span


@dataclass(frozen=True)
class StringLiteral:
    value: str
    span: Span


@dataclass(frozen=True)
class Name:
    id: str
    span: Span


@dataclass(frozen=True)
class BinaryOp:
    op: BinaryOperator
    left: "Expr"
    right: "Expr"
    span: Span


@dataclass(frozen=True)
class UnaryOp:
    op: UnaryOperator
    operand: "Expr"
    span: Span


@dataclass(frozen=True)
class Ternary:
    """`then if condition else otherwise`."""

    then: "Expr"
    condition: "Expr"
    otherwise: "Expr"
    span: Span


@dataclass(frozen=True)
class Contains:
    """`item in container`."""

    item: "Expr"
    container: "Expr"
    span: Span


@dataclass(frozen=True)
class Index:
    target: "Expr"
    index: "Expr"
    span: Span


@dataclass(frozen=True)
class Call:
    """`function(args)`: a user function, an s-op/selector application, or an
    extension builtin (`exp`, `sum`, `aggregate (` with a space, ...) resolved by name
    when the program has not bound that name itself."""

    function: "Expr"
    args: tuple["Expr", ...]
    span: Span


@dataclass(frozen=True)
class ListLiteral:
    items: tuple["Expr", ...]
    span: Span


@dataclass(frozen=True)
class DictLiteral:
    pairs: tuple[tuple["Expr", "Expr"], ...]
    span: Span


@dataclass(frozen=True)
class ListComprehension:
    element: "Expr"
    names: tuple[str, ...]
    iterable: "Expr"
    span: Span


@dataclass(frozen=True)
class DictComprehension:
    key: "Expr"
    value: "Expr"
    names: tuple[str, ...]
    iterable: "Expr"
    span: Span


@dataclass(frozen=True)
class Select:
    keys: "Expr"
    queries: "Expr"
    op: SelectOperator
    span: Span


@dataclass(frozen=True)
class Aggregate:
    selector: "Expr"
    values: "Expr"
    default: "Expr | None"
    span: Span


@dataclass(frozen=True)
class BuiltinCall:
    """The fused-token built-ins `range(`, `zip(`, `len(` and the keywords `round`,
    `indicator`."""

    name: Literal["range", "zip", "len", "round", "indicator"]
    args: tuple["Expr", ...]
    span: Span


Expr = Union[
    IntLiteral, FloatLiteral, StringLiteral, Name, BinaryOp, UnaryOp, Ternary, Contains,
    Index, Call, ListLiteral, DictLiteral, ListComprehension, DictComprehension, Select,
    Aggregate, BuiltinCall,
]

# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class ExprStatement:
    expr: Expr
    span: Span


@dataclass(frozen=True)
class Assign:
    """`a, b = e1, e2;` (one or more names, one or more values; docs/language.md)."""

    names: tuple[str, ...]
    values: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class FunctionDef:
    name: str
    params: tuple[str, ...]
    body: tuple["Statement", ...]
    returns: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class For:
    names: tuple[str, ...]
    iterable: Expr
    body: tuple["Statement", ...]
    span: Span


@dataclass(frozen=True)
class Load:
    name: str
    span: Span


@dataclass(frozen=True)
class Draw:
    expr: Expr
    input: Expr | None
    span: Span


ExampleTarget = Literal["both", "s-op", "selector"]


@dataclass(frozen=True)
class SetExample:
    target: ExampleTarget
    example: Expr
    span: Span


@dataclass(frozen=True)
class ShowExample:
    target: ExampleTarget
    span: Span


@dataclass(frozen=True)
class ExamplesToggle:
    """`examples on`, `s-op examples off`, ..."""

    target: ExampleTarget
    on: bool
    span: Span


@dataclass(frozen=True)
class FullSeqDisplay:
    on: bool
    span: Span


@dataclass(frozen=True)
class Exit:
    span: Span


Statement = Union[
    ExprStatement, Assign, FunctionDef, For, Load, Draw, SetExample, ShowExample,
    ExamplesToggle, FullSeqDisplay, Exit,
]


@dataclass(frozen=True)
class Program:
    statements: tuple[Statement, ...]
    file: str
