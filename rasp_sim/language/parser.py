"""Source text to AST: the Lark grammar in `grammar.lark` plus one tree-to-AST transformer.

Public API:
    parse(text, file="<input>", *, strict=False) -> ast.Program
    parse_expression(text, file="<input>", *, strict=False) -> ast.Expr
    is_incomplete(text) -> bool
    IncrementalCheck().add_line(line) -> bool: `is_incomplete` of the lines so far

Every AST node carries a `Span`. Lark's errors become `RaspSyntaxError` with the span of
the offending token and a message naming what was found and what was expected
(`syntax_messages.py`). `strict=True` rejects the syntactic extensions (docs/language.md,
"Extensions") with the syntax error the original would give.
"""
from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from pathlib import Path

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.lexer import BasicLexer, LexerThread
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from . import ast
from ..base.errors import RaspResourceError, RaspSyntaxError, Source, Span
from ..base.limits import MAX_INT_BITS, MAX_INT_DIGITS
from ..base.source_limits import (
    CLOSERS, MAX_PROGRAM_TOKENS, OPENERS, OverLimit, SourceBudget, count_tokens, too_many_tokens,
)
from .syntax_messages import syntax_error

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")

# ------------------------------------------------------------------ `set example E` closer

# Tokens an expression can end with.
_ENDS_OPERAND = frozenset({"ID", "INT", "FLOAT", "FLOAT_EXP", "STRING"}) | CLOSERS
# Tokens that extend a complete expression on the same line.
_CONTINUES = frozenset({
    "AND", "OR", "EQ", "NE", "LE", "GE", "LT", "GT", "PLUS", "MINUS", "STAR", "SLASH",
    "PERCENT", "CARET", "IF", "IN", "LPAR", "LSQB",
})


class _SetExampleCloser:
    """Lark post-lexer: ends `set [s-op|selector] example E` with a virtual _SET_END.

    REPL statements take no ';', so `set example "ab"` followed by a line `(x);` is
    ambiguous for a grammar. The original reads line by line and runs the statement as
    soon as the text is a complete statement, so the example ends at the first line break
    after which the expression is complete (brackets balanced, no `if` waiting for its
    `else`, last token ends an operand), or earlier, at a token that cannot continue it.
    """

    always_accept = ()

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        state = _SetExampleState()
        budget = SourceBudget()  # refuses the text at the first token past a limit
        for tok in stream:
            budget.check(tok)
            yield from state.feed(tok)
        yield from state.finish()


class _SetExampleState:
    """The closer's state, advanced one token at a time (`IncrementalCheck` feeds the
    REPL's input a line at a time and needs to pause between lines)."""

    def __init__(self) -> None:
        self.armed = False     # saw `set` (and maybe a target), waiting for `example`
        self.watching = False  # inside the example expression
        self.depth = self.open_ifs = 0
        self.prev: Token | None = None

    def feed(self, tok: Token) -> list[Token]:
        """The tokens to pass on for `tok`: `tok`, preceded by _SET_END where the example
        ended before it."""
        out = []
        if self.watching and self._complete() and (
            _lines(tok)[0] > _lines(self._last())[1] or tok.type not in _CONTINUES
        ):
            out.append(Token.new_borrow_pos("_SET_END", "", self._last()))
            self.watching = False
        if tok.type == "SET":
            self.armed = True
        elif self.armed and tok.type == "EXAMPLE":
            self.armed, self.watching, self.depth, self.open_ifs = False, True, 0, 0
        elif tok.type not in ("S_OP", "SELECTOR"):
            self.armed = False
        if self.watching:
            self.depth += (tok.type in OPENERS) - (tok.type in CLOSERS)
            if self.depth == 0 and tok.type in ("IF", "ELSE"):
                self.open_ifs += 1 if tok.type == "IF" else -1
            if self.depth < 0 or tok.type == "SEMICOLON":
                self.watching = False     # the parser reports the error
        self.prev = tok
        out.append(tok)
        return out

    def finish(self) -> list[Token]:
        """The tokens to pass on at the end of the input."""
        if self.watching and self._complete():
            return [Token.new_borrow_pos("_SET_END", "", self._last())]
        return []

    def _last(self) -> Token:
        assert self.prev is not None  # watching starts at a token (EXAMPLE)
        return self.prev

    def _complete(self) -> bool:
        return (self.prev is not None and self.depth == 0 and self.open_ifs == 0
                and self.prev.type in _ENDS_OPERAND)


