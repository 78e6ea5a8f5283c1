"""Fold the MLP blocks of a compiled model that act linearly on its stream into the blocks
that read after them, so that the model becomes an attention-only target.

Two kinds of MLP block that `rasp-sim compile` writes add x A to their input stream x,
with A a fixed D x D matrix:

- a BOS clean-up. A head whose default is carried by the BOS key also writes that default
  at the BOS position, and when another block reads the head's s-op the compiler follows
  the head with an MLP that subtracts it there (docs/compiler.md; tracr_backend/blocks.py,
  `scrubbed`): ReLU units reading only the BOS token's direction b. As x_b is 1 at BOS and
  0 elsewhere, ReLU(x_b W1[b]) W2 = x_b ReLU(W1[b]) W2, so A = e_b (ReLU(W1[b]) W2);
- a linear map of numerical s-ops (LinearSequenceMap: a + b, 2 * a): ReLU units in pairs
  with opposite weights, ReLU(t) w - ReLU(-t) w = t w exactly, so A = sum over pairs of
  W1[:, j] W2[j] over the first unit j of each pair.

Without those blocks the stream is v where the model has t = v P, P = (I + A_1)(I + A_2)...
over the blocks removed so far, as long as what a kept block writes, o, passes P
unchanged: o A_i = 0, i.e. no head writes a direction a removed block reads (tracr writes
each s-op once, and no block writes the BOS token's direction; both are checked). A later
head reads t W = v (P W), so with W' = P W for its query, key and value maps, and
U' = P U for the unembedding, every head computes exactly what it computed before, at
every position: the BOS handling lives inside the heads, the sum inside its readers.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..weights import (AttentionBlock, AttentionHead, Block, Matrix, MLPBlock, Transformer,
                       as_dense)
from .errors import UniversalError


def bos_direction(model: Transformer) -> tuple[int | None, str]:
    """(the residual direction that is 1 at BOS and 0 at every other position, "") for a
    token model, or (None, why there is none)."""
    encoder, tokens, positions = model.input_encoder, model.token_embed, model.pos_embed
    if encoder is None or tokens is None or positions is None:
        return None, "the model has no token and position embeddings"
    bos = list(encoder.tokens).index(encoder.bos)
    others = np.delete(tokens, bos, axis=0)
    candidates = np.flatnonzero((tokens[bos] == 1) & np.all(others == 0, axis=0)
                                & np.all(positions == 0, axis=0))
    if candidates.size == 0:
        return None, ("no residual direction is set by the BOS token alone (the token "
                      "embedding was edited)")
    column = int(candidates[0])
    for index, block in enumerate(model.layers):
        if np.any(writes(block)[:, column] != 0):
            return None, f"layers.{index} writes the BOS token's direction"
    return column, ""


def writes(block: Block) -> np.ndarray:
    """The rows a block can add to the stream (its output maps and biases)."""
    if isinstance(block, MLPBlock):
        return np.vstack([as_dense(block.w2), block.b2])
    return np.vstack([_ov(head) for head in block.heads])


def _ov(head: AttentionHead) -> np.ndarray:
    value = as_dense(head.w_v)
    return value if head.w_o is None else value @ as_dense(head.w_o)


def cleanup_map(block: MLPBlock, column: int | None) -> np.ndarray | None:
    """A of a BOS clean-up reading direction `column` (ReLU units without biases reading
    only that direction), or None if `block` is not one."""
    first = as_dense(block.w1)
    if column is None or not _plain_relu(block) or np.any(np.delete(first, column, axis=0)):
        return None
    added = np.zeros((first.shape[0], block.b2.shape[0]))
    added[column] = np.maximum(first[column], 0.0) @ as_dense(block.w2)
    return added


def linear_map(block: MLPBlock) -> np.ndarray | None:
    """A of an MLP block that is a linear map (its ReLU units in pairs of opposite
    weights), or None if `block` is not one."""
    if not _plain_relu(block):
        return None
    first, second = as_dense(block.w1), as_dense(block.w2)
    unmatched = list(range(first.shape[1]))
    added = np.zeros((first.shape[0], second.shape[1]))
    while unmatched:
        unit = unmatched.pop(0)
        partner = next((j for j in unmatched if np.array_equal(first[:, j], -first[:, unit])
                        and np.array_equal(second[j], -second[unit])), None)
        if partner is None:
            return None
        unmatched.remove(partner)
        added += np.outer(first[:, unit], second[unit])
    return added


def _plain_relu(block: MLPBlock) -> bool:
    return (block.activation == "relu" and not block.gated and block.residual
            and block.norm is None and not np.any(block.b1) and not np.any(block.b2))


def folded(model: Transformer, maps: dict[int, np.ndarray],
           describe: Callable[[int], str]) -> Transformer:
    """`model` without the MLP blocks `maps` gives the A of (by layer index), each block
    after them reading through P; a UniversalError, saying what the block computes
    (`describe`), where a kept head writes a direction a removed block reads."""
    width = model.width
    through = np.eye(width)
    read: dict[int, np.ndarray] = {}  # removed block -> the directions it reads
    layers: list[Block] = []
    for index, block in enumerate(model.layers):
        if isinstance(block, MLPBlock):
            through = through @ (np.eye(width) + maps[index])
            read[index] = np.any(maps[index] != 0, axis=1)
            continue
        for removed, directions in read.items():
            if np.any(writes(block)[:, directions] != 0):
                raise UniversalError(
                    f"layers.{removed}: an MLP block is outside the target class "
                    f"(attention-only transformers); {describe(removed)}, a linear map, "
                    f"which folds into the blocks after it only when none of them writes "
                    f"a direction it reads, and layers.{index} does")
        heads = tuple(AttentionHead(_through(through, head.w_q), _through(through, head.w_k),
                                    _through(through, head.w_v), head.w_o)
                      for head in block.heads)
        layers.append(AttentionBlock(heads, block.scale, block.residual, block.norm))
        if not block.residual:  # its output, the same as before, replaces the stream
            through, read = np.eye(width), {}
    return model.replace(layers=tuple(layers), unembed=_through(through, model.unembed))


def _through(through: np.ndarray, matrix: Matrix) -> Matrix:
    """P W: what W reads of the model's stream, read from the stream without the folded
    blocks (W itself where nothing was folded before it)."""
    return matrix if np.array_equal(through, np.eye(len(through))) else through @ as_dense(matrix)
