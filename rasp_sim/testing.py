"""Property-testing one's own RASP programs and compiled models (docs/python.md).

- hypothesis strategies for a program's domain: `token_sequences(vocab, ...)` and real
  matrices in the library's layouts (docs/constructions.md: row-major, operands
  concatenated): `matrix(n, d)`, `concat(...)`;
- `assert_matches(subject, reference, inputs, ...)`: the program (interpreter, exact
  mode) or the compiled model against a Python/NumPy reference, reporting the first
  failing input, position, both values and the tolerance.

Needs hypothesis (the `dev` extra, or `pip install hypothesis`).
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction
from numbers import Number, Real
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
from hypothesis import strategies as st

from .base import api_arguments as arguments
from .base.errors import RaspTypeError
from .base.limits import MAX_COLLECTION_LENGTH
from .compiled.model import Model
from .language.program import Program

# Defaults of assert_matches: |got - want| <= atol + rtol * |want| (numpy.isclose's rule).
# float64 RASP arithmetic rounds like NumPy's, so programs that follow the reference's
# formula agree to a few ulps; 1e-9 leaves a margin of 10^6 over that and is the bound the
# compiler's validation uses (docs/compiler.md).
RTOL = 1e-9
ATOL = 1e-9


class Layout(list):
    """A flat input (the list a program reads) that remembers the matrices it was laid out
    from, row-major and concatenated: `parts`, as NumPy arrays, for the reference."""

    def __init__(self, values: Iterable[Any], parts: Sequence[np.ndarray]):
        super().__init__(values)
        self.parts = tuple(parts)


def token_sequences(vocab: Sequence[Any], *, min_len: int = 1, max_len: int = 8
                    ) -> st.SearchStrategy[list]:
    """Lists of min_len..max_len tokens drawn from `vocab` (a str's characters or a list
    of atoms): inputs of a program or a compiled model's domain."""
    tokens = arguments.vocabulary("token_sequences", vocab)
    if not tokens:
        raise RaspTypeError("token_sequences: vocab is empty: there is no token to draw")
    min_len = _length("token_sequences", min_len, "min_len", 1)
    max_len = _length("token_sequences", max_len, "max_len", min_len)
    return st.lists(st.sampled_from(tokens), min_size=min_len, max_size=max_len)


def _length(function: str, value: Any, argument: str, minimum: int) -> int:
    """A length of a list a program reads (rasp_sim.base.limits.MAX_COLLECTION_LENGTH)."""
    return arguments.integer(function, value, argument, minimum, MAX_COLLECTION_LENGTH)


def _strategy(function: str, value: Any, argument: str) -> st.SearchStrategy:
    if not isinstance(value, st.SearchStrategy):
        raise RaspTypeError(f"{function}: {argument} must be a hypothesis strategy, not "
                            f"{arguments.shown(value)}")
    return value


def matrix(n: int, d: int, *, elements: st.SearchStrategy | None = None
           ) -> st.SearchStrategy[Layout]:
    """An n x d matrix laid out row-major (`Layout`, its array in `.parts[0]`). Elements
    default to finite floats in [-10, 10]; pass e.g. `st.integers(-9, 9)` or
    `st.fractions(...)` for exact mode."""
    n = _length("matrix", n, "n", 1)
    d = _length("matrix", d, "d", 1)
    if n * d > MAX_COLLECTION_LENGTH:
        raise RaspTypeError(f"matrix: n x d = {n * d:,} entries, above the limit of "
                            f"{MAX_COLLECTION_LENGTH:,} (rasp_sim.base.limits.MAX_COLLECTION_LENGTH)")
    values = (st.floats(-10, 10, allow_nan=False) if elements is None
              else _strategy("matrix", elements, "elements"))
    return st.lists(values, min_size=n * d, max_size=n * d).map(
        lambda flat: Layout(flat, [np.array(flat, dtype=object if _exact(flat) else float)
                                   .reshape(n, d)]))


def concat(*layouts: st.SearchStrategy[Layout], length: int | None = None,
           pad: Any = 0) -> st.SearchStrategy[Layout]:
    """The matrices of `layouts` one after another (matmul's input is concat(A, B)),
    padded with `pad` to `length` positions when the program needs a longer sequence."""
    for index, layout in enumerate(layouts):
        _strategy("concat", layout, f"layout {index}")
    if length is not None:
        length = _length("concat", length, "length", 1)
    arguments.token("concat", pad, "pad")

    def joined(parts: tuple[Layout, ...]) -> Layout:
        flat = [x for part in parts for x in part]
        if length is not None:
            if length < len(flat):
                raise RaspTypeError(f"concat: length {length} is shorter than the "
                                    f"{len(flat)} entries of the matrices")
            flat += [pad] * (length - len(flat))
        return Layout(flat, [m for part in parts for m in part.parts])
    return st.tuples(*layouts).map(joined)


