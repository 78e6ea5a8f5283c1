"""Turn Lark's parse errors into `RaspSyntaxError`s a person can act on.

Each message names what was found and, concisely, what was expected; for the mistakes
people actually make (a keyword as a name, `'a'`, `.5`, `{}` as a loop body, a missing
`;` or `return`, `**`), it says what to write instead.
"""
from __future__ import annotations

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..base.errors import RaspSyntaxError, Source, Span

# Terminal names from grammar.lark, grouped for describing them.
_KEYWORDS = {
    "SET": "set", "S_OP": "s-op", "SELECTOR": "selector", "EXAMPLE": "example",
    "SHOW": "show", "EXAMPLES": "examples", "ON": "on", "OFF": "off", "EXIT": "exit",
    "QUIT": "quit", "LOAD": "load", "DRAW": "draw", "DEF": "def", "RETURN": "return",
    "FOR": "for", "IN": "in", "IF": "if", "ELSE": "else", "NOT": "not", "AND": "and",
    "OR": "or", "ROUND": "round", "INDICATOR": "indicator",
}
_PUNCTUATION = {
    "LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]", "LBRACE": "{", "RBRACE": "}",
    "COMMA": ",", "SEMICOLON": ";", "COLON": ":", "EQUAL": "=", "EQ": "==", "NE": "!=",
    "LE": "<=", "GE": ">=", "LT": "<", "GT": ">", "PLUS": "+", "MINUS": "-", "STAR": "*",
    "SLASH": "/", "PERCENT": "%", "CARET": "^", "SELECT_OPEN": "select(",
    "AGGREGATE_OPEN": "aggregate(", "RANGE_OPEN": "range(", "ZIP_OPEN": "zip(",
    "LEN_OPEN": "len(", "EXIT_CALL": "exit()", "QUIT_CALL": "quit()",
    "FULL_SEQ_DISPLAY": "full seq display",
}
_BINARY_OPERATORS = {
    "AND", "OR", "EQ", "NE", "LE", "GE", "LT", "GT", "PLUS", "MINUS", "STAR", "SLASH",
    "PERCENT", "CARET", "IF", "IN",
}
_SELECT_OPERATORS = {"EQ", "NE", "LE", "GE", "LT", "GT"}
_EXPRESSION_STARTS = {
    "ID", "INT", "FLOAT", "FLOAT_EXP", "STRING", "LPAR", "LSQB", "LBRACE", "SELECT_OPEN",
    "AGGREGATE_OPEN", "RANGE_OPEN", "ZIP_OPEN", "LEN_OPEN", "ROUND", "INDICATOR", "NOT",
    "MINUS", "PLUS",
}
_REPL_STARTS = {"SET", "SHOW", "EXAMPLES", "S_OP", "SELECTOR", "FULL_SEQ_DISPLAY", "EXIT",
                "QUIT", "EXIT_CALL", "QUIT_CALL"}
_STATEMENT_STARTS = {"DEF", "FOR", "DRAW", "LOAD", "_COMMENT"} | _REPL_STARTS
_NUMBERS = {"INT", "FLOAT", "FLOAT_EXP"}
_KINDS = {"ID": "a name", "STRING": "a string", "INT": "a number", "FLOAT": "a number",
          "FLOAT_EXP": "a number"}

_BAD_CHARACTER_HINTS = {
    "'": "single quotes are not allowed: strings use double quotes, e.g. \"a\"",
    '"': "unterminated string: a string must close with '\"' on the same line",
    "!": "'!' is not an operator: negation is 'not'",
    "&": "'&' is not an operator: use 'and'",
    "|": "'|' is not an operator: use 'or'",
    "~": "'~' is not an operator: use 'not'",
}


def syntax_error(exc: UnexpectedInput, source: Source) -> RaspSyntaxError:
    """The `RaspSyntaxError` for a Lark parse error `exc` in `source`."""
    text = source.text
    if isinstance(exc, UnexpectedCharacters):
        return _bad_character(exc, source)
    # LALR's own `expected` merges the lookaheads of similar states (after `[1, 2` it
    # lists ';'); `accepts` replays the parser and lists exactly what could come next.
    if isinstance(exc, UnexpectedToken):
        expected = set(exc.accepts or exc.expected)
    else:
        expected = set(getattr(exc, "expected", ()) or ())
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        tok = exc.token
        span = Span(source, tok.line, tok.column, tok.end_line, tok.end_column)
        return RaspSyntaxError(_unexpected_token(tok, expected, text), span)
    message = "unexpected end of input"
    if "SEMICOLON" in expected:
        message += ": missing ';'"
    elif expected:
        message += f"; expected {_describe_expected(expected)}"
    return RaspSyntaxError(message, _end_span(source))


def _bad_character(exc: UnexpectedCharacters, source: Source) -> RaspSyntaxError:
    text, pos, char = source.text, exc.pos_in_stream, exc.char
    assert pos is not None  # the lexer always says where it stopped
    width = 1
    before = text[pos - 1] if pos > 0 else ""
    after = text[pos + 1] if pos + 1 < len(text) else ""
    if char == "." and after.isdigit():
        digits = _digits_from(text, pos + 1)
        message = f"'.{digits}' is not a number: write 0.{digits}"
        width += len(digits)
    elif char == "." and before.isdigit():
        message = "a number cannot end with '.': write e.g. 1.0 (or 1)"
    elif char == "'":
        close = text.find("'", pos + 1)
        if close != -1 and "\n" not in text[pos:close]:
            width = close + 1 - pos
        message = _BAD_CHARACTER_HINTS[char]
    elif char in _BAD_CHARACTER_HINTS:
        message = _BAD_CHARACTER_HINTS[char]
    elif char.isalpha():
        message = f"unexpected character '{char}': names use only A-Z, a-z, 0-9 and _"
    else:
        message = f"unexpected character {char!r}"
    span = Span(source, exc.line, exc.column, exc.line, exc.column + width)
    return RaspSyntaxError(message, span)


