"""When a compiled model's value agrees with the program's (`agree`: categorical values
equal by value and type, numbers within the compiler's tolerance), and which input id
each vocabulary entry has: the rules that validation (validate.py), its bulk form
(bulk_compare.py) and the proofs share, below all of them."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .runtime import NUMERIC_TOLERANCE


def agree(a: Any, b: Any, numeric: bool) -> tuple[bool, float]:
    """(equal within the rules, absolute error if numbers)."""
    # True == 1 in Python, but the program's values are typed: a bool is not an int.
    same_kind = isinstance(a, str) == isinstance(b, str) and isinstance(a, bool) == isinstance(b, bool)
    if a == b and same_kind:  # also inf == inf, whose difference is nan
        return True, 0.0
    if numeric or (isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool)):
        try:
            error = abs(float(a) - float(b))
        except (TypeError, ValueError):
            return False, math.inf
        return error <= NUMERIC_TOLERANCE * max(1.0, abs(float(b))), error
    return False, 0.0


def vocabulary_ids(tokens: Sequence[Any], vocab: Sequence[Any]) -> np.ndarray:
    """The input encoder's id of each vocabulary entry (by value and type: 1 is not True)."""
    return np.array([next(i for i, t in enumerate(tokens) if t == v and type(t) is type(v))
                     for v in vocab], dtype=np.int64)
