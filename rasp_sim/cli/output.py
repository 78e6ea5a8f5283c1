"""How `rasp-sim run` prints results: one entry per input, as text or as JSON lines.

Results come a column at a time (the evaluator's array for a group of inputs): the type
label is read off the column's dtype once, and rows are formatted by bulk conversion
(`tolist`, `str.join`, one JSON encoder), not atom by atom; only object columns (mixed
int/float rows, big ints, Fractions) are labelled row by row.
"""
from __future__ import annotations

import json
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ..display import column_type_label, type_label
from ..errors import RaspError
from .inputs import atoms


def _exact_json(x: Any) -> Any:
    # JSON has no rationals: exact results are written as "p/q" strings.
    if isinstance(x, Fraction):
        return x.numerator if x.denominator == 1 else str(x)
    raise TypeError(f"{type(x).__name__} is not JSON serializable")


_ENCODER = json.JSONEncoder(default=_exact_json)


class Printer:
    """Formats the outputs of `name` (an s-op, selector or model) on inputs."""

    def __init__(self, name: str, as_json: bool):
        self.name, self.as_json = name, as_json

    def outputs(self, inputs: Sequence[Any], column: Any) -> list[str]:
        """One entry per input; `column` is an array of shape (b, n) or (b, n, n) (a
        selector), or a list of b outputs; row k is the output on inputs[k]."""
        rows = column.tolist() if isinstance(column, np.ndarray) else list(column)
        inputs, int_inputs = _atoms(inputs)
        if _is_selector(column, rows):
            return [self._selector(x, matrix) for x, matrix in zip(inputs, rows)]
        is_array = isinstance(column, np.ndarray)
        kind = column.dtype.kind if is_array else "O"
        label = column_type_label(column.dtype) if is_array else None  # None: per row
        labels = [label] * len(rows) if label else [type_label(row) for row in rows]
        # str of a list of ints is its JSON, and str of a list of numbers is its text
        # form: the fastest bulk conversion Python has.
        if self.as_json:
            texts = map(str, rows) if kind == "i" else map(_ENCODER.encode, rows)
            shown = map(str if int_inputs else _ENCODER.encode, inputs)
            return [f'{{"input": {x}, "output": {text}, "type": "{row_label}"}}'
                    for x, text, row_label in zip(shown, texts, labels)]
        texts = map(str, rows) if kind in "bif" else map(_list_text, rows)
        return [f"{self._head(x)} = {text} ({row_label})"
                for x, text, row_label in zip(inputs, texts, labels)]

    def failure(self, input: Any, error: RaspError) -> str:
        """The entry of an input that failed (`input` is the text of a line that did not
        parse): its error as one line, `file:line:col: kind: message`."""
        if self.as_json:
            return _ENCODER.encode({"input": _atoms([input])[0][0], "error": error.headline()})
        return error.headline()

    def _selector(self, x: Any, matrix: list[list[bool]]) -> str:
        if self.as_json:
            return _ENCODER.encode({"input": x, "selector": matrix})
        rows = ["  " + " ".join("1" if selected else "." for selected in row) for row in matrix]
        return "\n".join([f"{self._head(x)} = selector (query rows, key columns):", *rows])

    def _head(self, x: Any) -> str:
        return f"{self.name}({json.dumps(x) if isinstance(x, str) else _list_text(x)})"


def _atoms(inputs: Sequence[Any]) -> tuple[list, bool]:
    """The inputs as Python atoms (the inputs reader gives integer lists as arrays), and
    whether they are all such integer lists (of one length: converted in one call)."""
    arrays = [x for x in inputs if isinstance(x, np.ndarray)]
    if arrays and len(arrays) == len(inputs) and len({len(x) for x in arrays}) == 1:
        return np.stack(arrays).tolist(), True
    return [atoms(x) for x in inputs], False


def _is_selector(column: Any, rows: list) -> bool:
    if isinstance(column, np.ndarray):
        return column.ndim == 3
    return bool(rows) and bool(rows[0]) and isinstance(rows[0][0], list)


def _list_text(values: Sequence[Any]) -> str:
    # str, not a rounded form: a research tool must not hide the last digits of a float
    # (str of a float is its shortest round-tripping repr), and str of a Fraction is p/q.
    return "[" + ", ".join(map(str, values)) + "]"
