"""Reading input sequences from the command line and from input files.

One rule for both: text that parses as a JSON list is that list (its elements must be
atoms: numbers, strings, booleans); any other text is a string, i.e. the sequence of its
characters, as in the original's `e("hello")`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import RaspError, RaspTypeError, Span, register_source

Atom = Any


def parse_input(text: str, span: Span | None = None) -> "str | list[Atom]":
    """One input: a JSON list of atoms, or a plain string of characters."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as error:
            where = _shift(span, error.colno - 1 + (len(text) - len(text.lstrip())))
            raise RaspTypeError(
                f"input looks like a JSON list but is not valid JSON: {error.msg}", where
            ) from None
        if not isinstance(value, list):
            raise RaspTypeError("an input must be a JSON list or a plain string", span)
        for position, element in enumerate(value):
            if isinstance(element, (list, dict)) or element is None:
                raise RaspTypeError(
                    f"input element {position} is {json.dumps(element)}: sequence elements "
                    "must be numbers, strings or booleans",
                    span,
                )
        if not value:
            raise RaspTypeError("an input must not be empty", span)
        return value
    if text == "":
        raise RaspTypeError("an input must not be empty", span)
    return text


def read_inputs_file(path: str) -> list["str | list[Atom]"]:
    """One input per line; blank lines are skipped. Errors point at the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise RaspError(f"cannot read inputs file {path}: {error.strerror}") from None
    register_source(path, text)
    inputs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        span = Span(path, number, 1, number, len(line) + 1)
        inputs.append(parse_input(line, span))
    if not inputs:
        raise RaspError(f"inputs file {path} contains no inputs")
    return inputs


def _shift(span: Span | None, offset: int) -> Span | None:
    if span is None:
        return None
    column = span.column + max(0, offset)
    return Span(span.file, span.line, column, span.line, column + 1)
