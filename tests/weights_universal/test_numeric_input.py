"""Compiled numeric-input models (real-valued tokens through input_proj) run through
runtime.run_weights and `rasp-sim run --weights`; and the refusal of unvalidated models.
Hand-built models: no tracr needed."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rasp_sim.cli import main
from rasp_sim.compiler.forward import forward
from rasp_sim.compiler.tracr_backend.runtime import (compile_info, load_compiled,
                                                     numeric_features, run_weights, token_ids)
from rasp_sim.compiler.weights import MLPBlock, OutputEncoder, Transformer, WeightsError, save
from rasp_sim.base.errors import RaspError, RaspTypeError

MAX_LEN = 4


def doubling_model(min_len: int | None = 1, validated: bool = True, **record) -> Transformer:
    """out_i = 2 x_i: input_proj writes x into direction 0, an MLP adds relu(x) - relu(-x)
    = x there, the unembedding reads it. Direction 1 holds the position (row 0: BOS)."""
    D = 3
    pos_embed = np.zeros((MAX_LEN + 1, D))
    pos_embed[:, 1] = np.arange(MAX_LEN + 1)
    w1 = np.zeros((D, 2))
    w1[0] = [1.0, -1.0]
    w2 = np.zeros((2, D))
    w2[:, 0] = [1.0, -1.0]
    info = {"tokens_kind": "numeric", "max_len": MAX_LEN, "token_range": [-2.0, 2.0], **record}
    if min_len is not None:
        info["min_len"] = min_len
    return Transformer(
        layers=(MLPBlock(w1, np.zeros(2), w2, np.zeros(D)),),
        unembed=np.eye(D)[:, :1],
        input_proj=np.eye(D)[:1],
        pos_embed=pos_embed,
        output_encoder=OutputEncoder(None),
        metadata={"validated": validated, "tracr_compile": info})


def test_numbers_run_with_a_bos_feature_and_positions():
    model = doubling_model()
    assert numeric_features(model, [0.5, -1.25]) == [0.0, 0.5, -1.25]
    assert run_weights(model, [[0.5, -1.25], [1, 2, 0.25, -2], [2.0]]) == \
        [[1.0, -2.5], [2.0, 4.0, 0.5, -4.0], [4.0]]
    # the stream carries the position embedding: (B, n+1, 1) features, pos_embed[:n+1]
    reading_positions = model.replace(unembed=np.eye(3)[:, 1:2])
    assert run_weights(reading_positions, [[0.5, 1.0, 1.5]]) == [[1.0, 2.0, 3.0]]


def test_old_records_without_min_len_default_to_one():
    model = doubling_model(min_len=None)
    assert compile_info(model)["min_len"] == 1
    assert run_weights(model, [[1.5]]) == [[3.0]]


@pytest.mark.parametrize("inputs, error, message", [
    ([[0.5], "ab"], RaspTypeError, "input 1: the model reads numbers"),
    ([[0.5, True]], RaspTypeError, "input 0, position 1: True is not a number"),
    ([[0.5], [1.0, "x"]], RaspTypeError, "input 1, position 1: 'x' is not a number"),
    ([[float("nan")]], RaspTypeError, "input 0, position 0: nan is not finite"),
    ([[1.0, float("inf")]], RaspTypeError, "input 0, position 1: inf is not finite"),
    ([[2.5]], RaspTypeError, r"input 0, position 0: 2.5 is outside the model's token range "
                             r"\[-2.0, 2.0\]"),
    ([[0.0] * 5], RaspTypeError, "input 0: length 5 is above the model's max-len 4"),
    ([[]], RaspTypeError, "input 0: is empty"),
])
def test_bad_numeric_inputs_are_named(inputs, error, message):
    with pytest.raises(error, match=message):
        run_weights(doubling_model(), inputs)


def test_min_len_is_enforced():
    with pytest.raises(RaspTypeError, match="input 0: length 1 is below the model's min-len 2"):
        run_weights(doubling_model(min_len=2), [[1.0]])
    assert run_weights(doubling_model(min_len=2), [[1.0, 0.0]]) == [[2.0, 0.0]]


@pytest.mark.parametrize("record, message", [
    ({"token_range": [1.0]}, "token_range: expected"),
    ({"token_range": [0.0, float("inf")]}, "token_range: expected"),
    ({"token_range": [2.0, 1.0]}, "token_range: expected"),
    ({"token_range": ["a", "b"]}, "token_range: expected"),
    ({"max_len": "4"}, "max_len: expected a positive integer"),
])
def test_bad_numeric_records_are_weights_errors(record, message):
    with pytest.raises(WeightsError, match=message):
        run_weights(doubling_model(**record), [[1.0]])


def test_a_numeric_model_needs_a_one_row_input_projection():
    model = doubling_model()
    with pytest.raises(WeightsError, match="input_proj of one row"):
        compile_info(model.replace(input_proj=np.eye(3)[:2]))
    with pytest.raises(WeightsError, match="reads numbers, not tokens"):
        token_ids(model, [1.0])


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_cli_runs_a_numeric_model(tmp_path, capsys, suffix):
    path = tmp_path / f"double{suffix}"
    save(doubling_model(), path)
    assert main(["run", "--weights", str(path), "--input", "[0.5, -1.25]", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == [1.0, -2.5]
    assert main(["run", "--weights", str(path), "--input", "[0.5, 3]"]) == 1
    assert "input 0, position 1: 3 is outside the model's token range" in capsys.readouterr().err


def test_cli_refuses_an_unvalidated_model_unless_allowed(tmp_path, capsys):
    path = tmp_path / "forced.npz"
    save(doubling_model(validated=False, forced=True), path)
    assert main(["run", "--weights", str(path), "--input", "[1.0]"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("weights error:") and "not validated" in err
    assert "--allow-unvalidated" in err and "compile --force" in err
    assert main(["run", "--weights", str(path), "--input", "[1.0]", "--json",
                 "--allow-unvalidated"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["output"] == [2.0]
    assert "warning:" in captured.err and "NOT validated" in captured.err


def test_load_compiled_needs_validated_true(tmp_path):
    path = tmp_path / "m.npz"
    model = doubling_model()
    save(model.replace(metadata={**model.metadata, "validated": "yes"}), path)
    with pytest.raises(WeightsError, match="its metadata does not say validated"):
        load_compiled(path)
    loaded, warning = load_compiled(path, allow_unvalidated=True)
    assert warning and forward(loaded, np.zeros((1, 2, 1))).shape == (1, 2, 1)


def test_universal_weights_are_not_compile_outputs(tmp_path):
    """run --weights on a universal-transformer file: the same refusal as before."""
    model = doubling_model()
    save(model.replace(metadata={"universal": {}}), tmp_path / "ut.npz")
    with pytest.raises(RaspError, match="not written by `rasp-sim compile`"):
        load_compiled(tmp_path / "ut.npz", allow_unvalidated=True)
