"""The program of a fixed universal transformer: E for a target, whichever the UT's kind."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..weights import Transformer
from .errors import UniversalError
from .gaussian import solve_embedding
from .spec import read_spec
from .sparse import sparse_embedding
from .target import canonicalise


@dataclass(frozen=True, eq=False)
class Embedding:
    matrix: np.ndarray           # E (d x m)
    condition: float | None      # cond(M) for a solved (random) UT; None when placed directly
    residual: float | None       # relative max |E M - T| of the solve


def embed(target: Transformer, ut: Transformer) -> Embedding:
    """E such that UT(X; E) = target(X), or UniversalError naming what does not fit."""
    spec = read_spec(ut)
    canonical = canonicalise(target, spec.shape)
    if spec.kind == "sparse":
        return Embedding(sparse_embedding(canonical, spec), None, None)
    if spec.kind == "random":
        solution = solve_embedding(canonical, ut)
        return Embedding(solution.embedding, solution.condition, solution.residual)
    raise UniversalError(f"metadata.universal.kind: unknown kind {spec.kind!r}")


def program(ut: Transformer, embedding: np.ndarray) -> Transformer:
    """The universal transformer with E installed as its input projection."""
    if embedding.ndim != 2 or embedding.shape[1] != ut.width:
        raise UniversalError(f"embedding: shape {embedding.shape} does not fit the universal "
                             f"transformer (expected d x m with m = {ut.width})")
    return ut.replace(input_proj=embedding)
