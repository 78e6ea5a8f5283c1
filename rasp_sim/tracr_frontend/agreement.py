"""Checking a converted Program against tracr's own `rasp.evaluate`, input by input.

The reference is tracr's evaluator: where it raises on an input, or gives None at a
position, tracr defines no value there and nothing is compared; everywhere else the
converted Program must give a value equal to tracr's (Python's ==, so 1 == 1.0 == True:
docs/tracr.md says where rasp-sim's type differs), and must not fail on an input where
tracr gives a value. Floats are compared exactly, not within a tolerance: both sides
average left to right from 0 and divide once, as tracr's Aggregate does.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..compiler.tracr_backend.validate import domain_size
from ..base.errors import RaspError
from ..language.program import Program

# Above this many inputs a domain is sampled instead of enumerated.
WHOLE_DOMAIN_LIMIT = 100_000


@dataclass
class Agreement:
    checked: int = 0  # inputs where tracr gave a value and rasp-sim's was compared
    tracr_failed: int = 0  # inputs where rasp.evaluate raised: nothing to compare
    positions: int = 0  # positions compared
    none_positions: int = 0  # positions where tracr gave None
    wrong: int = 0  # inputs where rasp-sim disagrees or fails
    disagreements: list[tuple[list, list, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.wrong == 0


def domain(vocab: Iterable[Any], min_len: int, max_len: int, *, limit: int = WHOLE_DOMAIN_LIMIT,
           samples: int = 10_000, seed: int = 0) -> tuple[list[list[Any]], bool]:
    """Every input over `vocab` of lengths min_len..max_len if there are at most `limit`
    (and True), else `samples` seeded random ones plus structured ones: each token
    repeated, and the vocabulary in order and reversed, at every length (and False)."""
    tokens = sorted(vocab, key=repr)
    # the compiler's count, capped: a huge max_len costs nothing to size
    if domain_size(len(tokens), max_len, min_len) <= limit:
        return [list(w) for n in range(min_len, max_len + 1)
                for w in itertools.product(tokens, repeat=n)], True
    rng = random.Random(seed)
    inputs = []
    for n in range(min_len, max_len + 1):
        inputs += [[t] * n for t in tokens]
        inputs += [[tokens[i % len(tokens)] for i in range(n)],
                   [tokens[-1 - i % len(tokens)] for i in range(n)]]
    inputs += [[rng.choice(tokens) for _ in range(rng.randint(min_len, max_len))]
               for _ in range(samples)]
    return inputs, False


def compare(tracr_value: Callable[[list], Sequence[Any]], program: Program,
            inputs: Sequence[list], name: str | None = None,
            keep: int = 5) -> Agreement:
    """`program`'s value `name` against `tracr_value(input)` (rasp.evaluate of the tracr
    program) on every input; the first `keep` disagreements are kept."""
    result = Agreement()
    ours = _values(program, inputs, name)
    for tokens, mine in zip(inputs, ours):
        try:
            theirs = list(tracr_value(list(tokens)))
        except Exception:  # noqa: BLE001: tracr's evaluate raises what the program raises
            result.tracr_failed += 1
            continue
        result.checked += 1
        if isinstance(mine, RaspError):
            wrong = True
            mine = mine.headline()
        else:
            defined = [i for i, v in enumerate(theirs) if v is not None]
            result.none_positions += len(theirs) - len(defined)
            result.positions += len(defined)
            wrong = len(mine) != len(theirs) or any(not _equal(mine[i], theirs[i])
                                                    for i in defined)
        if wrong:
            result.wrong += 1
            if len(result.disagreements) < keep:
                result.disagreements.append((list(tokens), theirs, mine))
    return result


def _equal(mine: Any, theirs: Any) -> bool:
    if hasattr(theirs, "item") and type(theirs).__module__ == "numpy":
        theirs = theirs.item()
    return bool(mine == theirs)


def _values(program: Program, inputs: Sequence[list], name: str | None) -> list[Any]:
    """The program's value on each input, or the RaspError it raises there; evaluated in
    batches, one input at a time only where a batch fails."""
    out: list[Any] = []
    batch = 2_000
    for start in range(0, len(inputs), batch):
        chunk = [list(x) for x in inputs[start:start + batch]]
        try:
            out += program.run(chunk, name)
        except RaspError:
            for tokens in chunk:
                try:
                    out += program.run([tokens], name)
                except RaspError as error:
                    out.append(error)
    return out
