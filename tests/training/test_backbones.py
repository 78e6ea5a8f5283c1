"""The frozen backbones of docs/universal.md (NumPy only, no training)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rasp_sim.compiler import forward
from rasp_sim.experiments.backbones import (VARIANTS, Sizes, build_backbone,
                                                     check_memory, named_arrays, universal_m,
                                                     with_arrays)
from rasp_sim.experiments.errors import ExperimentError
from rasp_sim.compiler.weights import (AttentionBlock, MLPBlock, SparseMatrix, as_dense,
                                       weights_equal)

SIZES = Sizes(heads=2, layers=2, head_dim=2, out_dim=4)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_has_the_documented_structure(variant):
    backbone = build_backbone(variant, SIZES, vocab=5, seq_len=9, seed=0)
    model = backbone.model
    # m of the compact tree: 2Hk(1 + H) + cH^2 = 2*2*2*3 + 4*4 (docs/universal.md).
    assert backbone.m == universal_m(SIZES) == 40
    attention = [b for b in model.layers if isinstance(b, AttentionBlock)]
    mlps = [b for b in model.layers if isinstance(b, MLPBlock)]
    assert len(attention) == 2 and all(len(b.heads) == 2 for b in attention)
    assert len(mlps) == (2 if variant.endswith("M") or variant == "F" else 0)
    normed = variant not in ("S-A", "R-A")
    assert all(b.residual == normed and (b.norm is not None) == normed for b in model.layers)
    assert (model.final_norm is not None) == normed and model.causal
    sparse = variant.startswith("S")
    assert all(isinstance(h.w_v, SparseMatrix) == sparse for b in attention for h in b.heads)
    if sparse:
        values = np.concatenate([h.w_v.values for b in attention for h in b.heads])
        assert set(values.tolist()) <= {1.0}
    trainable = backbone.trainable
    if variant == "F":
        assert trainable == set(named_arrays(model))
    else:
        assert trainable == {"token_embed", "pos_embed", "unembed"}
    counts = backbone.parameter_counts()
    assert counts["trainable"] == sum(np.size(named_arrays(model)[n]) for n in trainable)
    assert counts["trainable"] <= counts["parameters"]


def test_random_variants_share_the_random_ut_and_differ_by_seed():
    a = build_backbone("R-A", SIZES, 5, 9, seed=0).model
    b = build_backbone("R-RL", SIZES, 5, 9, seed=0).model
    c = build_backbone("R-A", SIZES, 5, 9, seed=1).model
    assert np.array_equal(a.layers[1].heads[0].w_v, b.layers[1].heads[0].w_v)
    assert not np.array_equal(a.layers[1].heads[0].w_v, c.layers[1].heads[0].w_v)


def test_named_arrays_round_trip():
    model = build_backbone("R-RLM", SIZES, 5, 9, seed=3).model
    assert weights_equal(with_arrays(model, {k: as_dense(v) for k, v in named_arrays(model).items()
                                             if not isinstance(v, SparseMatrix)}), model)
    changed = with_arrays(model, {"token_embed": np.zeros((5, 40))})
    assert not weights_equal(changed, model) and not changed.token_embed.any()


def test_gelu_is_gpt2s_tanh_gelu():
    z = np.linspace(-4, 4, 81)
    exact = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    # The tanh form differs from the erf form by < 1e-3 on [-4, 4] (Hendrycks & Gimpel 2016).
    assert np.max(np.abs(forward.ACTIVATION_FUNCTIONS["gelu"](z, np) - exact)) < 1e-3
    assert forward.ACTIVATION_FUNCTIONS["gelu"](np.array([0.0]), np)[0] == 0.0


def test_numpy_forward_runs_every_backbone():
    ids = np.array([[0, 1, 2, 3, 4, 0, 1]])
    for variant in VARIANTS:
        out = forward.forward(build_backbone(variant, SIZES, 5, 9, seed=0).model, ids)
        assert out.shape == (1, 7, 5) and np.all(np.isfinite(out))


def test_unknown_backbone_is_a_clear_error():
    with pytest.raises(ExperimentError, match="unknown backbone 'X-A'; known backbones: S-A, R-A"):
        build_backbone("X-A", SIZES, 5, 9, seed=0)


def test_memory_is_estimated_before_building(monkeypatch):
    monkeypatch.setenv("RASP_SIM_MEMORY_LIMIT", str(2**20))
    huge = Sizes(heads=4, layers=6, head_dim=8, out_dim=16)  # m = 64 * 1365 + 16 * 4^6
    with pytest.raises(ExperimentError, match=r"m = 152896 and needs about .* GiB .* but only "
                                              r"0\.0 GiB are available"):
        check_memory(huge, universal_m(huge), "R-A", batch=32, seq_len=99)
    monkeypatch.delenv("RASP_SIM_MEMORY_LIMIT")
    check_memory(SIZES, 40, "F", batch=32, seq_len=99)  # small: fits


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("sizes", [SIZES, Sizes(heads=1, layers=3, head_dim=4, out_dim=8)])
def test_the_trained_count_known_before_building_bounds_what_is_trained(variant, sizes):
    # a checkpoint's size bound (checkpoints.checkpoint_bytes) rests on it
    from rasp_sim.experiments.backbones import trained_count

    backbone = build_backbone(variant, sizes, vocab=5, seq_len=9, seed=0)
    arrays = named_arrays(backbone.model)
    trained = sum(int(np.prod(arrays[name].shape)) for name in backbone.trainable)
    bound = trained_count(sizes, backbone.m, variant, vocab=5, seq_len=9)
    assert trained <= bound <= 1.1 * trained  # a bound, and a close one
