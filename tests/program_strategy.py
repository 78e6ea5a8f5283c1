"""Hypothesis strategies for random, syntactically valid RASP program text.

    mutated_programs() -> a program with random one-character deletions/insertions
    programs(...)     -> text of a whole program: assignments (single and multi),
                         defs with their mandatory return, for loops, expression
                         statements, comments, optionally REPL statements
    expressions(...)  -> text of one expression: literals, names, every operator,
                         ternaries, `in`, indexing, calls, lists, dicts, comprehensions,
                         select/aggregate and the fused built-ins

Names come from a small pool (`tokens`, `indices`, `length`, `True`, `False`) plus the
names the program has bound so far (variables, functions, parameters, loop names), so
the programs mean something to an interpreter; they are still random, so most of them
fail at run time: an interpreter must then raise a RaspError.

Operands are joined without adding parentheses (only some are parenthesised at random):
any operator applied to valid operand texts is valid text, whatever the precedence
makes of it. By default the text uses only the original's syntax (it also parses with
`strict=True`); `extensions=True` adds `!=`, exponent floats and `select (` forms.
"""
from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

BASE_NAMES = ("tokens", "indices", "length", "True", "False")
BINARY_OPERATORS = ("+", "-", "*", "/", "%", "^", "==", "<", ">", "<=", ">=", "and", "or")
SELECT_OPERATORS = ("==", "!=", "<", ">", "<=", ">=")
# No '"', CR or LF: the characters a string literal may hold (backslash and '#' included).
_STRING_TEXT = st.text(alphabet="abch01 #\\_-", max_size=4)
# Anything but a line break.
_COMMENT_TEXT = st.text(alphabet='abc #;{}"\'', max_size=6)


def _leaf(draw, names: Sequence[str], extensions: bool) -> str:
    kind = draw(st.sampled_from(("int", "float", "string", "name", "name")))
    if kind == "int":
        return str(draw(st.integers(0, 20))).zfill(draw(st.integers(1, 2)))
    if kind == "float":
        text = f"{draw(st.integers(0, 9))}.{draw(st.integers(0, 99))}"
        if extensions and draw(st.booleans()):
            text += f"e{draw(st.sampled_from(('', '-', '+')))}{draw(st.integers(0, 3))}"
        return text
    if kind == "string":
        return f'"{draw(_STRING_TEXT)}"'
    return draw(st.sampled_from(tuple(names)))


def _args(draw, names, depth, extensions, low: int, high: int) -> str:
    count = draw(st.integers(low, high))
    return ", ".join(_expr(draw, names, depth, extensions) for _ in range(count))


def _expr(draw, names: Sequence[str], depth: int, extensions: bool) -> str:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw, names, extensions)

    def sub(extra: Sequence[str] = ()) -> str:
        return _expr(draw, (*names, *extra), depth - 1, extensions)

    kind = draw(st.sampled_from((
        "binary", "binary", "binary", "unary", "paren", "ternary", "in", "index", "call",
        "list", "dict", "listcomp", "dictcomp", "select", "aggregate", "builtin",
    )))
    if kind == "binary":
        ops = BINARY_OPERATORS + (("!=",) if extensions else ())
        return f"{sub()} {draw(st.sampled_from(ops))} {sub()}"
    if kind == "unary":
        return f"{draw(st.sampled_from(('-', '+', 'not ')))}{sub()}"
    if kind == "paren":
        return f"({sub()})"
    if kind == "ternary":
        return f"{sub()} if {sub()} else {sub()}"
    if kind == "in":
        return f"{sub()} in {sub()}"
    if kind == "index":
        return f"{sub()}[{sub()}]"
    if kind == "call":
        return f"{sub()}({_args(draw, names, depth - 1, extensions, 0, 2)})"
    if kind == "list":
        return f"[{_args(draw, names, depth - 1, extensions, 0, 3)}]"
    if kind == "dict":
        count = draw(st.integers(0, 2))
        return "{" + ", ".join(f"{sub()}: {sub()}" for _ in range(count)) + "}"
    if kind in ("listcomp", "dictcomp"):
        loop_names = draw(st.sampled_from((("c0",), ("c0", "c1"))))
        head = f"for {', '.join(loop_names)} in {sub()}"
        if kind == "listcomp":
            return f"[{sub(loop_names)} {head}]"
        return f"{{{sub(loop_names)}: {sub(loop_names)} {head}}}"
    if kind == "select":
        opener = "select (" if extensions and draw(st.booleans()) else "select("
        return f"{opener}{sub()}, {sub()}, {draw(st.sampled_from(SELECT_OPERATORS))})"
    if kind == "aggregate":
        return f"aggregate({_args(draw, names, depth - 1, extensions, 2, 3)})"
    builtin = draw(st.sampled_from(("range", "zip", "len", "round", "indicator")))
    if builtin in ("range", "zip"):
        return f"{builtin}({_args(draw, names, depth - 1, extensions, 1, 3)})"
    space = " " if builtin in ("round", "indicator") and draw(st.booleans()) else ""
    return f"{builtin}{space}({sub()})"