def _exact(values: Iterable[Any]) -> bool:
    return any(isinstance(v, Fraction) for v in values)


def assert_matches(subject: Program | Model, reference: Callable[[Any], Sequence[Any]],
                   inputs: Iterable[Any], *, name: str | None = None, rtol: float = RTOL,
                   atol: float = ATOL, exact: bool = False) -> None:
    """Check `subject` against `reference` on every input; an AssertionError names the
    first mismatch (input, position, both values, the tolerance).

    `subject` is a Program (evaluated by the interpreter, its s-op `name`, default the
    last name assigned) or a compiled Model. `reference(input)` returns the expected
    output, one value per position (a list or a NumPy array). Numbers agree when
    |got - want| <= atol + rtol * |want|; other values (strings, bools) must be equal and
    of the same type (True is not 1). `exact=True` demands equality: the program must have
    been parsed with exact=True (Fractions), and rtol/atol are not used. `inputs` is a
    list of inputs: a str is refused, not taken for its characters as one-token inputs."""
    inputs = _checked_inputs(subject, reference, inputs)
    name = arguments.optional_text("assert_matches", name, "name")
    rtol, atol = _tolerance(rtol, "rtol"), _tolerance(atol, "atol")
    exact = arguments.flag("assert_matches", exact, "exact")
    if exact and not (isinstance(subject, Program) and subject.exact):
        raise RaspTypeError("assert_matches(exact=True) checks an exact program: parse or "
                            "load it with exact=True (a compiled model computes in float64)")
    if isinstance(subject, Model):
        if name is not None:
            raise RaspTypeError("assert_matches: name applies to a Program, not a compiled "
                                "Model")
        outputs = subject.run(inputs)
        who = "the model"
    else:
        outputs = subject.run(inputs, name)
        who = f"the program ({'exact' if subject.exact else 'float64'})"
    for x, got in zip(inputs, outputs):
        want = _expected(reference, x)
        if len(got) != len(want):
            raise AssertionError(f"on input {list(x)!r}: {who} gives {len(got)} values, the "
                                 f"reference {len(want)}")
        for position, (a, b) in enumerate(zip(got, want)):
            if not _agree(a, b, rtol, atol, exact):
                rule = "exact equality" if exact else f"|got - want| <= {atol:g} + {rtol:g} * |want|"
                raise AssertionError(f"on input {list(x)!r} at position {position}: {who} "
                                     f"gives {a!r}, the reference {b!r} (tolerance: {rule})")


def _checked_inputs(subject: Any, reference: Any, inputs: Any) -> list:
    """The subject, the reference and the inputs (a list: a str would be tested character
    by character, each a one-token input, and pass with a wrong reference)."""
    if not isinstance(subject, (Program, Model)):
        raise RaspTypeError("assert_matches: subject must be a Program or a compiled Model, "
                            f"not {arguments.shown(subject)}")
    if not callable(reference):
        raise RaspTypeError("assert_matches: reference must be a function of one input, not "
                            f"{arguments.shown(reference)}")
    if isinstance(inputs, Iterator):  # a generator of inputs: read, up to a bound
        inputs = list(itertools.islice(inputs, MAX_COLLECTION_LENGTH + 1))
        if len(inputs) > MAX_COLLECTION_LENGTH:
            raise RaspTypeError(f"assert_matches: more than {MAX_COLLECTION_LENGTH:,} inputs")
    return arguments.input_list("assert_matches", inputs)


def _tolerance(value: Any, argument: str) -> float:
    """A finite, non-negative real number, as a float."""
    number = math.nan
    if isinstance(value, Real) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an int beyond floats
            pass
    if not (math.isfinite(number) and number >= 0):
        raise RaspTypeError(f"assert_matches: {argument} must be a finite number >= 0, not "
                            f"{arguments.shown(value)}")
    return number


def _expected(reference: Callable[[Any], Any], x: Any) -> list:
    """reference(x) as a list of values, one per position."""
    expected = reference(x)
    if isinstance(expected, np.ndarray):
        return list(expected.ravel())
    if isinstance(expected, (str, bytes)) or not isinstance(expected, Iterable):
        raise RaspTypeError(f"assert_matches: reference({list(x)!r}) returned "
                            f"{arguments.shown(expected)}, not a list of one value per "
                            "position")
    return list(expected)


def _agree(a: Any, b: Any, rtol: float, atol: float, exact: bool) -> bool:
    if isinstance(b, np.generic):
        b = b.item()
    numbers = all(isinstance(v, Number) and not isinstance(v, bool) for v in (a, b))
    if not numbers:
        return a == b and type(a) is type(b)
    if exact or a == b:
        return a == b
    return bool(abs(a - b) <= atol + rtol * abs(b))
