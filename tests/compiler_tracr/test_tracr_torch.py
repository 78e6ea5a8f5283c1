"""The PyTorch loader computes the NumPy forward pass (skipped without torch)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tracr")


def test_torch_module_matches_numpy_forward(driver, library):
    from rasp_sim.compiler.forward import forward
    from rasp_sim.compiler.torch_loader import load_torch
    from rasp_sim.compiler.tracr_backend.runtime import token_ids

    weights = driver.compile_program(library("reverse.rasp", "reversed"), list("abc"), 4).weights
    net = load_torch(weights)
    ids = np.array([token_ids(weights, list("abca"))])
    expected = forward(weights, ids)
    got = net(torch.as_tensor(ids)).detach().numpy()
    assert np.allclose(got, expected, rtol=0, atol=1e-12)  # same float64 operations
