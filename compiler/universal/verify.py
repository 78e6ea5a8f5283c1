"""Check UT(X; E) = T(X) on random inputs of several lengths, against a stated tolerance.

Errors are measured against `scale` = max(max |T(X)|, max |X| * readout_scale): the output
size, floored by the size of one path's contribution, so that an output which nearly
cancels does not turn ordinary float64 rounding into a large "relative" error.

Tolerances (relative to `scale`):
- sparse UT: 1e-12. E holds the target's own path products, and the 0/1 weights only
  select and move them, so the UT repeats the target's float64 operations up to summation
  order (observed errors ~1e-15).
- random UT: RANDOM_FACTOR * cond(M) * u * max|X| * view_scale / scale. E comes from a
  backward-stable SVD solve, so E is determined to O(cond(M) u) relative to the size of the
  right-hand side (view_scale), and the UT's forward pass turns that into an output error
  of the same relative size; RANDOM_FACTOR = 100 is a safety margin over the worst ratio
  error / (cond(M) u) = 6.5 observed over 150 random configurations with H, L <= 3.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..forward import forward
from ..weights import Transformer
from .embed import Embedding, program

SPARSE_TOLERANCE = 1e-12
RANDOM_FACTOR = 100.0


@dataclass(frozen=True)
class Verification:
    max_error: float        # max |UT(X; E) - T(X)|
    scale: float            # see the module docstring
    relative_error: float   # max_error / scale
    tolerance: float        # relative to scale
    sequences: int
    lengths: tuple[int, ...]
    seconds: float

    @property
    def passed(self) -> bool:
        return bool(self.relative_error <= self.tolerance)


def random_inputs(dim: int, lengths: tuple[int, ...], batch: int, seed: int):
    rng = np.random.default_rng(seed)
    for length in lengths:
        yield rng.normal(size=(batch, length, dim))


def tolerance(embedding: Embedding, input_max: float, scale: float) -> float:
    if embedding.kind == "sparse":
        return SPARSE_TOLERANCE
    assert embedding.condition is not None  # every solved (random) embedding has one
    rounding = RANDOM_FACTOR * embedding.condition * np.finfo(float).eps
    return rounding * input_max * embedding.view_scale / scale


def verify(ut: Transformer, embedding: Embedding, target: Transformer,
           lengths: tuple[int, ...] = tuple(range(1, 33)), batch: int = 4, seed: int = 0,
           reference: Callable[[Transformer, np.ndarray], np.ndarray] = forward) -> Verification:
    """Run the programmed UT and `reference(target, X)` on the same standard-normal inputs."""
    started = time.perf_counter()
    simulator = program(ut, embedding.matrix)
    worst = output_max = input_max = 0.0
    for inputs in random_inputs(embedding.matrix.shape[0], lengths, batch, seed):
        want = reference(target, inputs)
        worst = max(worst, float(np.abs(forward(simulator, inputs) - want).max()))
        output_max = max(output_max, float(np.abs(want).max()))
        input_max = max(input_max, float(np.abs(inputs).max()))
    scale = max(output_max, input_max * embedding.readout_scale, np.finfo(float).tiny)
    return Verification(worst, scale, worst / scale, tolerance(embedding, input_max, scale),
                        batch * len(lengths), tuple(lengths), time.perf_counter() - started)
