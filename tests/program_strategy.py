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


# ------------------------------------------------------- programs the compiler should take

_COMPARISONS = ("==", "!=", "<", ">", "<=", ">=")


class _Compilable:
    """The names a compilable program has bound so far, by type: numeric s-ops (ints, and
    the floats of means), boolean s-ops and selectors."""

    def __init__(self) -> None:
        self.numbers = ["x", "indices", "length"]
        self.fractions: set[str] = set()  # numbers computed from a mean: many values
        self.bools: list[str] = []
        self.selectors: list[str] = []
        self.selector_reads: dict[str, set[str]] = {}  # selector -> means-derived s-ops
        self.scaled_means: list[str] = []  # means of scaled tokens (floats, near-equal ones)
        self.sums: set[str] = set()  # sums of non-sums, which a sum may read
        self.lines = ["x = tokens_int;"]
        self.fresh = 0

    def bind(self, kind: list[str], text: str) -> str:
        self.fresh += 1
        name = f"v{self.fresh}"
        self.lines.append(f"{name} = {text};")
        kind.append(name)
        return name


def _number(draw, p: _Compilable) -> str:
    # Recent names more often: chains (mean -> map -> select) are what exposes bugs.
    if draw(st.booleans()):
        return p.numbers[-1]
    return draw(st.sampled_from(p.numbers))


def _operand(draw, p: _Compilable) -> str:
    return draw(st.sampled_from(("0", "1", "2"))) if draw(st.integers(0, 3)) == 0 \
        else _number(draw, p)


# Scaled tokens: float values whose means, summed in different orders, give near-equal
# floats (0.4 and 0.4000000000000001) that the compiler merges into one grid point.
_SCALED = ("x * 0.1", "(x + indices) * 0.3", "x * 0.25 - 0.1", "(x - indices) * 0.1")
# Constants such means take or nearly take (0.4 = 0.1 x 4, 0.05 = 0.1 / 2, ...).
_FLOAT_CONSTANTS = ("0.05", "0.1", "0.15", "0.2", "0.3", "0.4", "0.45", "0.6")
# A scaled mean times a position-dependent factor (Dyck's depth is a difference of
# means times `indices + 1`): a map of two s-ops, one lookup table, which may send the
# near-equal floats of one grid point to different values, and constants it nearly hits.
_SCALED_PRODUCTS = ("{m} * (indices + 1)", "{m} * length", "{m} * (x + 1)",
                    "{m} * (indices + 1) - x * 0.1")
_PRODUCT_CONSTANTS = ("0.3", "0.4", "0.6", "0.9", "1.2", "1.5")


def _side(draw, p: _Compilable) -> str:
    """One side of a select: an s-op or a constant, a float one more often where the
    program has means of scaled tokens to compare with it."""
    if p.scaled_means and draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(_FLOAT_CONSTANTS))
    return _operand(draw, p)


def _selector(draw, p: _Compilable, depth: int = 2, read: set | None = None) -> str:
    # One composite select is one head whose keys (and queries) are the tuple of its
    # leaves' s-ops: two of them computed from means make a tuple of |values|^2 (a
    # minute of compiling), so a selector reads at most one such s-op (`read`).
    read = set() if read is None else read
    kind = draw(st.sampled_from(("leaf", "leaf", "leaf", "and", "or", "not", "bound")))
    bound = [n for n in p.selectors if len(read | p.selector_reads[n]) <= 1]
    if kind == "bound" and bound:
        name = draw(st.sampled_from(bound))
        read |= p.selector_reads[name]
        return name
    if kind in ("and", "or") and depth > 0:
        return (f"({_selector(draw, p, depth - 1, read)} {kind} "
                f"{_selector(draw, p, depth - 1, read)})")
    if kind == "not" and depth > 0:
        return f"(not {_selector(draw, p, depth - 1, read)})"
    sides = []
    for _ in range(2):
        side = _side(draw, p)
        if side in p.fractions and read - {side}:
            side = draw(st.sampled_from([n for n in p.numbers if n not in p.fractions]))
        if side in p.fractions:
            read.add(side)
        sides.append(side)
    return f"select({sides[0]}, {sides[1]}, {draw(st.sampled_from(_COMPARISONS))})"


