"""tracr programs in: a tracr RASP expression as a rasp-sim `Program` (docs/tracr.md).

`from_tracr(sop, vocab, max_seq_len)` writes the expression as RASP source text
(translate.py) and runs it as `rasp_sim.parse` does, so the Program is an ordinary one:
`run`, `run_batch`, `analyse`, drawing, `rasp_sim.compile`, proofs and traces all work
on it, and `to_rasp` gives the same text for a file (`rasp-sim from-tracr`).
`compile_tracr` takes the arguments of tracr's `compile_rasp_to_model` and returns a
validated (or, with `exhaustive=True`, proven) rasp-sim `Model`.
"""
from __future__ import annotations

import os
from typing import Any, Collection

from ..base import api_arguments as arguments
from ..base.counts import positive
from ..base.errors import RaspTypeError
from ..compiled.model import Model
from ..language.program import Program
from .columns import MAX_COLUMN_VALUES, ConversionError
from .translate import Translation, translate

__all__ = ["ConversionError", "Translation", "compile_tracr", "from_tracr", "to_rasp"]


def to_rasp(sop: Any, vocab: Collection[Any], max_seq_len: int) -> Translation:
    """The tracr s-op `sop` as RASP text over tokens in `vocab` and lengths
    1..max_seq_len (tracr's own value-set inference takes the same two); `notes` say
    which table entries were left out because the function raises there."""
    return translate(sop, _vocab("to_rasp", vocab), _max_seq_len("to_rasp", max_seq_len))


def from_tracr(sop: Any, vocab: Collection[Any], max_seq_len: int) -> Program:
    """The tracr s-op `sop` as a rasp-sim Program whose last name is `sop`'s label (made
    a RASP name: other characters become `_`, a reserved name gains `_`). Its values
    equal `tracr.rasp.rasp.evaluate`'s on every input over `vocab` of length
    1..max_seq_len wherever tracr's are not None (docs/tracr.md says what stands for
    None). Like tracr's evaluate, it runs on any input; a lookup table it reaches with a
    value it was not built for fails there, with a located error."""
    from ..api import parse

    translation = translate(sop, _vocab("from_tracr", vocab),
                            _max_seq_len("from_tracr", max_seq_len))
    return parse(translation.text, file=f"<tracr {sop.label}>")


def compile_tracr(program: Any, vocab: Collection[Any], max_seq_len: int,
                  causal: bool = False, compiler_bos: str = "BOS",
                  compiler_pad: str | None = None, mlp_exactness: int = 100, *,
                  exhaustive: bool = False, samples: int | None = None, seed: int = 0,
                  force: bool = False, proof_dir: str | os.PathLike | None = None,
                  workers: int | None = None, scheduler: str | None = None) -> Model:
    """A drop-in for tracr's `compiling.compile_rasp_to_model`: the same arguments, and a
    rasp-sim Model (validated against the program on the whole domain up to 100,000
    inputs, else sampled; with `exhaustive=True` proven on every input of lengths
    1..max_seq_len, as `rasp_sim.compile` does). `compiler_bos` and `compiler_pad` are
    checked as tracr checks them (strings outside the vocabulary), but a rasp-sim Model
    takes inputs without BOS and pads itself, so they are not tokens of its runs;
    `mlp_exactness` (tracr's discretisation of numerical MLPs) has no counterpart, since
    rasp-sim's MLPs are exact on the values that reach them."""
    from ..api import compile as compile_program

    tokens = _vocab("compile_tracr", vocab)
    for name, marker in (("compiler_bos", compiler_bos), ("compiler_pad", compiler_pad)):
        if marker is not None and (not isinstance(marker, str) or marker in tokens):
            raise RaspTypeError(f"compile_tracr: {name} must be a string outside the "
                                f"vocabulary, not {marker!r}")
    arguments.option_integer("compile_tracr", mlp_exactness, "mlp_exactness", 1, positive)
    arguments.flag("compile_tracr", causal, "causal")
    converted = from_tracr(program, tokens, max_seq_len)
    return compile_program(converted, vocab=sorted(tokens, key=repr), max_len=max_seq_len,
                           causal=causal, samples=samples, seed=seed, force=force,
                           exhaustive=exhaustive, proof_dir=proof_dir, workers=workers,
                           scheduler=scheduler)


def _vocab(function: str, vocab: Collection[Any]) -> list[Any]:
    """A set or list of finite atoms (a str is not taken for its characters here: tracr's
    vocab is a set)."""
    if isinstance(vocab, (str, bytes)) or not isinstance(vocab, Collection):
        raise RaspTypeError(f"{function}: vocab must be a set or list of tokens, not "
                            f"{type(vocab).__name__}")
    return arguments.vocabulary(function, vocab)


def _max_seq_len(function: str, max_seq_len: Any) -> Any:
    """translate.py checks the length and names it in its refusal; an int too long to
    print there (Python's str(int) limit) is refused here."""
    if isinstance(max_seq_len, int) and max_seq_len.bit_length() > 64:
        raise RaspTypeError(f"{function}: max_seq_len is a {max_seq_len.bit_length():,}-bit "
                            f"integer, above the limit of {MAX_COLUMN_VALUES:,}")
    return max_seq_len
