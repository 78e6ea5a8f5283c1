"""tracr programs in: a tracr RASP expression as a rasp-sim `Program` (docs/tracr.md).

`from_tracr(sop, vocab, max_seq_len)` writes the expression as RASP source text
(translate.py) and runs it as `rasp_sim.parse` does, so the Program is an ordinary one:
`run`, `run_batch`, `analyse`, drawing, `rasp_sim.compile`, proofs and traces all work
on it, and `to_rasp` gives the same text for a file (`rasp-sim from-tracr`).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..program import Program
from .columns import ConversionError
from .translate import Translation, translate

__all__ = ["ConversionError", "Translation", "from_tracr", "to_rasp", "translate"]


def to_rasp(sop: Any, vocab: Sequence[Any], max_seq_len: int) -> Translation:
    """The tracr s-op `sop` as RASP text over tokens in `vocab` and lengths
    1..max_seq_len (tracr's own value-set inference takes the same two)."""
    return translate(sop, vocab, max_seq_len)


def from_tracr(sop: Any, vocab: Sequence[Any], max_seq_len: int) -> Program:
    """The tracr s-op `sop` as a rasp-sim Program whose last name is `sop`'s label (made
    a RASP name: other characters become `_`, a reserved name gains `_`). Its values
    equal `tracr.rasp.rasp.evaluate`'s on every input over `vocab` of length
    1..max_seq_len wherever tracr's are not None (docs/tracr.md says what stands for
    None); an input outside them fails with a located error."""
    from ..api import parse

    translation = translate(sop, vocab, max_seq_len)
    return parse(translation.text, file=f"<tracr {sop.label}>")