@functools.cache
def _lark() -> Lark:
    """The parser, built once per process (and its tables cached on disk by Lark)."""
    return Lark(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="basic",
        postlex=_SetExampleCloser(),
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "expression_only"],
        cache=True,
    )


# ------------------------------------------------------------------ tree -> AST

_BUILTIN_NAMES = {
    "RANGE_OPEN": "range", "ZIP_OPEN": "zip", "LEN_OPEN": "len",
    "ROUND": "round", "INDICATOR": "indicator",
}


@v_args(meta=True)
class _Builder(Transformer_NonRecursive):
    """Builds `ast` nodes bottom-up; list-like rules become tuples. Non-recursive, so a
    deeply nested or very long expression cannot exhaust Python's stack here."""

    def __init__(self, source: Source, strict: bool):
        super().__init__()
        self.source = source
        self.strict = strict

    def _span(self, meta) -> Span:
        return Span(self.source, meta.line, meta.column, meta.end_line, meta.end_column)

    def _token_span(self, tok: Token) -> Span:
        return _token_span(self.source, tok)

    def _reject(self, message: str, tok: Token) -> RaspSyntaxError:
        return RaspSyntaxError(message, self._token_span(tok))

    # ---- lists
    def _flatten(self, meta, children) -> tuple:
        return (*children[0], children[1]) if len(children) == 2 else (children[0],)

    expr_list = dict_pairs = _flatten

    def id_list(self, meta, children) -> tuple[str, ...]:
        return (*children[0], str(children[1])) if len(children) == 2 else (str(children[0]),)

    def dict_pair(self, meta, children):
        return (children[0], children[1])

    # ---- program and statements
    def start(self, meta, children) -> ast.Program:
        return ast.Program(tuple(children), self.source.name)

    def expression_only(self, meta, children) -> ast.Expr:
        return children[0]

    def expr_statement(self, meta, children):
        return ast.ExprStatement(children[0], self._span(meta))

    def assign(self, meta, children):
        return ast.Assign(children[0], children[1], self._span(meta))

    def draw(self, meta, children):
        return ast.Draw(children[0], children[1] if len(children) > 1 else None, self._span(meta))

    def load(self, meta, children):
        return ast.Load(children[0][1:-1], self._span(meta))

    def return_statement(self, meta, children):
        return children[0]

    def function_def(self, meta, children):
        name, params, *body, returns = children
        return ast.FunctionDef(
            str(name), params or (), tuple(body), returns, self._span(meta)
        )

    def loop_body(self, meta, children):
        return tuple(children)

    def for_loop(self, meta, children):
        names, iterable, body = children
        return ast.For(names, iterable, body, self._span(meta))

    def example_target(self, meta, children) -> str:
        return str(children[0])

    def set_example(self, meta, children):
        target, example = children
        return ast.SetExample(target or "both", example, self._span(meta))

    def show_example(self, meta, children):
        return ast.ShowExample(children[0] or "both", self._span(meta))

    def examples_toggle(self, meta, children):
        target, switch = children
        return ast.ExamplesToggle(target or "both", switch == "on", self._span(meta))

    def full_seq_display(self, meta, children):
        return ast.FullSeqDisplay(children[-1] == "on", self._span(meta))

    def exit(self, meta, children):
        return ast.Exit(self._span(meta))

    # ---- expressions
    def integer(self, meta, children):
        tok = children[0]
        # The project's integer limit, checked before int() builds the value.
        value = int(tok) if len(tok) <= MAX_INT_DIGITS else None
        if value is None or value.bit_length() > MAX_INT_BITS:
            raise self._reject(f"integer literal with {len(tok):,} digits is too long (above "
                               f"{MAX_INT_BITS:,} bits, rasp_sim.base.limits.MAX_INT_BITS)", tok)
        return ast.IntLiteral(value, self._span(meta))

    def float_literal(self, meta, children):
        tok = children[0]
        if self.strict and tok.type == "FLOAT_EXP":
            mantissa = tok.value[:tok.value.lower().index("e")]
            raise self._reject(
                f"float literal '{tok}' with an exponent is an extension (strict mode): "
                f"the original reads '{mantissa}' followed by '{tok.value[len(mantissa):]}'",
                tok)
        return ast.FloatLiteral(float(tok), str(tok), self._span(meta))

    def string(self, meta, children):
        return ast.StringLiteral(children[0][1:-1], self._span(meta))

    def name(self, meta, children):
        return ast.Name(str(children[0]), self._span(meta))

    def binary(self, meta, children):
        left, op, right = children
        return ast.BinaryOp(str(op), left, right, self._span(meta))

    def not_equal(self, meta, children):
        left, op, right = children
        if self.strict:
            raise self._reject(
                "'!=' in an expression is an extension (strict mode): the original allows "
                "'!=' only inside select(...); write not (a == b)", op)
        return ast.BinaryOp("!=", left, right, self._span(meta))

    def unary(self, meta, children):
        op, operand = children
        return ast.UnaryOp(str(op), operand, self._span(meta))

    def contains(self, meta, children):
        return ast.Contains(children[0], children[1], self._span(meta))

    def ternary(self, meta, children):
        then, condition, otherwise = children
        return ast.Ternary(then, condition, otherwise, self._span(meta))

    def index(self, meta, children):
        return ast.Index(children[0], children[1], self._span(meta))

    def call(self, meta, children):
        function, args = children
        return ast.Call(function, args or (), self._span(meta))

    def spaced_select(self, meta, children):
        function, args, op = children
        if not (isinstance(function, ast.Name) and function.id == "select" and len(args) == 2):
            raise self._reject(
                f"unexpected '{op}': a comparison operator as an argument is only allowed "
                "as the third argument of select(keys, queries, op)", op)
        if self.strict:
            raise self._reject(
                f"unexpected '{op}': 'select (' with a space is an extension (strict mode); "
                "the original needs 'select(' with no space before '('", op)
        return ast.Select(args[0], args[1], str(op), self._span(meta))

    def list_literal(self, meta, children):
        return ast.ListLiteral(children[0] or (), self._span(meta))

    def dict_literal(self, meta, children):
        return ast.DictLiteral(children[0] or (), self._span(meta))

    def list_comprehension(self, meta, children):
        element, names, iterable = children
        return ast.ListComprehension(element, names, iterable, self._span(meta))

    def dict_comprehension(self, meta, children):
        key, value, names, iterable = children
        return ast.DictComprehension(key, value, names, iterable, self._span(meta))

    def select_op(self, meta, children) -> Token:
        return children[0]

    def select(self, meta, children):
        _, keys, queries, op = children
        return ast.Select(keys, queries, str(op), self._span(meta))

    def aggregate(self, meta, children):
        _, selector, values, *default = children
        return ast.Aggregate(selector, values, default[0] if default else None, self._span(meta))

    def builtin(self, meta, children):
        opener, args = children
        if not isinstance(args, tuple):      # len(, round, indicator take one expression
            args = (args,)
        return ast.BuiltinCall(_BUILTIN_NAMES[opener.type], args, self._span(meta))


