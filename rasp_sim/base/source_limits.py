"""Limits on the size and shape of program text, checked token by token as it is lexed.

Lark's LALR parser keeps its stacks in lists, but the parse tree, the AST and the
interpreter's walk of it grow with the program: 20 to 80 microseconds a token (the
second on a loaded 2-core machine) and up to 850 bytes a token (tracemalloc, on long
sums, unary chains, lists, calls and many short statements), and two Python frames per
level of nesting in the interpreter. Two checks bound that work by the limits below, not by the text:

- `count_tokens` counts the text's tokens with one regular expression before Lark sees
  it, stopping at the limit: about 20 times faster than Lark's lexer and 150 times
  faster than its parser (measured), so a text of too many tokens is refused before
  any parsing.
- `SourceBudget` sees every token on its way to the parser and stops the parse at the
  first one past the nesting, statement-size or statement-count limit: a million
  nested brackets are refused after 201 tokens.

The limits are far above real programs (the bundled library's largest file has about
3,000 tokens, brackets 6 deep and statements of at most 60 tokens).
"""
from __future__ import annotations

import re

from lark import Token

# Deepest nesting of brackets ( [ { and the fused openers such as `select(`. CPython's
# own parser stops at 200 nested parentheses too.
MAX_NESTING_DEPTH = 200
# Most tokens in one statement (from one `;` to the next). An expression's AST is at
# most this deep, and the interpreter walks about 20,000 levels within the Python
# recursion limit it sets (measured: a chain of 13,000 unary minuses runs, 30,000 does
# not), so no statement reaches that limit by its size alone.
MAX_STATEMENT_TOKENS = 10_000
# Most statements in one program (or one chunk of REPL input).
MAX_STATEMENTS = 20_000
# Most tokens (comments included) in one program: 25,000 statements `x=1;` (100,000
# tokens) parsed in 7.8 s on a loaded 2-core machine with a peak RSS of 122 MB (65 MB of
# it the interpreter itself); a 10 MiB program of 100,000 tokens (long strings) in 4.3 s.
MAX_PROGRAM_TOKENS = 100_000

# Words, numbers, strings, comments, two-character operators, any other character: at
# least as many tokens as Lark's lexer finds (it fuses `select(` and `s-op`).
_TOKEN = re.compile(r'[A-Za-z_]\w*|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"[^"\r\n]*"'
                    r'|#[^\r\n]*|[=!<>]=|\S')

OPENERS = frozenset({
    "LPAR", "LSQB", "LBRACE", "SELECT_OPEN", "AGGREGATE_OPEN", "RANGE_OPEN", "ZIP_OPEN",
    "LEN_OPEN",
})
CLOSERS = frozenset({"RPAR", "RSQB", "RBRACE"})
# Statements that end without a ';' (the REPL's) start with one of these.
_STATEMENT_STARTS = frozenset({
    "SET", "SHOW", "EXAMPLES", "FULL_SEQ_DISPLAY", "EXIT", "QUIT", "EXIT_CALL", "QUIT_CALL",
})


class OverLimit(Exception):
    """A token past a limit; the parser turns it into a located RaspResourceError."""

    def __init__(self, message: str, token: Token):
        super().__init__(message)
        self.message = message
        self.token = token


def count_tokens(text: str) -> tuple[int, int]:
    """The number of tokens of `text`, counted up to MAX_PROGRAM_TOKENS + 1, and the
    offset of the last one counted (where a refusal points)."""
    count = offset = 0
    for count, match in enumerate(_TOKEN.finditer(text), start=1):
        offset = match.start()
        if count > MAX_PROGRAM_TOKENS:
            break
    return count, offset


def too_many_tokens() -> str:
    return (f"the program has more than {MAX_PROGRAM_TOKENS:,} tokens (comments included), "
            "the limit (rasp_sim.base.source_limits.MAX_PROGRAM_TOKENS)")


class SourceBudget:
    """Counts tokens, statements and nesting as the tokens of one text go by."""

    def __init__(self) -> None:
        self.tokens = self.statements = self.depth = self.statement_tokens = 0

    def check(self, tok: Token) -> None:
        """Count `tok`; OverLimit if it is past a limit."""
        self.tokens += 1
        if self.tokens > MAX_PROGRAM_TOKENS:  # text that came a line at a time (the REPL)
            raise OverLimit(too_many_tokens(), tok)
        if tok.type == "SEMICOLON" or tok.type in _STATEMENT_STARTS:
            self.statements += 1
            if self.statements > MAX_STATEMENTS:
                raise OverLimit(f"the program has more than {MAX_STATEMENTS:,} statements, "
                                "the limit (rasp_sim.base.source_limits.MAX_STATEMENTS)", tok)
        self.statement_tokens = 0 if tok.type in _STATEMENT_STARTS else self.statement_tokens + 1
        if self.statement_tokens > MAX_STATEMENT_TOKENS:
            raise OverLimit(f"a statement of more than {MAX_STATEMENT_TOKENS:,} tokens, the "
                            "limit (rasp_sim.base.source_limits.MAX_STATEMENT_TOKENS)", tok)
        if tok.type == "SEMICOLON":
            self.statement_tokens = 0
        self.depth += (tok.type in OPENERS) - (tok.type in CLOSERS)
        if self.depth > MAX_NESTING_DEPTH:
            raise OverLimit(f"brackets nested more than {MAX_NESTING_DEPTH} deep, the limit "
                            "(rasp_sim.base.source_limits.MAX_NESTING_DEPTH)", tok)
