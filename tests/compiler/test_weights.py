"""The weight format: construction checks, lossless save/load, rejection of bad files."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from rasp_sim.compiler.weights import (FORMAT_VERSION, AttentionBlock, AttentionHead,
                                       InputEncoder, LayerNorm, MLPBlock, OutputEncoder,
                                       SparseMatrix, Transformer, WeightsError, load, save,
                                       weights_equal)


def full_model(seed: int = 0) -> Transformer:
    """A model using every feature of the format."""
    rng = np.random.default_rng(seed)
    D, k, hidden = 5, 3, 7
    sparse_v = SparseMatrix((D, D), [0, 1, 4], [2, 2, 3], rng.normal(size=3))
    heads = (AttentionHead(rng.normal(size=(D, k)), rng.normal(size=(D, k)),
                           rng.normal(size=(D, 2)), rng.normal(size=(2, D))),
             AttentionHead(rng.normal(size=(D, k)), rng.normal(size=(D, k)), sparse_v))
    norm = LayerNorm(rng.normal(size=D), rng.normal(size=D), 1e-6)
    return Transformer(
        layers=(AttentionBlock(heads, scale=0.7, residual=True, norm=norm),
                MLPBlock(rng.normal(size=(D, hidden)), rng.normal(size=hidden),
                         rng.normal(size=(hidden, D)), rng.normal(size=D), residual=False),
                AttentionBlock(heads[:1], residual=False)),
        unembed=rng.normal(size=(D, 3)),
        causal=True,
        input_proj=rng.normal(size=(2, D)),
        token_embed=rng.normal(size=(4, D)),
        pos_embed=rng.normal(size=(6, D)),
        final_norm=LayerNorm(np.ones(D), np.zeros(D)),
        residual_labels=tuple(f"r{i}" for i in range(D)),
        input_encoder=InputEncoder(("BOS", "a", 1, True), bos="BOS"),
        output_encoder=OutputEncoder(("x", 2, False)),
        metadata={"validated": True, "note": [1, 2]},
    )


def test_round_trip_is_lossless(tmp_path):
    model = full_model()
    save(model, tmp_path / "m.npz")
    loaded = load(tmp_path / "m.npz")
    assert weights_equal(model, loaded)
    assert loaded.input_encoder == model.input_encoder
    assert loaded.output_encoder == model.output_encoder
    assert loaded.metadata == model.metadata
    assert isinstance(loaded.layers[0].heads[1].w_v, SparseMatrix)


def test_weights_equal_sees_one_changed_bit():
    a, b = full_model(), full_model()
    assert weights_equal(a, b)
    changed = b.unembed.copy()
    changed[0, 0] = np.nextafter(changed[0, 0], np.inf)
    assert not weights_equal(a, b.replace(unembed=changed))


def test_truncated_file_is_rejected(tmp_path):
    save(full_model(), tmp_path / "m.npz")
    data = (tmp_path / "m.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="corrupt or truncated"):
        load(tmp_path / "cut.npz")


def test_garbage_file_is_rejected(tmp_path):
    (tmp_path / "g.npz").write_bytes(b"not a zip file at all")
    with pytest.raises(WeightsError, match="g.npz: not an .npz archive"):
        load(tmp_path / "g.npz")


def _rewrite_header(src, dst, edit):
    with np.load(src) as arrays:
        contents = {name: arrays[name] for name in arrays.files}
    header = json.loads(contents["__header__"].tobytes())
    edit(header)
    contents["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(dst, **contents)


def test_wrong_version_is_rejected(tmp_path):
    save(full_model(), tmp_path / "m.npz")
    _rewrite_header(tmp_path / "m.npz", tmp_path / "v.npz",
                    lambda h: h.update(version=FORMAT_VERSION + 1))
    with pytest.raises(WeightsError, match=f"format version {FORMAT_VERSION + 1} is not supported"):
        load(tmp_path / "v.npz")


def test_foreign_npz_is_rejected(tmp_path):
    np.savez(tmp_path / "f.npz", a=np.zeros(3))
    with pytest.raises(WeightsError, match="not a rasp-sim weights file"):
        load(tmp_path / "f.npz")


def test_missing_array_is_rejected(tmp_path):
    save(full_model(), tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as arrays:
        contents = {n: arrays[n] for n in arrays.files if n != "unembed"}
    np.savez(tmp_path / "x.npz", **contents)
    with pytest.raises(WeightsError, match="corrupt or truncated.*unembed"):
        load(tmp_path / "x.npz")


def test_corrupted_member_is_rejected(tmp_path):
    save(full_model(), tmp_path / "m.npz")
    with zipfile.ZipFile(tmp_path / "m.npz") as src, \
            zipfile.ZipFile(tmp_path / "c.npz", "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "unembed.npy":
                data = data[:-8]  # drop the last element's bytes
            dst.writestr(info, data)
    with pytest.raises(WeightsError, match="corrupt or truncated"):
        load(tmp_path / "c.npz")


def test_shape_mismatch_names_the_parameter():
    model = full_model()
    head = model.layers[2].heads[0]
    bad_head = AttentionHead(head.w_q, head.w_k[:, :2], head.w_v, head.w_o)
    with pytest.raises(WeightsError, match=r"layers\.0\.heads\.0\.w_k: shape \(5, 2\)"):
        model.replace(layers=(AttentionBlock((bad_head,)),))
    with pytest.raises(WeightsError, match=r"output_encoder\.values: shape \(1,\)"):
        model.replace(output_encoder=OutputEncoder(("only one",)))
    with pytest.raises(WeightsError, match=r"input_proj: shape \(2, 4\)"):
        model.replace(input_proj=np.zeros((2, 4)))
    with pytest.raises(WeightsError, match="residual_labels: 2 labels"):
        model.replace(residual_labels=("a", "b"))


def test_non_finite_weight_names_the_parameter():
    model = full_model()
    bad = model.unembed.copy()
    bad[1, 1] = np.nan
    with pytest.raises(WeightsError, match="unembed: contains non-finite"):
        model.replace(unembed=bad)
    mlp = model.layers[1]
    b1 = mlp.b1.copy()
    b1[0] = np.inf
    with pytest.raises(WeightsError, match=r"layers\.1\.b1: contains non-finite"):
        model.replace(layers=(model.layers[0], MLPBlock(mlp.w1, b1, mlp.w2, mlp.b2)))


def test_non_finite_file_is_rejected(tmp_path):
    save(full_model(), tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as arrays:
        contents = {n: arrays[n] for n in arrays.files}
    contents["layers.1.w1"] = contents["layers.1.w1"].copy()
    contents["layers.1.w1"][0, 0] = np.inf
    np.savez(tmp_path / "inf.npz", **contents)
    with pytest.raises(WeightsError, match=r"inf\.npz: layers\.1\.w1: contains non-finite"):
        load(tmp_path / "inf.npz")


def test_unknown_activation_is_rejected():
    mlp = full_model().layers[1]
    with pytest.raises(WeightsError, match=r"layers\.3\.activation: unknown activation 'swish'"):
        MLPBlock(mlp.w1, mlp.b1, mlp.w2, mlp.b2, activation="swish").check("layers.3", 5)


def test_sparse_out_of_range():
    with pytest.raises(WeightsError, match="cols out of range"):
        SparseMatrix.ones((2, 2), [0], [2])


def test_missing_file(tmp_path):
    with pytest.raises(WeightsError, match="nothing.npz: no such file"):
        load(tmp_path / "nothing.npz")
