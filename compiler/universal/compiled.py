"""Compiled RASP programs (`rasp-sim compile`) as targets of a fixed universal transformer.

A compiled model reads [BOS] + token ids through `token_embed` and `pos_embed`
(tracr_backend/runtime.py). As a target it reads instead one-hot features

    X = [one-hot(token id) | one-hot(position)]   (d = token rows + position rows)

through input_proj = vstack(token_embed, pos_embed): X input_proj = token_embed[id] +
pos_embed[p], the very stream the compiled model starts from, and `canonicalise` folds
input_proj into E. The model must be attention-only once the MLP blocks that act linearly
on its stream, BOS clean-ups and linear maps of numbers, are folded into the blocks that
read after them (fold.py); a compile gives every block a residual connection, so the
machine needs them too. Any other MLP block is refused with the RASP operation the compile
record says it computes.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tracr_backend.runtime import COMPILE_KEY, NUMERIC, compile_info
from ..weights import AttentionBlock, MLPBlock, Transformer, as_dense
from .fold import bos_direction, cleanup_map, folded, linear_map
from .errors import UniversalError
from .target import Shape


def is_compiled(model: Transformer) -> bool:
    """Whether `model` carries a compile record (was written by `rasp-sim compile`)."""
    return isinstance(model.metadata, dict) and COMPILE_KEY in model.metadata


def as_target(model: Transformer) -> Transformer:
    """The compiled `model` with its BOS clean-ups folded into its heads and its embeddings
    into one input projection, or a UniversalError naming the first block outside the
    class and what it computes."""
    info = compile_info(model)  # a WeightsError names a damaged record
    if info["tokens_kind"] == NUMERIC:
        raise UniversalError("tokens_kind: a numeric-input model reads real numbers, not "
                             "tokens; only token models have a finite domain of one-hot inputs")
    if model.pos_embed is None:
        raise UniversalError("pos_embed: missing; a compiled token model embeds positions "
                             "(compile the program again: this file was edited or not "
                             "written by rasp-sim compile)")
    column, no_column = bos_direction(model)
    maps = {index: _linear(info, index, block, column, no_column)
            for index, block in enumerate(model.layers) if isinstance(block, MLPBlock)}
    attention_only = folded(model, maps, lambda index: _computes(info, index))
    assert model.token_embed is not None  # compile_info checked it for a token model
    return attention_only.replace(input_proj=np.vstack([model.token_embed, model.pos_embed]),
                                  token_embed=None, pos_embed=None, input_encoder=None)


def _linear(info: dict[str, Any], index: int, block: MLPBlock, column: int | None,
            no_column: str) -> np.ndarray:
    """The map x -> x A that MLP block `index` adds to the stream, if it is a BOS clean-up
    or a linear map (fold.py); otherwise a UniversalError saying what it computes (and for
    a clean-up that cannot fold, why)."""
    added = cleanup_map(block, column)
    if added is None:
        added = linear_map(block)
    if added is not None:
        return added
    outside = f"layers.{index}: an MLP block is outside the target class (attention-only " \
              "transformers)"
    read = np.flatnonzero(np.any(as_dense(block.w1) != 0, axis=1))
    if read.size == 1 and cleanup_map(block, int(read[0])) is not None:
        raise UniversalError(f"{outside}; {_computes(info, index)}, which folds into the "
                             f"heads only when the BOS token has a direction of its own: "
                             f"{no_column}")
    raise UniversalError(f"{outside}; {_computes(info, index)}")


def _computes(info: dict[str, Any], index: int) -> str:
    """What block `index` computes, from the record's per-layer operations (files written
    before the record kept them say so). An aggregate recorded at an MLP block is its
    head's BOS clean-up (fold.py), and is named so."""
    blocks = info.get("blocks")
    if not (isinstance(blocks, list) and index < len(blocks) and isinstance(blocks[index], list)):
        return "the compile record does not say which RASP operation it computes (compiled " \
               "before rasp-sim recorded it; compile again to see it)"
    entries = [(str(entry.get("op")), entry.get("at") or "an unknown place")
               for entry in blocks[index] if isinstance(entry, dict)]
    computed = [f"{op} at {at}" for op, at in entries if not op.startswith("Aggregate ")]
    cleanups = [f"{op} at {at}" for op, at in entries if op.startswith("Aggregate ")]
    clauses = [f"it computes {', '.join(computed)}"] if computed else []
    if cleanups:
        clauses.append(f"{'it is' if not computed else 'is'} the BOS clean-up of "
                       f"{', '.join(cleanups)} (it subtracts what that head writes at the BOS "
                       "position)")
    return " and ".join(clauses) or "it computes no recorded operation"


def shape_of(model: Transformer) -> Shape:
    """The class T(d, k, c, H, L) (residual, mask) of the machine that simulates the
    compiled `model`: d its one-hot input width, k its widest head, c its output width,
    H its most heads in a layer, L its layers."""
    target = as_target(model)
    blocks = [block for block in target.layers if isinstance(block, AttentionBlock)]
    assert target.input_proj is not None  # as_target set it
    return Shape(dim=target.input_proj.shape[0],
                 head_dim=max(head.w_q.shape[1] for block in blocks for head in block.heads),
                 out_dim=target.out_dim, heads=max(len(block.heads) for block in blocks),
                 layers=len(blocks), residual=blocks[0].residual, causal=target.causal)


def one_hot_inputs(model: Transformer, ids: np.ndarray) -> np.ndarray:
    """(B, n) id rows ([BOS] + tokens, as runtime.token_ids builds them) -> the target's
    features (B, n, d): the token's one-hot, then the position's."""
    assert model.token_embed is not None and model.pos_embed is not None
    tokens, positions = model.token_embed.shape[0], model.pos_embed.shape[0]
    batch, n = ids.shape
    features = np.zeros((batch, n, tokens + positions))
    rows, columns = np.meshgrid(np.arange(batch), np.arange(n), indexing="ij")
    features[rows, columns, ids] = 1.0
    features[:, np.arange(n), tokens + np.arange(n)] = 1.0
    return features
