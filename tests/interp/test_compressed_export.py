"""A compressed model (docs/compiler.md#compression-with-a-certificate) exports to
TransformerLens like any model: it runs as `Model.run` does on its whole domain. A
compressed stream has no `one` direction, so a gated model whose MLP biases need it is
refused with the export's reason."""
from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformer_lens")
pytest.importorskip("tracr")
pytest.importorskip("optax")

import rasp_sim  # noqa: E402
from rasp_sim.base.errors import CompileError  # noqa: E402
from rasp_sim.compression import compress  # noqa: E402
from rasp_sim.compression.algebra import compress_weights  # noqa: E402
from rasp_sim.compression.states import model_inputs, principal_directions  # noqa: E402

pytestmark = pytest.mark.interp

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compile"


def test_a_compressed_model_exports_and_runs_as_model_run():
    program = rasp_sim.load(str(EXAMPLES / "reverse.rasp"))
    model = rasp_sim.compile(program, "reversed", vocab="abc", max_len=4)
    bound = principal_directions(model.weights, model_inputs(model.weights)).rank
    small = compress(model, bound, program=program)
    assert small.validated and small.width < model.width
    hooked = small.to_transformer_lens()
    assert hooked.cfg.d_model == small.width
    assert hooked.residual_labels == tuple(f"c{i}" for i in range(small.width))
    for n in range(1, 5):
        inputs = ["".join(t) for t in itertools.product("abc", repeat=n)]
        assert hooked.run(inputs) == small.run(inputs) == program.run(inputs, "reversed")


def test_a_compressed_gated_model_without_one_is_refused():
    program = rasp_sim.load(str(EXAMPLES / "numeric.rasp"))
    model = rasp_sim.compile(program, "matmul_2x3x2", numeric_tokens=True, max_len=12)
    layers = list(model.weights.layers)
    index = next(i for i, b in enumerate(layers) if getattr(b, "gated", False))
    layers[index] = replace(layers[index], b1=np.full(layers[index].b1.shape, 0.25))
    biased = model.weights.replace(layers=tuple(layers))  # its export folds b1 through `one`
    rasp_sim.Model(biased).to_transformer_lens()
    same = compress_weights(biased, np.eye(model.width))  # labels c0.., so no `one`
    with pytest.raises(CompileError, match="'one' direction"):
        rasp_sim.Model(same).to_transformer_lens()
