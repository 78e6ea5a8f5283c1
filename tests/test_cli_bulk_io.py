"""`rasp-sim run`'s bulk paths give what the per-item paths give: the reader of inputs files
(a file of integer lists read as one int64 matrix, of float lists as one float64 matrix)
and the printer of integer matrices."""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cli_helpers import run_cli, write
from rasp_sim.cli import inputs as inputs_module
from rasp_sim.cli.inputs import BadInput, _inputs_by_line, _number_lists
from rasp_sim.cli.output import TABLE_SPAN, int_rows_text
from rasp_sim.base.errors import Source

INT64 = 2 ** 63

integers = st.one_of(st.integers(-20, 20), st.integers(-INT64, INT64),  # both edges of int64
                     st.integers(-10 ** 30, 10 ** 30))
spaces = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def int_list_line(draw: st.DrawFn) -> str:
    values = draw(st.lists(integers, min_size=0, max_size=6))
    parts = [draw(spaces) + str(v) + draw(spaces) for v in values]
    return draw(spaces) + "[" + ",".join(parts) + "]" + draw(spaces)


# Floats as Python writes them (repr) and as people do ("1.50", "2e3", "-0.0", "1E+2").
floats = st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                   st.sampled_from(["1.50", "2e3", "-0.0", "1E+2", "0.1", "-3.25e-2", "1e999"]))


@st.composite
def float_list_line(draw: st.DrawFn) -> str:
    values = draw(st.lists(floats, min_size=0, max_size=6))
    parts = [draw(spaces) + v + draw(spaces) for v in values]
    return draw(spaces) + "[" + ",".join(parts) + "]" + draw(spaces)


@st.composite
def mutated(draw: st.DrawFn, line: str) -> str:
    """`line` with a character of the bulk reader's alphabet inserted or one removed:
    mostly invalid JSON ("[1,,2]", "[-]", "[1 2]", "[[1]", "[01]") the bulk reader must
    decline."""
    if not line or draw(st.booleans()):
        return line
    k = draw(st.integers(0, len(line) - 1))
    if draw(st.booleans()):
        return line[:k] + line[k + 1:]
    return line[:k] + draw(st.sampled_from(list("0-,[] \t\r.eE+"))) + line[k:]


lines = st.one_of(int_list_line().flatmap(mutated), float_list_line().flatmap(mutated),
                  st.just(""), st.just("  "),
                  st.sampled_from(["abc", "[1.5, 2]", '["a"]', "[true]", "[1, 2]\r", "[NaN]"]))


def _typed(row: list) -> list[str]:
    """Atoms with their types and signs: 1 and 1.0, 0.0 and -0.0 differ."""
    return [f"{type(x).__name__} {x!r}" for x in row]


@settings(max_examples=400, deadline=None)
@given(st.lists(lines, min_size=0, max_size=8), st.sampled_from(["\n", "\r\n"]),
       st.sampled_from([1, 2, 3, inputs_module.BLOCK_LINES]))
def test_bulk_reader_equals_the_line_by_line_reader(file_lines, newline, block_lines):
    text = newline.join(file_lines)
    by_line = _inputs_by_line(text, Source("inputs.txt", text), exact=False)
    with mock.patch.object(inputs_module, "BLOCK_LINES", block_lines):  # blocks of lines
        bulk = _number_lists(text, exact=False)
    event("bulk" if bulk is not None else "line by line")
    if bulk is None:
        return
    rows = [row.tolist() if isinstance(row, np.ndarray) else row for row in bulk]
    assert all(not isinstance(entry, BadInput) for entry in by_line)
    assert [_typed(row) for row in rows] == [_typed(np.asarray(entry).tolist()) for entry in by_line]


