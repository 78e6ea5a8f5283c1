"""load_torch computes forward.forward on random small models of every block kind (skipped
without torch): same float64 operations, agreement to 1e-12."""
from __future__ import annotations

import numpy as np
import pytest

from rasp_sim.compiler.forward import forward
from rasp_sim.compiler.tracr_backend.runtime import numeric_features
from rasp_sim.compiler.weights import WeightsError, save

from .test_forward import dense_mlp_model
from .test_numeric_input import doubling_model
from .test_weights import full_model

torch = pytest.importorskip("torch")


def _net(model):
    from rasp_sim.compiler.torch_loader import load_torch

    return load_torch(model)


def assert_same(model, inputs):
    got = _net(model)(torch.as_tensor(inputs)).detach().numpy()
    want = forward(model, inputs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("activation, gated, norm, causal", [
    ("relu", False, False, False),
    ("gelu", False, False, True),
    ("linear", True, False, False),  # bilinear
    ("gelu", True, True, True),      # GEGLU behind a LayerNorm, causal attention
    ("relu", False, True, False),
])
def test_feature_models_match_forward(activation, gated, norm, causal):
    model = dense_mlp_model(7, activation, gated, norm=norm, causal=causal)
    assert_same(model, np.random.default_rng(8).normal(size=(3, 5, 1)))


def test_token_model_with_everything_matches_forward():
    """full_model: sparse weights, LayerNorms, a final norm, causal, a gated sparse MLP."""
    ids = np.random.default_rng(9).integers(0, 4, size=(2, 6))
    assert_same(full_model(3), ids)


def test_numeric_input_model_matches_forward(tmp_path):
    model = doubling_model()
    save(model, tmp_path / "double.safetensors")
    net = _net(tmp_path / "double.safetensors")
    features = np.array([numeric_features(model, [0.5, -1.25, 2.0])])[..., None]
    out = net(torch.as_tensor(features)).detach().numpy()
    np.testing.assert_allclose(out, forward(model, features), rtol=0, atol=1e-12)
    assert out[0, 1:, 0].tolist() == [1.0, -2.5, 4.0]


def test_ids_into_a_feature_model_are_refused():
    with pytest.raises(WeightsError, match="no token embedding"):
        _net(doubling_model())(torch.zeros((1, 2), dtype=torch.int64))
