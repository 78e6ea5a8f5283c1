"""Targets outside the class and inconsistent shapes give a UniversalError naming the cause."""
from __future__ import annotations

import numpy as np
import pytest

from rasp_sim.compiler.universal.embed import embed, program
from rasp_sim.compiler.universal.errors import UniversalError
from rasp_sim.compiler.universal.gaussian import build_random
from rasp_sim.compiler.universal.sparse import build_sparse
from rasp_sim.compiler.universal.target import Shape, random_target
from rasp_sim.compiler.weights import (AttentionBlock, AttentionHead, LayerNorm, MLPBlock,
                                       WeightsError)
from rasp_sim.base.errors import RaspError

SHAPE = Shape(dim=3, head_dim=2, out_dim=2, heads=2, layers=2, causal=True)


@pytest.fixture(scope="module")
def ut():
    return build_sparse(SHAPE)


@pytest.fixture
def target():
    return random_target(SHAPE, 0)


def test_mlp_block_is_outside_the_class(ut, target):
    mlp = MLPBlock(np.zeros((3, 4)), np.zeros(4), np.zeros((4, 3)), np.zeros(3), residual=False)
    with pytest.raises(UniversalError, match=r"layers\.1: an MLP block is outside the target class"):
        embed(target.replace(layers=(target.layers[0], mlp)), ut)


def test_layer_norm_is_outside_the_class(ut, target):
    norm = LayerNorm(np.ones(3), np.zeros(3))
    block = target.layers[0]
    with pytest.raises(UniversalError, match=r"layers\.0\.norm: LayerNorm is outside"):
        embed(target.replace(layers=(AttentionBlock(block.heads, block.scale, False, norm),
                                     target.layers[1])), ut)
    with pytest.raises(UniversalError, match=r"final_norm: LayerNorm is outside"):
        embed(target.replace(final_norm=norm), ut)


def test_more_heads_than_the_ut(ut):
    wide = random_target(Shape(3, 2, 2, heads=3, layers=2, causal=True), 0)
    with pytest.raises(UniversalError, match=r"layers\.0\.heads: the target has 3 heads, "
                                             r"the universal transformer has H = 2"):
        embed(wide, ut)


def test_larger_head_dimension(ut):
    big = random_target(Shape(3, 4, 2, heads=2, layers=2, causal=True), 0)
    with pytest.raises(UniversalError, match=r"layers\.0\.heads\.0\.w_q: head dimension 4 "
                                             r"exceeds the universal transformer's k = 2"):
        embed(big, ut)


@pytest.mark.parametrize("change, message", [
    (dict(layers=3), r"layers: the target has 3 layers, .* L = 2"),
    (dict(out_dim=3), r"unembed: the target's output dimension 3 differs .* c = 2"),
    (dict(dim=4), r"dim: the target's input dimension 4 differs .* d = 3"),
    (dict(causal=False), r"causal: the target's mask is full \(non-causal\) .* causal"),
    (dict(residual=True), r"layers\.0\.residual: the target block is residual"),
])
def test_inconsistent_shapes(ut, change, message):
    fields = dict(dim=3, head_dim=2, out_dim=2, heads=2, layers=2, causal=True, residual=False)
    fields.update(change)
    with pytest.raises(UniversalError, match=message):
        embed(random_target(Shape(**fields), 0), ut)


def test_token_embedding_target(ut, target):
    with pytest.raises(UniversalError, match="token_embed: targets take real input features"):
        embed(target.replace(token_embed=np.zeros((5, 3))), ut)


def test_non_finite_target_weight(target):
    head = target.layers[0].heads[1]
    bad = head.w_v.copy()
    bad[0, 2] = np.nan
    with pytest.raises(WeightsError, match=r"layers\.0\.heads\.1\.w_v: contains non-finite"):
        target.replace(layers=(AttentionBlock(
            (target.layers[0].heads[0], AttentionHead(head.w_q, head.w_k, bad)),
            residual=False), target.layers[1]))


@pytest.mark.parametrize("name", ["dim", "head_dim", "out_dim", "heads", "layers"])
def test_non_positive_shape(name):
    fields = dict(dim=3, head_dim=2, out_dim=2, heads=2, layers=2)
    fields[name] = 0
    with pytest.raises(UniversalError, match=f"{name}: must be a positive integer, got 0"):
        Shape(**fields)


@pytest.mark.parametrize("builder", [lambda s: build_sparse(s, tied=True),
                                     lambda s: build_random(s, 0, tied=True)])
def test_tied_residual_is_rejected(builder):
    with pytest.raises(UniversalError, match="tied: a looped .* residual"):
        builder(Shape(2, 2, 2, 1, 2, residual=True))


def test_not_a_universal_transformer(target):
    with pytest.raises(UniversalError, match="metadata.universal: this model is not a fixed"):
        embed(target, target)


def test_embedding_of_the_wrong_width(ut):
    with pytest.raises(UniversalError, match=r"embedding: shape \(3, 5\) does not fit"):
        program(ut, np.zeros((3, 5)))


def test_errors_are_rasp_errors():
    assert issubclass(UniversalError, RaspError) and issubclass(WeightsError, RaspError)