@st.composite
def expressions(draw, names: Sequence[str] = BASE_NAMES, max_depth: int = 3,
                extensions: bool = False) -> str:
    """Text of one random expression over `names`."""
    return _expr(draw, tuple(names), max_depth, extensions)


class _Scope:
    """Names bound so far, and counters for fresh ones."""

    def __init__(self, names: Sequence[str]):
        self.names = list(names)
        self.fresh = 0

    def new(self, prefix: str) -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"


def _statement(draw, scope: _Scope, depth: int, extensions: bool, repl: bool) -> str:
    kinds = ["assign", "assign", "multi", "expr", "comment"]
    if depth > 0:
        kinds += ["def", "for"]
    if repl:
        kinds += ["repl"]
    kind = draw(st.sampled_from(kinds))

    def expr() -> str:
        return _expr(draw, scope.names, draw(st.integers(0, 3)), extensions)

    if kind == "assign":
        name = draw(st.sampled_from([scope.new("v")] + [n for n in scope.names if n[0] == "v"]))
        text = f"{name} = {expr()};"
        scope.names.append(name)
        return text
    if kind == "multi":
        names = [scope.new("v") for _ in range(draw(st.integers(2, 3)))]
        values = ", ".join(expr() for _ in range(draw(st.sampled_from((1, len(names))))))
        scope.names.extend(names)
        return f"{', '.join(names)} = {values};"
    if kind == "expr":
        return f"{expr()};"
    if kind == "comment":
        return "# " + draw(_COMMENT_TEXT)
    if kind == "def":
        name = scope.new("f")
        params = [scope.new("p") for _ in range(draw(st.integers(0, 2)))]
        inner = _Scope([*scope.names, name, *params])
        inner.fresh = scope.fresh
        body = _statements(draw, inner, depth - 1, extensions, 0, 3)
        scope.fresh = inner.fresh
        returns = ", ".join(
            _expr(draw, inner.names, 2, extensions) for _ in range(draw(st.integers(1, 2))))
        scope.names.append(name)
        return f"def {name}({', '.join(params)}) {{\n{body}return {returns};\n}}"
    if kind == "for":
        loop_names = [scope.new("i") for _ in range(draw(st.integers(1, 2)))]
        iterable = expr()
        scope.names.extend(loop_names)     # loop names stay bound after the loop
        body = _statements(draw, scope, depth - 1, extensions, 1, 3)
        return f"for {', '.join(loop_names)} in {iterable} {{\n{body}}}"
    target = draw(st.sampled_from(("", "s-op ", "selector ")))
    return draw(st.sampled_from((
        f"set {target}example {expr()}",
        f"show {target}example",
        f"{target}examples {draw(st.sampled_from(('on', 'off')))}",
        f"full seq display {draw(st.sampled_from(('on', 'off')))}",
    )))


def _statements(draw, scope: _Scope, depth: int, extensions: bool, low: int, high: int,
                repl: bool = False) -> str:
    count = draw(st.integers(low, high))
    return "".join(_statement(draw, scope, depth, extensions, repl) + "\n" for _ in range(count))


@st.composite
def programs(draw, max_statements: int = 6, names: Sequence[str] = BASE_NAMES,
             extensions: bool = False, repl_statements: bool = False) -> str:
    """Text of a random program of 1..max_statements top-level statements (defs and
    loops nest up to two levels). `repl_statements` adds `set example`, `show
    example`, example toggles and `full seq display` (never `exit`)."""
    scope = _Scope(names)
    return _statements(draw, scope, 2, extensions, 1, max_statements, repl=repl_statements)


# Characters a mutation inserts: all of RASP's punctuation, quotes of both kinds, '#',
# line breaks, letters, digits, and two characters RASP never accepts.
_MUTATION_ALPHABET = st.sampled_from(list("()[]{},;:=!<>+-*/%^#\"'._ \n\tae1") + ["é", "\x00"])


@st.composite
def mutated_programs(draw) -> str:
    """A random program (extensions and REPL statements included) with one to three
    random single-character deletions or insertions: mostly invalid text."""
    text = draw(programs(extensions=True, repl_statements=True))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()) and at < len(text):
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + draw(_MUTATION_ALPHABET) + text[at:]
    return text
