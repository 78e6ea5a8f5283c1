"""How `rasp-sim run` prints results: one entry per input, as text or as JSON lines.

Results come a column at a time (the evaluator's array for a group of inputs): the type
label is read off the column's dtype once, and rows are formatted by bulk conversion
(`tolist`, `str.join`, one JSON encoder; orjson for float64 rows in JSON), not atom by
atom; only object columns (mixed int/float rows, big ints, Fractions) are labelled row by
row.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Sequence

import numpy as np

from ..language.display import column_type_label, type_label
from ..base.errors import RaspError
from .inputs import atoms
from .json_text import number_rows_text, json_text


class Printer:
    """Formats the outputs of `name` (an s-op, selector or model) on inputs."""

    def __init__(self, name: str, as_json: bool):
        self.name, self.as_json = name, as_json

    def outputs(self, inputs: "Sequence[Any] | np.ndarray", column: Any) -> list[str]:
        """One entry per input; `column` is an array of shape (b, n) or (b, n, n) (a
        selector), or a list of b outputs; row k is the output on inputs[k]."""
        is_array = isinstance(column, np.ndarray)
        if is_array and column.dtype.kind == "i" and column.ndim == 2:
            rows: Sequence[Any] = column
            texts: Iterable[str] = int_rows_text(column)  # text and JSON alike
        elif self.as_json and _is_float64_matrix(column):
            rows, texts = column, number_rows_text(column)
        else:
            rows = column.tolist() if is_array else list(column)
            if _is_selector(column, rows):
                return [self._selector(x, matrix) for x, matrix in zip(_atoms(inputs), rows)]
            # str of a list of numbers is its text form, and its JSON when they are ints
            kind = column.dtype.kind if is_array else "O"
            if self.as_json:  # mixed ints and floats (an object column) the common case
                texts = number_rows_text(rows) if kind == "O" else map(json_text, rows)
            else:
                texts = map(str if kind in "bf" else _list_text, rows)
        label = column_type_label(column.dtype) if is_array else None  # None: per row
        labels = [label] * len(rows) if label else [type_label(row) for row in rows]
        if self.as_json:
            return [f'{{"input": {x}, "output": {text}, "type": "{row_label}"}}'
                    for x, text, row_label in zip(_json_inputs(inputs), texts, labels)]
        return [f"{self._head(x)} = {text} ({row_label})"
                for x, text, row_label in zip(_atoms(inputs), texts, labels)]

    def failure(self, input: Any, error: RaspError) -> str:
        """The entry of an input that failed (`input` is the text of a line that did not
        parse): its error as one line, `file:line:col: kind: message`."""
        if self.as_json:
            return json_text({"input": _atoms([input])[0], "error": error.headline()})
        return error.headline()

    def _selector(self, x: Any, matrix: list[list[bool]]) -> str:
        if self.as_json:
            return json_text({"input": x, "selector": matrix})
        rows = ["  " + " ".join("1" if selected else "." for selected in row) for row in matrix]
        return "\n".join([f"{self._head(x)} = selector (query rows, key columns):", *rows])

    def _head(self, x: Any) -> str:
        return f"{self.name}({json.dumps(x) if isinstance(x, str) else _list_text(x)})"


def _json_inputs(inputs: "Sequence[Any] | np.ndarray") -> Iterable[str]:
    """Each input as JSON text (integer rows of one length through int_rows_text)."""
    if isinstance(inputs, np.ndarray):  # a matrix read in bulk
        return int_rows_text(inputs) if inputs.dtype.kind == "i" else number_rows_text(inputs)
    arrays = [x for x in inputs if isinstance(x, np.ndarray)]
    if len(arrays) == len(inputs) and len({len(x) for x in arrays}) == 1:
        return int_rows_text(np.stack(arrays))
    return number_rows_text(_atoms(inputs))


def _atoms(inputs: "Sequence[Any] | np.ndarray") -> list:
    """The inputs as Python atoms (the inputs reader gives integer lists as arrays)."""
    if isinstance(inputs, np.ndarray):  # a matrix, one input a row
        return inputs.tolist()
    return [atoms(x) for x in inputs]


# An integer matrix whose values span at most this many (or its size, if larger) is
# printed through a table of its values' texts: converting each int to text dominates
# printing, and a batch of tokens or positions repeats a few values many times.
TABLE_SPAN = 4096


def int_rows_text(matrix: np.ndarray) -> list[str]:
    """Each row of an integer matrix as text, "[1, -2, 3]" (its JSON and str form alike):
    3x faster than str of each row where the values span a small range."""
    if matrix.size:
        low, high = int(matrix.min()), int(matrix.max())
        if high - low <= max(TABLE_SPAN, matrix.size):
            table = np.array([str(value) for value in range(low, high + 1)], dtype=object)
            return ["[" + ", ".join(row) + "]" for row in table[matrix - low].tolist()]
    return [str(row) for row in matrix.tolist()]


def _is_float64_matrix(column: Any) -> bool:
    return isinstance(column, np.ndarray) and column.dtype == np.float64 and column.ndim == 2


def _is_selector(column: Any, rows: list) -> bool:
    if isinstance(column, np.ndarray):
        return column.ndim == 3
    return bool(rows) and bool(rows[0]) and isinstance(rows[0][0], list)


def _list_text(values: Sequence[Any]) -> str:
    # str, not a rounded form: a research tool must not hide the last digits of a float
    # (str of a float is its shortest round-tripping repr), and str of a Fraction is p/q.
    if set(map(type, values)) <= _REPR_IS_STR:  # the same text, from the list's C repr
        return str(list(values))
    return "[" + ", ".join(map(str, values)) + "]"


_REPR_IS_STR = {int, float}