# Position-only s-ops: a select on two of them does not read the tokens, so the compiler
# reads its width at compile time (a sum over it is a mean scaled by a fixed width where
# every query selects 0 or k keys; with --causal, k <= q restricts those keys).
_POSITIONAL = ("indices", "length - indices", "length - indices - 1", "indices - 1",
               "indices % 2", "length", "0", "1")


def _positional_selector(draw) -> str:
    return (f"select({draw(st.sampled_from(_POSITIONAL))}, "
            f"{draw(st.sampled_from(_POSITIONAL))}, {draw(st.sampled_from(_COMPARISONS))})")


_KINDS = ("arith", "arith", "compare", "where", "select", "mean", "mean", "categorical",
          "categorical", "width", "width", "scaled mean", "scaled mean", "scaled product",
          "scaled product", "mixed mean")
# The lowerings that multiply or divide by a count of selected keys, drawn more often:
# sums over any selector (width x mean), sums and widths over position-only selectors
# (a width known at compile time), and `length` read by them.
_WIDTH_KINDS = ("sum", "sum", "positional sum", "positional sum", "positional width",
                "positional select", "length sum")


def _compilable_statement(draw, p: _Compilable, widths: bool = False) -> None:
    kind = draw(st.sampled_from(_KINDS + _WIDTH_KINDS if widths else _KINDS))
    if kind in ("sum", "positional sum", "length sum"):  # rasp-sim's sum: width x mean
        selector = _selector(draw, p) if kind == "sum" else _positional_selector(draw)
        values = "length" if kind == "length sum" else draw(st.sampled_from(
            [n for n in p.numbers if n not in p.fractions or n in p.sums]))
        default = draw(st.sampled_from(("", ", 0", ", 1", ", -1")))
        # Sums of ints are ints, but up to max-len times as many: read as the means are
        # (no mean of them, one per select or table), and a sum of a sum at most.
        name = p.bind(p.numbers, f"sum({selector}, {values}{default})")
        p.fractions.add(name)
        if values not in p.sums:
            p.sums.add(name)
    elif kind == "positional width":
        p.bind(p.numbers, f"selector_width({_positional_selector(draw)})")
    elif kind == "positional select":  # for later sums, means, widths and composites
        p.selector_reads[p.bind(p.selectors, _positional_selector(draw))] = set()
    elif kind == "scaled mean":  # a mean of scaled tokens, then maybe a select on it
        scaled = p.bind(p.numbers, draw(st.sampled_from(_SCALED)))
        default = draw(st.sampled_from(("", ", 0", ", 0.5")))
        mean = p.bind(p.numbers, f"aggregate({_selector(draw, p)}, {scaled}{default})")
        p.fractions.add(mean)
        p.scaled_means.append(mean)
        if draw(st.booleans()):  # as a select key, against a constant or itself
            other = draw(st.sampled_from(_FLOAT_CONSTANTS + (mean,)))
            p.bind(p.numbers, f"selector_width(select({mean}, {other}, "
                              f"{draw(st.sampled_from(_COMPARISONS))}))")
    elif kind == "scaled product" and p.scaled_means:  # compared, or rounded
        product = draw(st.sampled_from(_SCALED_PRODUCTS)).format(
            m=draw(st.sampled_from(p.scaled_means)))
        if draw(st.booleans()):
            p.bind(p.bools, f"{product} {draw(st.sampled_from(_COMPARISONS))} "
                            f"{draw(st.sampled_from(_PRODUCT_CONSTANTS))}")
        else:
            p.bind(p.numbers, f"round(10 * {product})")
    elif kind == "mixed mean":  # a column of bools and ints (0/1 in a mean), averaged
        a = draw(st.sampled_from([n for n in p.numbers if n not in p.fractions]))
        mixed = p.bind(p.numbers, f"({a} == {draw(st.integers(0, 2))}) if "
                                  f"{a} < {draw(st.integers(1, 3))} else {a}")
        p.fractions.add(p.bind(p.numbers, f"aggregate({_selector(draw, p)}, {mixed})"))
    elif kind == "arith":
        a = _number(draw, p)
        # Two operands computed from means make a table of |values|^2 rows (tens of
        # thousands: minutes in tracr's MLP assembly), so at most one of them is.
        b = _number(draw, p) if a not in p.fractions else draw(st.sampled_from(
            [n for n in p.numbers if n not in p.fractions]))
        text, read = draw(st.sampled_from((
            (f"{a} + {b}", (a, b)), (f"{a} - {b}", (a, b)), (f"({a} + {b}) % 3", (a, b)),
            (f"{a} - 1", (a,)), (f"{a} * 2", (a,)), (f"round(2 * {a})", ()))))
        name = p.bind(p.numbers, text)
        if any(n in p.fractions for n in read):
            p.fractions.add(name)
    elif kind == "compare":
        p.bind(p.bools, f"{_number(draw, p)} {draw(st.sampled_from(_COMPARISONS))} "
                        f"{_operand(draw, p)}")
    elif kind == "where" and p.bools:
        a, b = _number(draw, p), _operand(draw, p)
        text, read = draw(st.sampled_from((
            (f"indicator({draw(st.sampled_from(p.bools))})", ()),
            (f"{a} if {draw(st.sampled_from(p.bools))} else {b}", (a, b)))))
        name = p.bind(p.numbers, text)
        if any(n in p.fractions for n in read):
            p.fractions.add(name)
    elif kind == "select":
        read: set[str] = set()
        text = _selector(draw, p, read=read)
        p.selector_reads[p.bind(p.selectors, text)] = read
    elif kind == "mean":  # a numerical head, with rasp-sim's default (0 unless given)
        default = draw(st.sampled_from(("", ", 0", ", 1", ", -1", ", 0.5")))
        # Not a mean of means: thousands of values, whose conversion to categorical
        # exhausts memory in tracr's MLP construction.
        values = draw(st.sampled_from([n for n in p.numbers if n not in p.fractions]))
        p.fractions.add(p.bind(p.numbers, f"aggregate({_selector(draw, p)}, "
                                          f"{values}{default})"))
    elif kind == "categorical":  # at most one key: a categorical head, any default
        where = draw(st.sampled_from(("indices - 1", "indices + 1", "length - indices - 1")))
        where = where if draw(st.booleans()) else _number(draw, p)
        if p.bools and draw(st.booleans()):
            default = draw(st.sampled_from(("", ", True", ", False")))
            p.bind(p.bools, f"aggregate(select(indices, {where}, ==), "
                            f"{draw(st.sampled_from(p.bools))}{default})")
        else:
            default = draw(st.sampled_from(("", ", 0", ", -1", ", 3")))
            values = _number(draw, p)
            name = p.bind(p.numbers, f"aggregate(select(indices, {where}, ==), "
                                     f"{values}{default})")
            if values in p.fractions:
                p.fractions.add(name)
    else:
        p.bind(p.numbers, f"selector_width({_selector(draw, p)})")


