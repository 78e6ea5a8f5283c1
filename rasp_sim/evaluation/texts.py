"""Inputs that are strings of one length, read as one matrix of characters.

A batch of strs (the Python API's usual input, `Program.run(["abc", ...])`) is joined once
with NUL between the inputs: the join is the type check (it refuses anything but strs), and
where every input has n characters and none holds a NUL, the joined text's length and its
number of NULs say so, and NUL sits at each separator's place; two C passes over the text
instead of one pass per input for the types and another for the lengths
(docs/benchmarks.md). ASCII text (`str.isascii` reads a flag) is copied as bytes and
widened once to the engine's `<U1` (UCS-4); other text goes through NumPy's own str
conversion, as before.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .columns import CHARACTERS


class Texts(list):
    """A group's inputs as they came (strs, which messages quote) with their characters:
    `characters[i]` is input i as a `<U1` row."""

    characters: np.ndarray

    def rows(self, start: int, stop: int) -> "Texts":
        """Inputs start to stop (a chunk of the group), with their rows of the matrix.
        (Not `__getitem__`: a Python-level index would slow every `rows[0]`.)"""
        return texts_of(self[start:stop], self.characters[start:stop])


def texts_of(inputs: list, characters: np.ndarray) -> Texts:
    texts = Texts(inputs)
    texts.characters = characters
    return texts


def one_length_texts(inputs: Sequence[Any]) -> Texts | None:
    """`inputs` with their characters, if they are non-empty strs of one length without a
    NUL (which the `<U1` matrix cannot tell from ""), else None. `Texts` are returned as
    they are: a caller that read them once (`Program.run`, whose argument check this is)
    passes them on."""
    if isinstance(inputs, Texts):
        return inputs
    b = len(inputs)
    if not b:
        return None
    try:
        text = "\0".join(inputs)
    except TypeError:  # an input that is not a str
        return None
    if b == 1:  # one input (a notebook's call): no separators to look for
        if not text or "\0" in text:
            return None
        # (`[None]`, not `reshape(1, -1)`: 0.13 us of a notebook's call)
        return texts_of(list(inputs), np.array([text]).view(CHARACTERS)[None])
    n, rest = divmod(len(text) + 1, b)
    n -= 1  # each input's n characters and its separator (the last has none)
    if n <= 0 or rest:
        return None
    if text.isascii():
        flat = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:
        flat = np.array([text]).view(np.uint32)
    # NUL at every separator's place and nowhere else: the inputs are the n characters
    # between them
    if np.count_nonzero(flat) != flat.size - (b - 1) or flat[n :: n + 1].any():
        return None
    size = flat.itemsize
    matrix = np.ndarray((b, n), flat.dtype, buffer=flat, strides=(size * (n + 1), size))
    return texts_of(list(inputs), matrix.astype(np.uint32).view(CHARACTERS))
