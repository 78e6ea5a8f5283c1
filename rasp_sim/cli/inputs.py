"""Reading input sequences from the command line and from input files.

One rule for both: text that parses as a JSON list is that list (its elements must be
atoms: numbers, strings, booleans); any other text is a string, i.e. the sequence of its
characters, as in the original's `e("hello")`. A list of integers is returned as an int64
array, which the evaluator takes whole (rasp_sim.evaluation.evaluate).

Exact mode reads each number as the decimal it spells (`0.1` is 1/10, not the double
nearest it) and a string that spells a fraction (`"1/3"`) as that rational. Integers and
exact values are refused beyond rasp_sim.base.limits.MAX_INT_BITS, before they are built. A
line of an inputs file that is not a valid input becomes a `BadInput`, so that the other
lines can still run.
"""
from __future__ import annotations

import codecs
import functools
import itertools
import json
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Union

import numpy as np
import orjson

from ..base.errors import RaspError, RaspLoadError, RaspResourceError, RaspTypeError, Source, Span
from ..base.limits import MAX_INT_BITS, MAX_INT_DIGITS
from ..base.program_files import FileTooLarge, open_regular, read_open_file, utf8_error_position

Atom = Any
Input = Union[str, "list[Atom]", np.ndarray]  # see parse_input
# An inputs file read: an entry per input, or an int64 matrix of valid inputs (row k the
# k-th), see read_inputs_file.
Entries = Union["list[Input | BadInput]", np.ndarray]
# Longest line of an inputs file: one input of 16 MiB is a sequence of millions of tokens,
# beyond what any program evaluates within the default --memory-limit (a select on n
# tokens holds an n x n matrix).
MAX_INPUT_LINE_BYTES = 2**24
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace
_RATIONAL = re.compile(r"[+-]?\d+/\d+")


@dataclass(frozen=True)
class BadInput:
    """A line of an inputs file that is not a valid input: its text and why."""

    text: str
    error: RaspError