@st.composite
def compilable_programs(draw, max_statements: int = 5, widths: bool = False) -> str:
    """Text of a random program over `tokens_int` (as `x`) in the fragment the tracr
    backend lowers: arithmetic and comparison maps, selects with and/or/not, numerical
    means with default 0 or another, means of scaled tokens (`x * 0.1`) as select keys
    against float constants and themselves, and times `indices + 1` (or another
    position-dependent factor) compared or rounded, means of columns mixing bools and ints,
    categorical aggregates (at most one key) with numeric or boolean defaults, selector
    widths; later statements read earlier ones, so means feed maps and selects. The
    program's value is bound to `y`. `widths` adds, often, what multiplies or divides by
    a count of selected keys: sums over any selector, and sums and selector widths over
    selects of position-only s-ops (a width the compiler reads at compile time)."""
    p = _Compilable()
    for _ in range(draw(st.integers(1, max_statements))):
        _compilable_statement(draw, p, widths)
    last = p.lines[-1].split(" = ")[0]
    if last in p.selectors or last == "x":  # a selector is no output: read it
        last = p.bind(p.numbers, f"selector_width({p.selectors[-1]})" if p.selectors
                      else "x + 1")
    p.lines.append(f"y = {last};")
    return "\n".join(p.lines) + "\n"
