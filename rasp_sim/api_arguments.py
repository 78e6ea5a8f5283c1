"""The Python API's argument checks (docs/python.md): a wrong argument is a RaspTypeError
naming the function, the argument and what was given, raised before any work, never a
TypeError or IndexError from deep inside the evaluator or the compiler."""
from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

import numpy as np

from .errors import RaspTypeError

# What one input may be: a str (its characters are the tokens) or a sequence of atoms.
_SEQUENCES = (str, list, tuple, np.ndarray)


def input_list(function: str, inputs: Any) -> list:
    """`inputs` as a list of inputs, each a str or a sequence of atoms."""
    if isinstance(inputs, (str, bytes)):
        raise RaspTypeError(f"{function} takes a list of inputs, e.g. [{inputs!r}], not one "
                            f"{type(inputs).__name__}")
    if not isinstance(inputs, (list, tuple, np.ndarray)):
        raise RaspTypeError(f"{function} takes a list of inputs (each a str or a list of "
                            f"tokens), not {_shown(inputs)}")
    for index, sequence in enumerate(inputs):
        one_input(function, sequence, index)
    return list(inputs)


def one_input(function: str, sequence: Any, index: int = 0) -> Any:
    """One input: a str or a sequence of atoms."""
    if not isinstance(sequence, _SEQUENCES):
        raise RaspTypeError(f"{function}: input {index} is not a sequence (a str or a list of "
                            f"tokens): {_shown(sequence)}")
    return sequence


def text(function: str, value: Any, argument: str) -> str:
    if not isinstance(value, str):
        raise RaspTypeError(f"{function}: {argument} must be a str, not {_shown(value)}")
    return value


def integer(function: str, value: Any, argument: str, minimum: int) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise RaspTypeError(f"{function}: {argument} must be an int, not {_shown(value)}")
    if value < minimum:
        raise RaspTypeError(f"{function}: {argument} must be at least {minimum}, got {value}")
    return int(value)


def number_range(function: str, value: Any, argument: str) -> tuple[float, float]:
    """Two finite real numbers lo <= hi."""
    try:
        low, high = value
        low, high = float(low), float(high)
    except (TypeError, ValueError):
        raise RaspTypeError(f"{function}: {argument} must be two numbers (lo, hi), not "
                            f"{_shown(value)}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise RaspTypeError(f"{function}: {argument} must be two finite numbers with "
                            f"lo <= hi, got ({low!r}, {high!r})")
    return low, high


def vocabulary(function: str, value: Any) -> list:
    """A str (its characters) or a sequence of atoms (str, int, float, bool)."""
    if isinstance(value, str):
        return list(value)
    if not isinstance(value, (list, tuple, set, frozenset, range, np.ndarray)):
        raise RaspTypeError(f"{function}: vocab must be a str or a list of tokens, not "
                            f"{_shown(value)}")
    tokens = list(value)
    for token in tokens:
        if not isinstance(token, (str, numbers.Real, np.generic)):
            raise RaspTypeError(f"{function}: vocab entries are tokens (str, int, float or "
                                f"bool), not {_shown(token)}")
    return tokens


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"

