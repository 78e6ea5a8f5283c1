"""The program of a fixed universal transformer: E for a target, whichever the UT's kind."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..weights import Transformer
from .errors import UniversalError
from .gaussian import solve_embedding
from .spec import read_spec
from .sparse import sparse_embedding
from .paths import constraints, target_views
from .target import Shape, canonicalise


@dataclass(frozen=True, eq=False)
class Embedding:
    matrix: np.ndarray           # E (d x m)
    kind: str                    # "sparse" (views placed) or "random" (views solved for)
    condition: float | None      # cond(M) of a solved (random) UT
    residual: float | None       # max |E M - T| / max |T| of the solve
    view_scale: float            # max |W_in V_path T_terminal| over all views
    readout_scale: float         # the same over read-out views: one path's output size


def embed(target: Transformer, ut: Transformer) -> Embedding:
    """E such that UT(X; E) = target(X), or UniversalError naming what does not fit."""
    spec = read_spec(ut)
    canonical = canonicalise(target, spec.shape)
    views = target_views(canonical, spec.shape)
    if canonical.input_proj is not None:  # X W_in is the target's stream: E = W_in E_d
        views = [canonical.input_proj @ view for view in views]
    views = balanced(views, spec.shape)
    readout = [view for (terminal, _), view in zip(constraints(spec.shape), views)
               if terminal[0] == "O"]
    scales = (_max_abs(views), _max_abs(readout))
    if spec.kind == "sparse":
        return Embedding(sparse_embedding(views, spec), "sparse", None, None, *scales)
    if spec.kind == "random":
        solution = solve_embedding(views, ut)
        return Embedding(solution.embedding, "random", solution.condition, solution.residual,
                         *scales)
    raise UniversalError(f"metadata.universal.kind: unknown kind {spec.kind!r}")


def balanced(views: list[np.ndarray], shape: Shape) -> list[np.ndarray]:
    """`views` with each head's query views scaled by 2^-e and its key views by 2^e, e the
    integer nearest to log2(max |query view| / max |key view|) / 2, so that both are of
    the size of the square root of the head's scores. The scores (q 2^-e)(k 2^e) are the
    target's, exactly in floating point (powers of 2), so the sparse machine's output does
    not change by a bit; a random machine's E, solved to an accuracy relative to the
    largest view, gains the ratio of the two sizes (a compiled head's queries carry its
    logit scale, 1,500, and its keys are one-hot: docs/universal.md)."""
    pairs = list(zip(constraints(shape), views))
    largest: dict[tuple, float] = {}
    for (terminal, _), view in pairs:
        largest[terminal] = max(largest.get(terminal, 0.0), float(np.abs(view).max(initial=0.0)))
    out = []
    for (terminal, _), view in pairs:
        if terminal[0] == "O":
            out.append(view)
            continue
        _, layer, head = terminal
        query, key = largest[("Q", layer, head)], largest[("K", layer, head)]
        exponent = round(0.5 * np.log2(query / key)) if query > 0 and key > 0 else 0
        out.append(np.ldexp(view, -exponent if terminal[0] == "Q" else exponent))
    return out


def _max_abs(arrays: list[np.ndarray]) -> float:
    return max(float(np.abs(a).max(initial=0.0)) for a in arrays)


def program(ut: Transformer, embedding: np.ndarray) -> Transformer:
    """The universal transformer with E installed as its input projection."""
    if embedding.ndim != 2 or embedding.shape[1] != ut.width:
        raise UniversalError(f"embedding: shape {embedding.shape} does not fit the universal "
                             f"transformer (expected d x m with m = {ut.width})")
    return ut.replace(input_proj=embedding)
