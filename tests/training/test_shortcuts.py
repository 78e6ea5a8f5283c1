"""The training forward pass's shortcuts (experiments/shortcuts.py) compute the project's
forward pass: the first block by (token, position) table at every position, and the last
attention block at the answer only, against compiler/forward.py in float64."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("optax")

from rasp_sim.compiler import forward  # noqa: E402
from rasp_sim.experiments.backbones import Sizes, build_backbone, named_arrays  # noqa: E402
from rasp_sim.experiments.tasks import make_task  # noqa: E402
from rasp_sim.experiments.train import logits_fn  # noqa: E402


def check(variant: str, sizes: Sizes, seed: int) -> None:
    task = make_task("dyck1", test_size=6, test_seed=seed)
    backbone = build_backbone(variant, sizes, task.vocab_size, task.seq_len, seed)
    arrays = named_arrays(backbone.model)
    # embeddings of a trained size (GPT-2's 0.02 would leave every score near 0)
    rng = np.random.default_rng(seed)
    params = {name: np.asarray(rng.normal(size=np.shape(arrays[name])), np.float32)
              for name in sorted(backbone.trainable)}
    model = backbone.model.replace(**{name: np.asarray(params[name], np.float64)
                                      for name in ("token_embed", "pos_embed", "unembed")})
    if variant == "F":  # every array trains: the frozen ones' values, as float32
        params = {name: np.asarray(value, np.float32) for name, value in arrays.items()}
        params.update({name: np.asarray(getattr(model, name), np.float32)
                       for name in ("token_embed", "pos_embed", "unembed")})
    batch = task.test_set()
    want = forward.forward(model, batch.inputs)
    logits = logits_fn(backbone)
    everywhere = np.asarray(logits(params, batch.inputs))
    rows = np.argmax(batch.weights, axis=1)
    answers = np.asarray(logits(params, batch.inputs, rows))
    # float32 (JAX) against float64 (NumPy) through 2-4 blocks: ~1e-6 of the logits' size
    tolerance = 1e-4 * np.abs(want).max()
    np.testing.assert_allclose(everywhere, want, rtol=0, atol=tolerance)
    np.testing.assert_allclose(answers[:, 0], want[np.arange(len(rows)), rows], rtol=0,
                               atol=tolerance)


@settings(max_examples=4, deadline=None)
@given(variant=st.sampled_from(["S-A", "R-A", "R-RL", "S-RLM"]), seed=st.integers(0, 1000))
def test_shortcut_logits_are_the_numpy_forward_pass(variant, seed):
    check(variant, Sizes(heads=2, layers=2, head_dim=2, out_dim=4), seed)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["S-A", "R-RLM", "F"])
@pytest.mark.parametrize("layers", [1, 3])
def test_shortcuts_hold_for_one_and_three_layers(variant, layers):
    check(variant, Sizes(heads=2, layers=layers, head_dim=2, out_dim=2), 7)