def _unexpected_token(tok: Token, expected: set[str], text: str) -> str:
    kind, value = tok.type, str(tok)
    found = _describe_token(tok)
    before = _previous_char(text, tok.start_pos)
    if kind == "_COMMENT" and "SEMICOLON" in expected:
        return "missing ';' before the comment"
    if kind == "_COMMENT":
        return "unexpected comment: a comment can only stand between statements, not inside one"
    if kind == "RETURN" and "DEF" in expected:
        return "'return' is only allowed as the last statement of a function body"
    if kind in _REPL_STARTS and "DEF" in expected:
        return (f"'{value}' starts a REPL statement, which is only allowed at top level, "
                "not inside a function or loop body")
    if kind in _KEYWORDS and "ID" in expected:
        hint = " (a subtraction needs spaces: s - op)" if value == "s-op" else ""
        return f"'{value}' is a keyword and cannot be used as a name{hint}"
    if kind == "RBRACE" and "RETURN" in expected:
        return "missing 'return': a function body must end with 'return <expression>;'"
    if kind == "RBRACE" and before == "{" and "DEF" in expected:
        return ("a loop body cannot be empty: put at least one statement or a comment "
                "between '{' and '}'")
    if expected and expected <= {"RBRACE", "_COMMENT"}:
        return f"unexpected {found}: 'return ...;' must be the last statement of a function body"
    if kind == "STAR" and before == "*":
        return "'**' is not an operator: power is '^'"
    if kind == "SLASH" and before == "/":
        return "'//' is not an operator: '/' is true division; use round(a / b) or '%'"
    if kind == "EQUAL" and before and before in "+-*/%^":
        return f"'{before}=' is not an operator: write x = x {before} ...;"
    if kind == "EQUAL":
        return "unexpected '=': only names can be assigned (a, b = ...;); comparison is '=='"
    if kind == "ID" and tok.start_pos and text[tok.start_pos - 1].isdigit():
        number = text[:tok.start_pos].rstrip("0123456789.")
        number = text[len(number):tok.end_pos]
        return (f"'{number}' is not a number: RASP numbers are decimal digits, "
                "optionally with '.' and more digits")
    if kind == "ID" and value == "is" and expected & _BINARY_OPERATORS:
        return "'is' is not an operator: use '=='"
    if kind in _SELECT_OPERATORS and "ID" in expected:
        return (f"unexpected '{value}' where an expression should be: a comparison operator "
                "stands alone only as the third argument of select(keys, queries, op)")
    if "SEMICOLON" in expected and kind not in ("RPAR", "RSQB", "COMMA", "COLON"):
        return f"missing ';' before {found}"
    return f"unexpected {found}; expected {_describe_expected(expected)}"


def _describe_token(tok: Token) -> str:
    kind, value = tok.type, str(tok)
    if kind == "ID":
        return f"name '{value}'"
    if kind in _NUMBERS:
        return f"number {value}"
    if kind == "STRING":
        return f"string {value}"
    if kind == "_SET_END":
        return "end of the example (a line break)"
    if kind in _KEYWORDS:
        return f"keyword '{value}'"
    return f"'{value}'"


def _describe_expected(expected: set[str]) -> str:
    """A short phrase for a set of acceptable terminals: groups become 'an expression',
    'a statement', 'an operator'; the rest are quoted."""
    rest = set(expected) - {"$END"}
    groups = []
    if {"ID", "INT"} <= rest:
        groups.append("an expression")
        rest -= _EXPRESSION_STARTS
    if "DEF" in rest:
        groups = ["a statement"]        # an expression statement is one of them
        rest -= _STATEMENT_STARTS
    if len(rest) >= 3 and rest <= _SELECT_OPERATORS:
        groups.append("a comparison operator (== != < > <= >=)")
        rest = set()
    if len(rest & _BINARY_OPERATORS) >= 3:
        groups.append("an operator")
        rest -= _BINARY_OPERATORS | {"LPAR", "LSQB"}
    named = [_describe_terminal(t) for t in sorted(rest) if t not in ("_COMMENT", "_SET_END")]
    if "$END" in expected:
        named.append("end of input")
    items = named + groups
    if not items:
        return "nothing more here"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _describe_terminal(name: str) -> str:
    if name in _KINDS:
        return _KINDS[name]
    return f"'{_PUNCTUATION.get(name) or _KEYWORDS.get(name) or name}'"


def _digits_from(text: str, pos: int) -> str:
    end = pos
    while end < len(text) and text[end].isdigit():
        end += 1
    return text[pos:end]


def _previous_char(text: str, pos: int | None) -> str:
    """The last non-whitespace character before `pos` ('' at the start)."""
    if pos is None:
        return ""
    stripped = text[:pos].rstrip()
    return stripped[-1] if stripped else ""


def _end_span(source: Source) -> Span:
    """A zero-width span just after the last non-blank character."""
    stripped = source.text.rstrip()
    line = stripped.count("\n") + 1
    column = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return Span(source, line, column, line, column)