# ------------------------------------------------------------------ public API


def _run(text: str, file: str, strict: bool, start: str):
    source = Source(file, text)  # shared by every span of this parse
    tokens, offset = count_tokens(text)
    if tokens > MAX_PROGRAM_TOKENS:
        line = text.count("\n", 0, offset) + 1
        column = offset - text.rfind("\n", 0, offset)
        raise RaspResourceError(too_many_tokens(), Span(source, line, column, line, column + 1))
    try:
        tree = _lark().parse(text, start=start)
    except UnexpectedInput as exc:
        raise syntax_error(exc, source) from None
    except OverLimit as exc:
        raise RaspResourceError(exc.message, _token_span(source, exc.token)) from None
    try:
        return _Builder(source, strict).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, RaspSyntaxError):
            raise exc.orig_exc from None
        raise


def parse(text: str, file: str = "<input>", *, strict: bool = False) -> ast.Program:
    """Parse a whole program (a file, or a chunk of REPL input)."""
    return _run(text, file, strict, "start")


def parse_expression(text: str, file: str = "<input>", *, strict: bool = False) -> ast.Expr:
    """Parse a single expression (e.g. a value given on the command line)."""
    return _run(text, file, strict, "expression_only")


def is_incomplete(text: str) -> bool:
    """True when `text` is an unfinished statement: the parse ran into the end of input
    (a missing ';', an open bracket or body). The REPL then asks for another line."""
    check = IncrementalCheck()
    incomplete = False
    for line in text.split("\n"):
        incomplete = check.add_line(line)
    return incomplete