def parse_input(text: str, span: Span | None = None, *,
                exact: bool = False) -> Input:
    """One input: a JSON list of atoms (a list of only integers as an int64 array), or a
    plain string of characters. `span` is the whole text's place (errors point inside it)."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return _parse_list(text, len(text) - len(stripped), span, exact)
    if text == "":
        raise RaspTypeError("an input must not be empty", span)
    return text


def atoms(x: Input) -> "str | list[Atom]":
    """An input as Python atoms (a list of integers is read as an array)."""
    return x.tolist() if isinstance(x, np.ndarray) else x


def command_line_input(text: str, number: int, *, exact: bool = False) -> Input:
    """The `number`th (1-based) --input, its errors located in a source named <input N>."""
    source = Source(f"<input {number}>", text)
    return parse_input(text, Span(source, 1, 1, 1, len(text) + 1), exact=exact)


def read_inputs_file(path: str, *, max_bytes: int, exact: bool = False) -> Entries:
    """One input per line; blank lines are skipped. A line that is not a valid input is a
    BadInput whose error points into the line. A file over `max_bytes` is refused unread.

    A file of integer lists of one length (a generated batch) comes back as one int64
    matrix, row k the k-th input, and one of float lists (every number with a fraction
    or an exponent) as one float64 matrix: read in bulk, they hold no BadInput."""
    text = _read_text(path, max_bytes)
    bulk = _number_lists(text, exact)
    if bulk is not None:
        return bulk
    entries = _inputs_by_line(text, Source(path, text), exact)
    if not entries:
        raise RaspError(f"inputs file {path} contains no inputs")
    return entries


def _inputs_by_line(text: str, source: Source, exact: bool) -> list[Input | BadInput]:
    """Each non-blank line of `text` parsed alone: its input, or a BadInput."""
    entries: list = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(parse_input(line, Span(source, number, 1, number, len(line) + 1),
                                       exact=exact))
        except RaspError as error:
            entries.append(BadInput(line, error))
    return entries


# The bytes of a file that may be all number lists: digits, signs, the decimal point and
# exponent, commas, brackets and JSON's whitespace. Anything else (a string, true, NaN)
# goes line by line.
_NUMBER_LIST_BYTES = b"0123456789-+.eE,[] \t\r\n"
_FLOAT_BYTES = b".eE"


# Lines parsed per JSON call in bulk: a block's Python ints are freed while still in
# cache (100,000 lines of 64 ints: 0.79 s as one call, 0.43 s in blocks of 512).
BLOCK_LINES = 512


def _number_lists(text: str, exact: bool) -> Entries | None:
    """The inputs of `text` when every non-blank line is a non-empty JSON list of int64
    integers, or of floats only (not in exact mode: there a float is the decimal it
    spells), read in bulk (the line-by-line parse costs ~10 us a line in Python): one
    matrix if they share a length, else one array (ints) or list (floats) per line. None
    for any other text, which the line-by-line reader handles, errors and their places
    included."""
    data = text.encode()
    if data.translate(None, _NUMBER_LIST_BYTES):  # a byte outside the set
        return None
    floats = bool(data.translate(None, _FLOAT_BYTES) != data)
    if floats and exact:
        return None
    lines = [line for line in map(str.strip, text.splitlines()) if line]
    # One list per line, nothing nested, so that a block of lines parsed as one JSON list
    # (C speed, strict: "[1,,2]", "[01]" and "[-]" fail it) has exactly the lines' values:
    # each line opens and closes a list, and the text holds no other bracket.
    if not lines or not (text.count("[") == text.count("]") == len(lines) and all(
            line[0] == "[" and line[-1] == "]" for line in lines)):
        return None
    # Each number spells a decimal point (a number holds at most one; values = commas +
    # lines): none is an integer, so orjson, which reads an integer beyond 64 bits as a
    # float, reads the same values as json at 5x its speed.
    dotted = floats and data.count(b".") == data.count(b",") + len(lines)
    blocks: list[Any] = []
    for start in range(0, len(lines), BLOCK_LINES):
        block = "[" + ",".join(lines[start:start + BLOCK_LINES]) + "]"
        values: Any = _orjson_values(block) if dotted else None
        if values is None:
            try:
                values = json.loads(block)
            except json.JSONDecodeError:
                return None
        if not all(values):  # an empty input: the line-by-line reader says where
            return None
        if floats:
            if not dotted and set(map(type, itertools.chain.from_iterable(values))) != {float}:
                return None  # ints among the floats: line by line
            blocks.append(_float64_rows(values))
            continue
        try:
            blocks.append(_int64_rows(values))
        except OverflowError:  # beyond int64: Python ints, checked against MAX_INT_BITS
            return None
    matrices = [block for block in blocks if isinstance(block, np.ndarray)]
    if len(matrices) == len(blocks) and len({block.shape[1] for block in matrices}) == 1:
        return np.concatenate(matrices)
    rows: list[Input | BadInput] = [row for block in blocks for row in block]
    return rows


def _orjson_values(block: str) -> list[list[float]] | None:
    """The lists of `block` read by orjson, or None where it refuses them: orjson refuses
    numbers beyond the double range (json reads 1.0e400 as inf) besides invalid JSON."""
    try:
        values: list[list[float]] = orjson.loads(block)
    except orjson.JSONDecodeError:
        return None
    return values


def _int64_rows(values: list[list[int]]) -> "np.ndarray | list[np.ndarray]":
    """Integer lists as one int64 matrix if they share a length, else one array each."""
    if len({len(value) for value in values}) == 1:
        return np.array(values, dtype=np.int64)
    return [np.array(value, dtype=np.int64) for value in values]


def _float64_rows(values: list[list[float]]) -> "np.ndarray | list[list[float]]":
    """Float lists as one float64 matrix if they share a length, else as they are."""
    if len({len(value) for value in values}) == 1:
        return np.array(values, dtype=np.float64)
    return values


def _read_text(path: str, max_bytes: int) -> str:
    """The file's text, without a leading UTF-8 byte order mark (editors on Windows
    write one; it is not part of the first input). Only regular files: a FIFO or device
    would block or never end."""
    try:
        fd, info = open_regular(path, "inputs")
        try:
            data = read_open_file(fd, info, max_bytes)
        finally:
            os.close(fd)
    except FileTooLarge as error:
        raise RaspResourceError(
            f"inputs file {path} has {error.size}, above the limit of {max_bytes:,} bytes "
            "(an eighth of --memory-limit: parsed inputs take several times the space of "
            "their text); raise --memory-limit") from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        reason = getattr(error, "strerror", None) or error
        raise RaspLoadError(f"cannot read inputs file {path}: {reason}") from None
    data = data.removeprefix(codecs.BOM_UTF8)
    _check_line_lengths(data, path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        source = Source(path, data.decode("utf-8", "replace"))  # to quote the bad line
        line, column = utf8_error_position(data, error)
        raise RaspLoadError(
            f"inputs file is not UTF-8 text: byte 0x{data[error.start]:02x} here is "
            f"invalid ({error.reason})", Span(source, line, column, line, column + 1)) from None


def _check_line_lengths(data: bytes, path: str) -> None:
    """Refuse a line longer than MAX_INPUT_LINE_BYTES, located at its start (the line
    breaks are found by NumPy: a loop over millions of lines in Python takes seconds)."""
    if len(data) <= MAX_INPUT_LINE_BYTES:
        return
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [len(data)]))
    too_long = np.flatnonzero(ends - starts > MAX_INPUT_LINE_BYTES)
    if too_long.size:
        line = int(too_long[0])
        raise RaspResourceError(
            f"inputs file line {line + 1:,} has {int(ends[line] - starts[line]):,} bytes, "
            f"above the limit of {MAX_INPUT_LINE_BYTES:,} on one input "
            "(rasp_sim.cli.inputs.MAX_INPUT_LINE_BYTES)",
            Span(Source(path), line + 1, 1, line + 1, 2))


# ------------------------------------------------------------------------- JSON lists


class _TokenError(Exception):
    """Raised inside the JSON parser's number hooks; the caller locates `token`."""

    def __init__(self, token: str, message: str):
        super().__init__(message)
        self.token, self.message = token, message


