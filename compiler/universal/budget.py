"""Sizes of the universal constructions in closed form, and their memory estimates.

The sizes grow as H^L (as (H+1)^L with residual connections), so the commands check them
against a memory limit before building anything; nothing here enumerates a path. The
counts are exact (tests compare them with the constructions); the byte estimates add the
measured bookkeeping of the Python construction to the arrays' exact sizes.
"""
from __future__ import annotations

import math

from rasp_sim.base.errors import RaspResourceError

from .paths import base, constraint_count, geometric
from .target import Shape

ASTRONOMIC_BITS = 64  # above 2^64 paths no count is computed: nothing that large fits


def check_not_astronomic(shape: Shape, what: str) -> None:
    """Refuse shapes whose path count alone exceeds 2^64 (no limit could hold them)."""
    paths = base(shape)
    bits = shape.layers * math.log2(paths) if paths > 1 else 0.0
    if bits > ASTRONOMIC_BITS:
        raise RaspResourceError(
            f"{what} has {paths}^{shape.layers} "
            f"(about 2^{bits:.0f}) attention paths per read-out and needs more than "
            f"2^{ASTRONOMIC_BITS} bytes, beyond any memory limit; use fewer heads or layers")


def sparse_width(shape: Shape, tied: bool) -> int:
    """m of the sparse construction: C, plus the tied layout's shorter read-out chains."""
    extra = shape.out_dim * geometric(shape.heads, shape.layers) if tied else 0
    return constraint_count(shape) + extra


def value_nonzeros(shape: Shape, tied: bool) -> int:
    """Non-zeros of all R^V together (each moves a block one stage on)."""
    heads, layers, k, c = shape.heads, shape.layers, shape.head_dim, shape.out_dim
    read = 2 * heads * k  # the Q/K columns a layer consumes
    if shape.residual:
        return read * (geometric(heads + 1, layers) - layers) + c * ((heads + 1) ** layers - 1)
    if tied:  # every layer holds the union: every column whose chain is not empty
        return layers * (sparse_width(shape, True) - read - c)
    # the columns left at stage s, summed over s < L, less those consumed there
    return (read * _stage_sum(heads, layers) + c * (geometric(heads, layers + 1) - 1)
            - read * layers)


def _stage_sum(heads: int, layers: int) -> int:
    """sum of geometric(heads, n) for n = 1..layers."""
    if heads == 1:
        return layers * (layers + 1) // 2
    return (heads * geometric(heads, layers) - layers) // (heads - 1)


def _unit(shape: Shape) -> Shape:
    """`shape` with every block one column wide: its block counts instead of column counts."""
    return Shape(1, 1, 1, shape.heads, shape.layers, shape.residual, shape.causal)


# Measured peaks (tracemalloc over build, size report and save, shapes up to m = 6000)
# stay below these: Python bookkeeping per state column (block tables, labels, the JSON
# header) and per moved block, plus a fixed allowance; arrays count at their exact size.
PER_COLUMN = 400
PER_MOVED_BLOCK = 300
FIXED = 4 * 2**20
SPARSE_ENTRY = 24  # int64 row, int64 column, float64 value


def random_bytes(shape: Shape, tied: bool, m: int) -> int:
    """The Gaussian UT's dense arrays (tied: one set of heads)."""
    copies = shape.heads * (1 if tied else shape.layers)
    return 8 * (copies * (2 * m * shape.head_dim + m * m) + m * shape.out_dim)


def sparse_bytes(shape: Shape, tied: bool) -> int:
    """The sparse UT's arrays: R^Q, R^K, P select k or c columns; R^V moves blocks."""
    selectors = 2 * shape.heads * shape.layers * shape.head_dim + shape.out_dim
    return SPARSE_ENTRY * (selectors + value_nonzeros(shape, tied))


def build_bytes(shape: Shape, tied: bool, m: int | None) -> int:
    """Peak memory of building, reporting and saving a universal transformer (sparse when
    m is None, else Gaussian of width m)."""
    if m is not None:  # save and the report make transient copies of the largest array
        return random_bytes(shape, tied, m) + 16 * m * m + FIXED
    width = sparse_width(shape, tied)
    return (sparse_bytes(shape, tied) + PER_COLUMN * width
            + PER_MOVED_BLOCK * value_nonzeros(_unit(shape), tied) + FIXED)


def target_bytes(shape: Shape) -> int:
    """A target's arrays, twice (the model and its saved form)."""
    d, k = shape.dim, shape.head_dim
    return 2 * 8 * (shape.layers * shape.heads * (2 * d * k + d * d) + d * shape.out_dim) + FIXED


def embed_bytes(shape: Shape, kind: str, tied: bool, m: int) -> int:
    """Loading the UT and a target and computing E: the target's views V_path T_t (d x C
    and a d x d prefix product per path), E (d x m), and for a random UT the constraint
    matrix M (m x C), its memoised suffix products and its SVD."""
    d, count = shape.dim, constraint_count(shape)
    blocks = constraint_count(_unit(shape))
    views = 8 * d * count + 8 * d * d * blocks + PER_MOVED_BLOCK * blocks + 8 * d * m
    if kind == "random":
        unit = 2 * shape.heads * shape.head_dim
        # (terminal, suffix) products kept by constraint_matrix: every path is a suffix
        # with residual connections; without, a terminal at layer t has suffixes of each
        # length up to t
        suffixes = (count if shape.residual else
                    unit * _stage_sum(shape.heads, shape.layers)
                    + shape.out_dim * geometric(shape.heads, shape.layers + 1))
        solve = 8 * (suffixes * m + 3 * m * count + 2 * count * count)
        return random_bytes(shape, tied, m) + target_bytes(shape) + views + solve
    return build_bytes(shape, tied, None) + target_bytes(shape) + views


def verify_bytes(shape: Shape, kind: str, tied: bool, m: int, batch: int, longest: int) -> int:
    """Embedding plus the forward pass on the longest inputs: the (batch, n, m) stream and
    a head's products and (batch, n, n) scores at a time."""
    return embed_bytes(shape, kind, tied, m) + 8 * batch * longest * (6 * m + 2 * longest)


def check_memory(estimate: int, limit: int, what: str) -> None:
    if estimate > limit:
        raise RaspResourceError(
            f"{what} needs about {estimate:,} bytes, above the memory limit of {limit:,} "
            "bytes; raise it with --memory-limit SIZE")