class IncrementalCheck:
    """`is_incomplete` for text that arrives a line at a time, at a cost proportional to
    each line, not to all the text so far: pasting an n-line definition into the REPL
    is O(n) (re-parsing the whole text on every line was O(n^2)).

    Each line is lexed once and its tokens are fed to an LALR parser that keeps its
    state between lines; the verdict for the text so far is that of a copy of the parser
    fed the end of input. No tokens span lines (strings and comments stop at a line
    break), so the lines' tokens are exactly those of the whole text."""

    def __init__(self) -> None:
        self._parser = _lark().parse_interactive(start="start")
        # No tree building: only accept or reject matters (as Lark's own `accepts`).
        conf = copy.copy(self._parser.parser_state.parse_conf)
        conf.callbacks = {}
        self._parser.parser_state.parse_conf = conf
        self._closer = _SetExampleState()
        self._budget = SourceBudget()
        self._lines = 0
        self._failed = False  # a syntax error or a limit: complete, parse() reports it

    def add_line(self, line: str) -> bool:
        """Add one line (without its line break); True while the text is unfinished."""
        self._lines += 1
        if self._failed:
            return False
        try:
            for tok in LexerThread.from_text(_line_lexer(), line).lex(None):
                tok.line, tok.end_line = self._lines, self._lines
                self._budget.check(tok)
                for passed in self._closer.feed(tok):
                    self._parser.feed_token(passed)
        except (UnexpectedToken, UnexpectedCharacters, OverLimit):
            self._failed = True
            return False
        probe = self._parser.copy(deepcopy_values=False)  # a copy of the stacks only
        try:
            for passed in copy.copy(self._closer).finish():
                probe.feed_token(passed)
            probe.feed_eof(self._closer.prev)
        except UnexpectedToken as exc:
            return exc.token.type == "$END"
        return False


@functools.cache
def _line_lexer() -> BasicLexer:
    """The parser's lexer without the post-lexer (`IncrementalCheck` runs the closer)."""
    return BasicLexer(_lark().lexer_conf)


def _token_span(source: Source, tok: Token) -> Span:
    first, last = _lines(tok)
    assert tok.column is not None and tok.end_column is not None
    return Span(source, first, tok.column, last, tok.end_column)


def _lines(tok: Token) -> tuple[int, int]:
    """A lexed token's first and last line (Lark leaves them None only for tokens it
    did not lex)."""
    assert tok.line is not None and tok.end_line is not None
    return tok.line, tok.end_line
