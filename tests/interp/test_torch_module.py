"""`Model.to_torch()`: a float64 torch module that computes the NumPy forward pass
(compiler/forward.py), and refuses float32 features instead of computing on numbers that
were rounded before it saw them."""
from __future__ import annotations

import functools
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

torch = pytest.importorskip("torch")
pytest.importorskip("tracr")

import rasp_sim  # noqa: E402
from rasp_sim.compiler.forward import forward  # noqa: E402
from rasp_sim.compiler.tracr_backend.runtime import numeric_features, token_ids  # noqa: E402
from rasp_sim.base.errors import RaspError, RaspTypeError  # noqa: E402
from rasp_sim.testing import concat, matrix  # noqa: E402

pytestmark = pytest.mark.interp

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compile"
# The torch module runs the NumPy forward's float64 operations; only the order of
# summation inside a product may differ (BLAS vs torch): a few ulps of the largest term.
ATOL = 1e-12


@functools.cache
def reverse():
    return rasp_sim.compile(rasp_sim.load(EXAMPLES / "reverse.rasp"), "reversed",
                            vocab=list("abc"), max_len=5)


@functools.cache
def matmul():
    return rasp_sim.compile(rasp_sim.load(EXAMPLES / "numeric.rasp"), "matmul_2x3x2",
                            numeric_tokens=True, min_len=12, max_len=12)


def test_default_module_is_float64():
    net = reverse().to_torch()
    assert net.dtype == torch.float64
    assert {p.dtype for p in net.parameters()} == {torch.float64}


def test_token_module_matches_numpy_forward_on_the_whole_domain():
    model = reverse()
    net = model.to_torch()
    for n in range(1, 6):
        ids = np.array([token_ids(model.weights, x) for x in itertools.product("abc", repeat=n)])
        got = net(torch.as_tensor(ids)).detach().numpy()
        np.testing.assert_allclose(got, forward(model.weights, ids), rtol=0, atol=ATOL)


@settings(max_examples=100, deadline=None)
@given(concat(matrix(2, 3), matrix(3, 2)))
def test_numeric_module_matches_numpy_forward(entries):
    model = matmul()
    features = np.array([numeric_features(model.weights, entries)])[..., None]
    got = model.to_torch()(torch.tensor(features, dtype=torch.float64)).detach().numpy()
    np.testing.assert_allclose(got, forward(model.weights, features), rtol=0, atol=ATOL)


def test_float32_features_are_refused_by_a_float64_module():
    model = matmul()
    features = [numeric_features(model.weights, [0.1] * 12)]
    with pytest.raises(RaspTypeError, match="torch.float32 features for a torch.float64 module"):
        model.to_torch()(torch.tensor(features).unsqueeze(-1))  # torch.tensor: float32


def test_a_float32_module_takes_float_features():
    model = matmul()
    net = model.to_torch(dtype=torch.float32)
    features = np.array([numeric_features(model.weights, [0.5] * 12)])[..., None]
    got = net(torch.tensor(features)).detach()
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), forward(model.weights, features), atol=1e-5)


def test_missing_torch_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(RaspError, match=r"rasp-sim\[interp\]"):
        reverse().to_torch()
