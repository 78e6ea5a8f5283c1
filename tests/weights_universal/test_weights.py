"""The weight format: construction checks, lossless save/load, rejection of bad files."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from rasp_sim.compiler.weights import (FORMAT_VERSION, AttentionBlock, AttentionHead,
                                       InputEncoder, LayerNorm, MLPBlock, OutputEncoder,
                                       SparseMatrix, Transformer, WeightsError, load, save,
                                       weights_digest, weights_equal)

SUFFIXES = [".npz", ".safetensors"]


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
                AttentionBlock(heads[:1], residual=False),
                # a bilinear (GLU-family) block with a sparse gate
                MLPBlock(rng.normal(size=(D, 4)), rng.normal(size=4),
                         SparseMatrix((4, D), [0, 3], [1, 4], rng.normal(size=2)),
                         rng.normal(size=D), activation="linear",
                         w_gate=SparseMatrix((D, 4), [2, 2, 0], [0, 3, 1], rng.normal(size=3)),
                         b_gate=rng.normal(size=4))),
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


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_round_trip_is_lossless(tmp_path, suffix):
    model = full_model()
    save(model, tmp_path / f"m{suffix}")
    loaded = load(tmp_path / f"m{suffix}")
    assert weights_equal(model, loaded)
    assert loaded.input_encoder == model.input_encoder
    assert loaded.output_encoder == model.output_encoder
    assert loaded.metadata == model.metadata
    assert isinstance(loaded.layers[0].heads[1].w_v, SparseMatrix)
    gated = loaded.layers[3]
    assert gated.activation == "linear" and isinstance(gated.w_gate, SparseMatrix)
    assert np.array_equal(gated.w_gate.toarray(), model.layers[3].w_gate.toarray())
    assert np.array_equal(gated.b_gate, model.layers[3].b_gate)
    assert loaded.layers[1].w_gate is None and loaded.layers[1].b_gate is None


def test_the_two_formats_hold_the_same_arrays(tmp_path):
    model = full_model()
    save(model, tmp_path / "m.npz")
    save(model, tmp_path / "m.safetensors")
    from safetensors.numpy import load_file

    stored = load_file(tmp_path / "m.safetensors")
    with np.load(tmp_path / "m.npz") as arrays:
        assert set(arrays.files) - {"__header__"} == set(stored)
        for name in stored:
            assert arrays[name].dtype == stored[name].dtype
            assert arrays[name].tobytes() == stored[name].tobytes()


def _rewrite_array(src, dst, name, edit):
    """Copy the .npz `src` to `dst` with array `name` edited and the old header kept."""
    with np.load(src) as arrays:
        contents = {n: arrays[n] for n in arrays.files}
    contents[name] = contents[name].copy()
    edit(contents[name])
    np.savez(dst, **contents)


def test_an_altered_weight_is_refused(tmp_path):
    save(full_model(), tmp_path / "m.npz")

    def nudge(array):
        array[0, 0] = np.nextafter(array[0, 0], np.inf)  # one ulp: still valid weights

    _rewrite_array(tmp_path / "m.npz", tmp_path / "edited.npz", "layers.1.w2", nudge)
    with pytest.raises(WeightsError, match=r"edited\.npz: altered or corrupt: the weights' hash "
                       "does not match the one recorded"):
        load(tmp_path / "edited.npz")


def test_an_altered_header_is_refused(tmp_path):
    model = full_model().replace(metadata={"validated": False})
    save(model, tmp_path / "m.npz")
    _rewrite_header(tmp_path / "m.npz", tmp_path / "h.npz",
                    lambda h: h["metadata"].update(validated=True))
    with pytest.raises(WeightsError, match="h.npz: altered or corrupt"):
        load(tmp_path / "h.npz")


def test_an_altered_safetensors_file_is_refused(tmp_path):
    from safetensors import safe_open
    from safetensors.numpy import save_file

    save(full_model(), tmp_path / "m.safetensors")
    with safe_open(str(tmp_path / "m.safetensors"), framework="np") as stored:
        metadata = stored.metadata()
        arrays = {name: stored.get_tensor(name) for name in stored.keys()}
    arrays["unembed"] = arrays["unembed"] * 2
    save_file(arrays, tmp_path / "e.safetensors", metadata=metadata)
    with pytest.raises(WeightsError, match="e.safetensors: altered or corrupt"):
        load(tmp_path / "e.safetensors")


def test_digest_depends_on_name_dtype_and_shape():
    header = {"format": "x", "sha256": "ignored"}
    base = weights_digest(header, {"a": np.arange(4.0)})
    assert base == weights_digest({"format": "x"}, {"a": np.arange(4.0)})
    for changed in ({"b": np.arange(4.0)}, {"a": np.arange(4.0).reshape(2, 2)},
                    {"a": np.arange(4.0).view(np.int64)}, {"a": np.arange(4.0)[::-1]}):
        assert weights_digest(header, changed) != base
    assert weights_digest({"format": "y"}, {"a": np.arange(4.0)}) != base


def test_version_1_files_are_still_read(tmp_path):
    """A version-1 file: no gate entries, no hash (as rasp-sim 0.1 wrote them)."""
    model = full_model()
    v1 = model.replace(layers=model.layers[:3])
    save(v1, tmp_path / "m.npz")

    def downgrade(header):
        header.update(version=1)
        del header["sha256"]
        for entry in header["layers"]:
            entry.pop("w_gate", None), entry.pop("b_gate", None)

    _rewrite_header(tmp_path / "m.npz", tmp_path / "v1.npz", downgrade)
    assert weights_equal(load(tmp_path / "v1.npz"), v1)


@pytest.mark.parametrize("content, message", [
    (b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ", "not a rasp-sim weights file"),
    (b"garbage", "corrupt or not a safetensors file"),
])
def test_foreign_or_corrupt_safetensors_are_rejected(tmp_path, content, message):
    (tmp_path / "f.safetensors").write_bytes(content)
    with pytest.raises(WeightsError, match=f"f.safetensors: {message}"):
        load(tmp_path / "f.safetensors")


def test_truncated_safetensors_is_rejected(tmp_path):
    save(full_model(), tmp_path / "m.safetensors")
    data = (tmp_path / "m.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:-16])
    with pytest.raises(WeightsError, match="cut.safetensors: corrupt"):
        load(tmp_path / "cut.safetensors")


def test_safetensors_without_our_header_is_rejected(tmp_path):
    from safetensors.numpy import save_file

    save_file({"a": np.zeros(3)}, tmp_path / "foreign.safetensors", metadata={"x": "y"})
    with pytest.raises(WeightsError, match="not a rasp-sim weights file"):
        load(tmp_path / "foreign.safetensors")


def test_gate_needs_its_bias_and_matching_shapes():
    mlp = full_model().layers[1]
    D, hidden = mlp.w1.shape
    with pytest.raises(WeightsError, match=r"layers\.2\.b_gate: missing \(w_gate is given"):
        MLPBlock(mlp.w1, mlp.b1, mlp.w2, mlp.b2, w_gate=np.zeros((D, hidden))).check("layers.2", D)
    with pytest.raises(WeightsError, match=r"layers\.2\.w_gate: missing \(b_gate is given"):
        MLPBlock(mlp.w1, mlp.b1, mlp.w2, mlp.b2, b_gate=np.zeros(hidden)).check("layers.2", D)
    with pytest.raises(WeightsError, match=r"layers\.2\.w_gate: shape \(5, 3\) does not match "
                       "hidden width of w1"):
        MLPBlock(mlp.w1, mlp.b1, mlp.w2, mlp.b2, w_gate=np.zeros((D, 3)),
                 b_gate=np.zeros(hidden)).check("layers.2", D)
    with pytest.raises(WeightsError, match=r"layers\.2\.b_gate: shape \(3,\)"):
        MLPBlock(mlp.w1, mlp.b1, mlp.w2, mlp.b2, w_gate=np.zeros((D, hidden)),
                 b_gate=np.zeros(3)).check("layers.2", D)


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
    with pytest.raises(WeightsError, match=r"x\.npz: unembed: missing \(the header names it\)"):
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
    gate = np.zeros(mlp.w1.shape)
    gate[2, 1] = np.nan
    with pytest.raises(WeightsError, match=r"layers\.1\.w_gate: contains non-finite"):
        model.replace(layers=(model.layers[0], MLPBlock(mlp.w1, mlp.b1, mlp.w2, mlp.b2,
                                                        w_gate=gate, b_gate=mlp.b1)))


def test_non_finite_file_is_rejected(tmp_path):
    save(full_model(), tmp_path / "m.npz")

    def poison(array):
        array[0, 0] = np.inf

    _rewrite_array(tmp_path / "m.npz", tmp_path / "inf.npz", "layers.1.w1", poison)
    with pytest.raises(WeightsError, match=r"inf\.npz: layers\.1\.w1: contains non-finite"):
        load(tmp_path / "inf.npz")


def test_unknown_activation_is_rejected():
    mlp = full_model().layers[1]
    with pytest.raises(WeightsError, match=r"layers\.3\.activation: unknown activation 'swish'"):
        MLPBlock(mlp.w1, mlp.b1, mlp.w2, mlp.b2, activation="swish").check("layers.3", 5)


def test_sparse_out_of_range():
    with pytest.raises(WeightsError, match="cols out of range"):
        SparseMatrix.ones((2, 2), [0], [2])


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_missing_file(tmp_path, suffix):
    with pytest.raises(WeightsError, match=f"nothing{suffix}: no such file"):
        load(tmp_path / f"nothing{suffix}")


def test_a_safetensors_path_in_a_missing_folder_is_refused_by_name(tmp_path):
    from rasp_sim.base.errors import OutputRefused

    with pytest.raises(OutputRefused, match="the folder .*missing does not exist"):
        save(full_model(), tmp_path / "missing" / "m.safetensors")
