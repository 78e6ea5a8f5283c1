"""JSON text for the `--json` options: strict JSON that any JSON reader accepts.

Python's `json` writes NaN and infinities as the bare words `NaN` and `Infinity`, which
are not JSON (RFC 8259, section 6) and which strict readers (JavaScript's JSON.parse,
jq, Go) refuse. Non-finite floats are written as the strings "NaN", "Infinity" and
"-Infinity" instead: unlike null they keep which value it was, and `float()` in Python
and `Number()` in JavaScript read them back. Exact rationals are strings too ("1/3"):
a JSON number cannot hold them.
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

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
