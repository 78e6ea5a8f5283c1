"""fold.py: removing the MLP blocks that act linearly on the stream (BOS clean-ups, linear
maps in ReLU pairs) and reading through them in the later heads and the unembedding
leaves the model's output unchanged at every position, BOS included.

The models are built here in the shape `rasp-sim compile` gives them (one-hot token and
position embeddings, a `one` direction, each direction written by one block), with random
weights; the compiled programs themselves are checked on their whole domain in
tests/compiler_tracr/test_universal_compiled.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.forward import forward
from rasp_sim.compiler.universal.fold import (bos_direction, cleanup_map, folded, linear_map,
                                               writes)
from rasp_sim.compiler.universal.errors import UniversalError
from rasp_sim.compiler.weights import (AttentionBlock, AttentionHead, InputEncoder, MLPBlock,
                                       Transformer)

TOKENS, POSITIONS = ("x", "y", "z", "BOS"), 6
# residual directions: tokens 0-3 (3 = BOS), positions 4-9, one 10, a 11, b 12, c 13, d 14
BOS, ONE, A, B, C, D = 3, 10, 11, 12, 13, 14
WIDTH = 15


def head(rng: np.random.Generator, writes_to: list[int], scale: float = 30.0) -> AttentionHead:
    """A head reading every direction, with sharp scores, writing only `writes_to`."""
    value = np.zeros((WIDTH, WIDTH))
    value[:, writes_to] = rng.normal(size=(WIDTH, len(writes_to)))
    return AttentionHead(scale * rng.normal(size=(WIDTH, 3)), rng.normal(size=(WIDTH, 3)), value)


def model_with_foldable_mlps(seed: int, causal: bool) -> Transformer:
    """head(s) writing a, b and at BOS; their BOS clean-up; c = linear map of a, b; then
    heads reading everything and writing d."""
    rng = np.random.default_rng(seed)
    token_embed = np.zeros((len(TOKENS), WIDTH))
    token_embed[np.arange(len(TOKENS)), np.arange(len(TOKENS))] = 1.0
    token_embed[:, ONE] = 1.0
    pos_embed = np.zeros((POSITIONS, WIDTH))
    pos_embed[np.arange(POSITIONS), 4 + np.arange(POSITIONS)] = 1.0
    cleanup_in = np.zeros((WIDTH, 2))
    cleanup_in[BOS] = [1.0, 1.0]
    cleanup_out = np.zeros((2, WIDTH))
    cleanup_out[0, A], cleanup_out[1, B] = rng.normal(size=2)
    pair_in, pair_out = np.zeros((WIDTH, 4)), np.zeros((4, WIDTH))
    (pair_in[A, 0], pair_in[B, 2]), (pair_out[0, C], pair_out[2, C]) = rng.normal(size=(2, 2))
    pair_in[:, [1, 3]], pair_out[[1, 3]] = -pair_in[:, [0, 2]], -pair_out[[0, 2]]
    zero = np.zeros
    layers = (AttentionBlock((head(rng, [A]), head(rng, [B]))),
              MLPBlock(cleanup_in, zero(2), cleanup_out, zero(WIDTH)),
              MLPBlock(pair_in, zero(4), pair_out, zero(WIDTH)),
              AttentionBlock((head(rng, [D]), head(rng, [D]))),
              AttentionBlock((head(rng, [D]),)))
    return Transformer(layers=layers, unembed=rng.normal(size=(WIDTH, 2)), causal=causal,
                       token_embed=token_embed, pos_embed=pos_embed,
                       input_encoder=InputEncoder(TOKENS, bos="BOS"))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), causal=st.booleans())
def test_folding_keeps_every_output_at_every_position(seed, causal):
    model = model_with_foldable_mlps(seed, causal)
    column, why = bos_direction(model)
    assert (column, why) == (BOS, "")
    maps = {1: cleanup_map(model.layers[1], column), 2: linear_map(model.layers[2])}
    assert maps[1] is not None and maps[2] is not None
    assert linear_map(model.layers[1]) is None and cleanup_map(model.layers[2], column) is None
    attention_only = folded(model, maps, str)
    assert [type(block) for block in attention_only.layers] == [AttentionBlock] * 3
    rng = np.random.default_rng(seed)
    ids = np.concatenate([np.full((8, 1), BOS), rng.integers(0, 3, size=(8, POSITIONS - 1))],
                         axis=1)
    want = forward(model, ids)
    got = forward(attention_only, ids)
    # the same operations up to the rounding of P W (a few ulps of the largest score)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * np.abs(want).max())
    # the fold matters: without reading through P, the BOS row (and what reads it) differs
    dropped = model.replace(layers=tuple(b for b in model.layers if isinstance(b, AttentionBlock)))
    assert np.abs(forward(dropped, ids) - want).max() > 1e-6


def test_a_head_writing_what_a_folded_block_reads_is_refused():
    model = model_with_foldable_mlps(0, causal=False)
    column, _ = bos_direction(model)
    rng = np.random.default_rng(1)
    late = model.replace(layers=(*model.layers, AttentionBlock((head(rng, [A]),))))
    maps = {1: cleanup_map(late.layers[1], column), 2: linear_map(late.layers[2])}
    with pytest.raises(UniversalError, match=r"layers\.2: an MLP block is outside the target "
                       r"class \(attention-only transformers\); DESCRIBED, a linear map, which "
                       r"folds into the blocks after it only when none of them writes a "
                       r"direction it reads, and layers\.5 does"):
        folded(late, maps, lambda index: "DESCRIBED")


def test_bos_direction_needs_a_direction_only_bos_sets_and_nothing_writes():
    model = model_with_foldable_mlps(0, causal=False)
    assert not np.any(writes(model.layers[0])[:, BOS])
    edited = model.token_embed.copy()
    edited[0, BOS] = 1.0  # token "x" sets it too
    assert bos_direction(model.replace(token_embed=edited)) == (
        None, "no residual direction is set by the BOS token alone (the token embedding was "
              "edited)")
    rng = np.random.default_rng(2)
    writer = model.replace(layers=(AttentionBlock((head(rng, [BOS]),)), *model.layers))
    assert bos_direction(writer) == (None, "layers.0 writes the BOS token's direction")