@pytest.mark.parametrize("block_lines", [1, 2, inputs_module.BLOCK_LINES])
def test_a_batch_of_one_length_is_one_matrix_and_mixed_lengths_are_rows(block_lines):
    with mock.patch.object(inputs_module, "BLOCK_LINES", block_lines):
        matrix = _number_lists("[1, 2]\n\n[3,4]\n  [-5 ,6] \n", exact=False)
        # one length per block, another in the next: rows
        rows = _number_lists("[1, 2]\n[3, 4]\n[5]\n[6]\n", exact=False)
        floats = _number_lists("[1.5, 2e3]\n[-0.0, 1E+2]\n", exact=False)
        mixed = _number_lists("[1.5, 2]\n", exact=False)  # an int among floats: by line
        exact = _number_lists("[1.5, 2.0]\n", exact=True)  # exact decimals: by line
    assert isinstance(matrix, np.ndarray) and matrix.tolist() == [[1, 2], [3, 4], [-5, 6]]
    assert isinstance(rows, list) and [r.tolist() for r in rows] == [[1, 2], [3, 4], [5], [6]]
    assert isinstance(floats, np.ndarray) and floats.dtype == np.float64
    assert _typed(floats.ravel().tolist()) == _typed([1.5, 2000.0, -0.0, 100.0])
    assert mixed is None and exact is None


INT_PROGRAM = "sorted = sort(tokens_int, tokens_int);\n"
FLOAT_PROGRAM = 'load "linalg";\nc = matmul(tokens_asis, 2, 2, 2);\n'


def _int_batch(mixed_lengths: bool) -> str:
    return "".join(f"[{(7 * k) % 5}, {k % 3}, {-k}{', 9' * (mixed_lengths and k % 2)}, "
                   f"{k * k}]\n" for k in range(300))


def _float_batch(mixed_lengths: bool) -> str:
    return "".join(f"[{k / 7!r}, -0.0, 1.5e{k % 5}, {-k / 3!r}, 0.25, 2.0, {k * 1.0!r}, 1e-3"
                   f"{', 4.5' * (mixed_lengths and k % 2)}]\n" for k in range(300))


# A line that sends the whole file line by line: "abc" is not a number list (its tokens are
# not integers, so it fails), and an int list among float lists is read by line too.
@pytest.mark.parametrize("program_text, make_batch, by_line_tail, by_line_code", [
    (INT_PROGRAM, _int_batch, "abc\n", 1), (FLOAT_PROGRAM, _float_batch, "[1, 2]\n", None)])
@pytest.mark.parametrize("mixed_lengths", [False, True])  # a matrix, or rows
def test_a_file_read_in_bulk_runs_as_the_same_file_read_line_by_line(
        capsys, tmp_path, program_text, make_batch, by_line_tail, by_line_code, mixed_lengths):
    program = write(tmp_path, program_text)
    batch = make_batch(mixed_lengths)
    bulk = write(tmp_path, batch, "bulk.txt")
    by_line = write(tmp_path, batch + by_line_tail, "by_line.txt")
    for flags in ([], ["--json"]):
        code, bulk_out, _ = run_cli(capsys, "run", program, "--inputs", bulk, *flags)
        assert code == 0
        code, line_out, _ = run_cli(capsys, "run", program, "--inputs", by_line, *flags)
        assert by_line_code is None or code == by_line_code
        assert line_out.splitlines()[:300] == bulk_out.splitlines()
        assert len(bulk_out.splitlines()) == 300


# Values near zero (printed through the table of value texts), across all of int64 (each
# row by str), and spans just around the table's limit.
matrix_values = st.one_of(st.integers(-3, 3), st.integers(-2 ** 63, 2 ** 63 - 1),
                          st.integers(-TABLE_SPAN, TABLE_SPAN))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.int64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=9),
                  elements=matrix_values))
def test_integer_rows_print_as_str_of_their_lists(matrix):
    span = int(matrix.max()) - int(matrix.min()) if matrix.size else 0
    event("table" if 0 < matrix.size and span <= max(TABLE_SPAN, matrix.size) else "str")
    assert int_rows_text(matrix) == [str(row) for row in matrix.tolist()]