def _parse_list(text: str, start: int, span: Span | None,
                exact: bool) -> "list[Atom] | np.ndarray":
    """The JSON list at text[start:] (which starts with '['), its elements checked."""
    # Only a line that long can hold an integer beyond the limit: shorter ones skip the check.
    decoder = _decoder(exact, checked_ints=len(text) > MAX_INT_DIGITS)
    try:
        try:
            if text.count("[") == 1 and "{" not in text:  # nothing nested: JSON's C parser
                value, end = decoder.raw_decode(text, start)
            else:  # element by element, refusing a nested value before parsing it
                value, end = _flat_list(text, start, decoder, span)
            if text[end:].strip():
                raise json.JSONDecodeError("Extra data", text, end)
            if exact:
                value = [_exact_string(x) if type(x) is str else x for x in value]
        except _TokenError as error:
            raise RaspResourceError(error.message, _shift(
                span, max(0, text.find(error.token, start)))) from None
    except json.JSONDecodeError as error:
        raise RaspTypeError(f"input looks like a JSON list but is not valid JSON: {error.msg}",
                            _shift(span, error.pos)) from None
    if not value:
        raise RaspTypeError("an input must not be empty", span)
    if set(map(type, value)) == {int}:  # the common case, as one array the evaluator
        try:                             # takes whole instead of reading atom by atom
            return np.array(value, dtype=np.int64)
        except OverflowError:  # beyond int64: a list of Python ints
            return value
    if None in value:
        raise RaspTypeError(f"input element {value.index(None)} is null: "
                            "sequence elements must be numbers, strings or booleans", span)
    return value


def _flat_list(text: str, start: int, decoder: json.JSONDecoder,
               span: Span | None) -> tuple[list[Atom], int]:
    """Parse a JSON list of atoms without recursing: a nested list or object is an error
    at its first character (json.loads would recurse, and overflow the stack when deep)."""
    values: list[Atom] = []
    pos = _after_space(text, start + 1)
    if text.startswith("]", pos):
        return values, pos + 1
    while True:
        if text.startswith(("[", "{"), pos):
            kind = "a list" if text[pos] == "[" else "an object"
            raise RaspTypeError(f"input element {len(values)} is {kind}: sequence elements "
                                "must be numbers, strings or booleans", _shift(span, pos))
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)
        pos = _after_space(text, pos)
        if text.startswith("]", pos):
            return values, pos + 1
        if not text.startswith(",", pos):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
        pos = _after_space(text, pos + 1)


def _after_space(text: str, pos: int) -> int:
    """The first position at or after `pos` that is not JSON whitespace."""
    match = _WHITESPACE.match(text, pos)
    return pos if match is None else match.end()


@functools.cache
def _decoder(exact: bool, checked_ints: bool) -> json.JSONDecoder:
    return json.JSONDecoder(parse_float=_exact_number if exact else None,
                            parse_int=_checked_int if checked_ints else None)


def _checked_int(token: str) -> int:
    digits = len(token.lstrip("-"))
    value = int(token) if digits <= MAX_INT_DIGITS else None
    if value is None or value.bit_length() > MAX_INT_BITS:
        raise _TokenError(token, f"an input integer of {digits:,} digits is above the limit "
                          f"of {MAX_INT_BITS:,} bits (rasp_sim.base.limits.MAX_INT_BITS)")
    return value


def _exact_number(token: str) -> Fraction:
    """The rational a JSON number or a 'p/q' string spells, refused (before Fraction
    builds it) if its numerator or denominator could exceed the integer limit."""
    mantissa, _, exponent = token.lower().partition("e")
    exponent_digits = exponent.lstrip("+-").lstrip("0")
    scale = int(exponent_digits or 0) if len(exponent_digits) <= 9 else MAX_INT_DIGITS + 1
    if len(mantissa) + scale > MAX_INT_DIGITS:
        shown = token if len(token) <= 30 else token[:27] + "..."
        raise _TokenError(token, f"the exact value of {shown} has more than "
                          f"{MAX_INT_DIGITS:,} digits, above the limit of {MAX_INT_BITS:,} "
                          "bits (rasp_sim.base.limits.MAX_INT_BITS)")
    return Fraction(token)


def _exact_string(text: str) -> "str | Fraction":
    """In exact mode a string spelling a rational, '1/3', is that rational (JSON has no
    rationals); '1/0' and every other string stay strings."""
    if _RATIONAL.fullmatch(text) and text.rpartition("/")[2].strip("0"):
        return _exact_number(text)
    return text


def _shift(span: Span | None, offset: int) -> Span | None:
    """A one-character span `offset` characters into `span`'s line."""
    if span is None:
        return None
    column = span.column + max(0, offset)
    return Span(span.source, span.line, column, span.line, column + 1)
