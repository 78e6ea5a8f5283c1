"""JSON text for the `--json` options: strict JSON that any JSON reader accepts.

Python's `json` writes NaN and infinities as the bare words `NaN` and `Infinity`, which
are not JSON (RFC 8259, section 6) and which strict readers (JavaScript's JSON.parse,
jq, Go) refuse. Non-finite floats are written as the strings "NaN", "Infinity" and
"-Infinity" instead: unlike null they keep which value it was, and `float()` in Python
and `Number()` in JavaScript read them back. Exact rationals are strings too ("1/3"):
a JSON number cannot hold them.

Rows of finite numbers, the bulk of `run --inputs` on float layouts, are written by
orjson (shortest round-trip digits, as `repr`; ~4x faster), ints and floats alike: the same values, in a notation
that may differ from `repr`'s (docs/cli.md: `1e-7` for `1e-07`, `0.00001` for `1e-05`).
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import orjson

_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _exact(x: Any) -> Any:
    if isinstance(x, Fraction):
        return x.numerator if x.denominator == 1 else str(x)
    raise TypeError(f"{type(x).__name__} is not JSON serializable")


_STRICT = json.JSONEncoder(default=_exact, allow_nan=False)


def json_text(value: Any, indent: int | None = None) -> str:
    """`value` as strict JSON (`indent` as json.dumps)."""
    encoder = _STRICT if indent is None else json.JSONEncoder(
        default=_exact, allow_nan=False, indent=indent)
    try:  # the fast path: most values hold no NaN or infinity
        return encoder.encode(value)
    except ValueError:  # allow_nan=False's refusal
        return encoder.encode(_finite(value))


def _finite(x: Any) -> Any:
    """`x` with each non-finite float replaced by its string."""
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else _NON_FINITE[x]
    if isinstance(x, (list, tuple)):
        return [_finite(item) for item in x]
    if isinstance(x, dict):
        return {key: _finite(item) for key, item in x.items()}
    return x


def number_rows_text(rows: "np.ndarray | list[list[Any]]") -> list[str]:
    """Each row of numbers (a float64 matrix, or lists of Python atoms) as strict JSON,
    "[1.5, -0.0, 2]": json_text's text, up to the notation of floats (orjson's)."""
    texts = _orjson_rows(rows)
    if texts is None:  # values orjson does not write as json_text does
        return [json_text(row) for row in (rows.tolist() if isinstance(rows, np.ndarray)
                                           else rows)]
    return texts


def _orjson_rows(rows: "np.ndarray | list[list[Any]]") -> list[str] | None:
    """The rows' texts by orjson, or None where they hold anything but finite numbers."""
    if not len(rows):
        return []
    if isinstance(rows, np.ndarray) and rows.dtype != np.float64:
        rows = rows.tolist()  # orjson writes a float32 in its own shortest digits
    try:
        data = orjson.dumps(rows, option=orjson.OPT_SERIALIZE_NUMPY)
    except orjson.JSONEncodeError:  # an int beyond 64 bits, a Fraction, ...
        return None
    # null: NaN, an infinity (json_text writes their strings) or None; a quote or a brace:
    # a string or an object, which may hold commas and brackets; more brackets: nesting.
    if b"null" in data or b'"' in data or b"{" in data or data.count(b"[") != len(rows) + 1:
        return None
    # The rows hold no brackets: "],[" parts them, and ", " between values is
    # json_text's layout, which the text keeps.
    return data[1:-1].replace(b"],[", b"]\n[").replace(b",", b", ").decode().split("\n")
