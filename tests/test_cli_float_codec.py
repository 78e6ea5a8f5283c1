"""`run --inputs FILE --json` carries float values exactly through its fast codec (orjson
for files of float lists and float64 rows; docs/cli.md): every double, subnormals, -0.0
and the extremes included, comes back with the same bits, and NaN and the infinities
(which an inputs file spells NaN, Infinity and -Infinity, as Python's json reads them)
as the strings the JSON mode documents."""
from __future__ import annotations

import json
import math
import re
import struct

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cli_helpers import run_cli, write
from rasp_sim.cli.inputs import read_inputs_file
from rasp_sim.cli.json_text import json_text, number_rows_text

IDENTITY = "y = tokens_float;\n"
MAX_BYTES = 2**30
EXTREMES = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
            1.7976931348623157e308, -1.7976931348623157e308, 1e-7, 1e-5, 1e16, 1e22]
doubles = st.one_of(st.floats(allow_nan=False, allow_infinity=False),  # subnormals too
                    st.sampled_from(EXTREMES))
with_non_finite = st.one_of(doubles, st.sampled_from([math.nan, math.inf, -math.inf]))
# A JSON number token: "e-07", "E+2" and zero padding as people write them.
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def spelled(x: float, dotted: bool) -> str:
    """x as an inputs file spells it: repr, or (dotted) with a decimal point in every
    number, the form the bulk reader gives to orjson."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    text = repr(x)
    if dotted and "." not in text:
        mantissa, e, exponent = text.partition("e")
        text = f"{mantissa}.0{e}{exponent}"
    return text


def read_back(value: object) -> float:
    """A JSON value of the output as the double it stands for ("NaN" and the infinities
    are strings, which float() reads)."""
    assert isinstance(value, (float, str)), value
    return float(value)


def same_double(x: float, y: float) -> bool:
    """Bit-equal, except that every NaN is one NaN (the JSON mode writes "NaN" for each)."""
    if math.isnan(x):
        return math.isnan(y)
    return struct.pack("<d", x) == struct.pack("<d", y)


@st.composite
def float_files(draw: st.DrawFn) -> list[list[float]]:
    """Rows of doubles, mostly of one length (read as one float64 matrix)."""
    values = draw(st.sampled_from([doubles, with_non_finite]))
    length = draw(st.integers(1, 6))
    row = st.lists(values, min_size=length, max_size=length)
    if draw(st.booleans()):
        row = st.lists(values, min_size=1, max_size=6)
    return draw(st.lists(row, min_size=1, max_size=6))


# tmp_path is shared by a test's examples: each writes its files anew.
WITH_TMP_PATH = [HealthCheck.function_scoped_fixture]


@settings(max_examples=150, deadline=None, suppress_health_check=WITH_TMP_PATH)
@given(float_files(), st.booleans())
def test_doubles_round_trip_through_the_cli_exactly(tmp_path, capsys, rows, dotted):
    program = write(tmp_path, IDENTITY)
    inputs = write(tmp_path, "".join(
        "[" + ", ".join(spelled(x, dotted) for x in row) + "]\n" for row in rows), "in.txt")
    code, out, err = run_cli(capsys, "run", program, "--inputs", inputs, "--json")
    assert code == 0, err
    entries = [json.loads(line) for line in out.splitlines()]
    assert len(entries) == len(rows)
    for row, entry in zip(rows, entries):
        for key in ("input", "output"):
            back = [read_back(value) for value in entry[key]]
            assert len(back) == len(row)
            assert all(map(same_double, row, back)), (key, row, back)


@settings(max_examples=300, deadline=None, suppress_health_check=WITH_TMP_PATH)
@given(st.lists(st.tuples(st.text("0123456789", min_size=1, max_size=25),
                          st.text("0123456789", min_size=1, max_size=25),
                          st.integers(-340, 320), st.sampled_from(["-", ""])),
                min_size=1, max_size=8))
def test_dotted_float_files_read_as_python_reads_each_number(tmp_path, parts):
    """Numbers with long mantissas, near and beyond the double range (1.5e400 is inf, as
    json reads it): the bulk reader's values are float()'s, bit for bit."""
    tokens = [f"{sign}{whole.lstrip('0') or '0'}.{fraction}e{exponent}"
              for whole, fraction, exponent, sign in parts]
    path = tmp_path / "in.txt"
    path.write_text(f"[{', '.join(tokens)}]\n[{', '.join(reversed(tokens))}]\n")
    matrix = read_inputs_file(str(path), max_bytes=MAX_BYTES)
    assert isinstance(matrix, np.ndarray) and matrix.dtype == np.float64
    expected = [float(token) for token in tokens]
    assert all(map(same_double, expected, matrix[0].tolist()))
    assert all(map(same_double, expected[::-1], matrix[1].tolist()))


def same_atom(x: object, y: object) -> bool:
    """Equal with the same type (1 and 1.0, 0.0 and -0.0 differ)."""
    if type(x) is not type(y):
        return False
    if isinstance(x, float) and isinstance(y, float):
        return same_double(x, y)
    return x == y


float_matrices = hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0,
                                                       max_side=5))
atoms = st.one_of(with_non_finite, st.integers(-2**70, 2**70), st.booleans(),
                  st.text(max_size=3), st.none())
atom_rows = st.lists(st.lists(st.one_of(doubles, st.integers(-2**63, 2**63 - 1)), max_size=5)
                     | st.lists(atoms, max_size=5), max_size=5)


@settings(max_examples=400, deadline=None)
@given(float_matrices | atom_rows)
def test_number_rows_text_is_json_text_up_to_number_notation(rows):
    """Each row's text reads back to json_text's values, types and bits (-0.0 keeps its
    sign; NaN and the infinities are json_text's strings), laid out as json_text lays
    it out; rows of other atoms (strings, None, big ints) are json_text's text."""
    texts = number_rows_text(rows)
    as_lists = rows.tolist() if isinstance(rows, np.ndarray) else rows
    assert len(texts) == len(as_lists)
    for row, text in zip(as_lists, texts):
        old = json_text(row)
        assert NUMBER.sub("N", text) == NUMBER.sub("N", old)
        new_values, old_values = json.loads(text), json.loads(old)
        assert len(new_values) == len(old_values)
        assert all(map(same_atom, new_values, old_values)), (text, old)


def test_json_floats_are_written_in_the_notation_docs_cli_states(tmp_path, capsys):
    """Exponents without zero padding (1e-7, not repr's 1e-07), in the input read in
    bulk and in the output alike."""
    program = write(tmp_path, IDENTITY)
    values = [1e-7, 2.5e-8, 1.5e-300, 1e22, -3.0]
    inputs = write(tmp_path, f"[{', '.join(map(repr, values))}]\n".replace("e-", ".0e-", 1),
                   "in.txt")
    code, out, err = run_cli(capsys, "run", program, "--inputs", inputs, "--json")
    assert code == 0, err
    entry = json.loads(out)
    assert entry["input"] == entry["output"] == values
    assert re.search(r"e[+-]?0\d", out) is None, out
    assert "1e-7" in out
