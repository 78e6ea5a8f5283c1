"""Check UT(X; E) = T(X) on random inputs of several lengths and report the error."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..forward import forward
from ..weights import Transformer
from .embed import program


@dataclass(frozen=True)
class Verification:
    max_error: float        # max |UT(X; E) - T(X)|
    scale: float            # max |T(X)|
    relative_error: float   # max_error / scale
    sequences: int
    lengths: tuple[int, ...]
    seconds: float


def random_inputs(dim: int, lengths: tuple[int, ...], batch: int, seed: int):
    rng = np.random.default_rng(seed)
    for length in lengths:
        yield rng.normal(size=(batch, length, dim))


def verify(ut: Transformer, embedding: np.ndarray, target: Transformer,
           lengths: tuple[int, ...] = tuple(range(1, 33)), batch: int = 4,
           seed: int = 0) -> Verification:
    """Run both on the same standard-normal inputs; errors relative to the output scale."""
    started = time.perf_counter()
    simulator = program(ut, embedding)
    worst, scale = 0.0, 0.0
    dim = embedding.shape[0]
    for inputs in random_inputs(dim, lengths, batch, seed):
        want = forward(target, inputs)
        worst = max(worst, float(np.abs(forward(simulator, inputs) - want).max()))
        scale = max(scale, float(np.abs(want).max()))
    relative = worst / scale if scale > 0 else worst
    return Verification(worst, scale, relative, batch * len(lengths), tuple(lengths),
                        time.perf_counter() - started)
