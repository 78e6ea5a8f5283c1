"""Weights files are hostile input: every lie or damage is refused before anything large is
read, with `weights error: <file>: <field>: <what is wrong>`. The files are built here,
byte by byte where the writer would never produce them, and kept tiny."""
from __future__ import annotations

import io
import json
import struct
import zipfile

import numpy as np
import pytest

from rasp_sim.compiler.tracr_backend.runtime import load_compiled
from rasp_sim.compiler.weights import (InputEncoder, MLPBlock, OutputEncoder, Transformer,
                                       WeightsError, load, save)
from rasp_sim.base.errors import RaspResourceError

D = 3


def token_model(tokens=("a", "b", "BOS"), bos="BOS", rows=None, max_len=2, **record):
    """A tiny 'compiled' token model; `record` overrides fields of its compile record."""
    info = {"tokens_kind": "str", "max_len": max_len, "vocab": ["a", "b"], **record}
    return Transformer(
        layers=(MLPBlock(np.zeros((D, 2)), np.zeros(2), np.zeros((2, D)), np.zeros(D)),),
        unembed=np.eye(D)[:, :2], token_embed=np.ones((len(tokens) if rows is None else rows, D)),
        pos_embed=np.zeros((3, D)), input_encoder=InputEncoder(tuple(tokens), bos),
        output_encoder=OutputEncoder(("x", "y")),
        metadata={"validated": True, "tracr_compile": info})


def npy(array: np.ndarray, shape=None) -> bytes:
    """An .npy file's bytes; `shape` makes its header claim another shape."""
    out = io.BytesIO()
    header = {"descr": array.dtype.str, "fortran_order": False,
              "shape": array.shape if shape is None else shape}
    np.lib.format.write_array_header_1_0(out, header)
    return out.getvalue() + array.tobytes()


def stored(tmp_path):
    """The header and arrays `save` writes for token_model()."""
    save(token_model(), tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as archive:
        arrays = {name: archive[name] for name in archive.files}
    return json.loads(arrays.pop("__header__").tobytes()), arrays


def write_npz(path, header, arrays, raw=None, compress=zipfile.ZIP_STORED):
    """An .npz archive: the header as text (a dict is dumped), the arrays, and `raw`
    members (name -> bytes) as they are."""
    text = header if isinstance(header, str) else json.dumps(header)
    members = {name: npy(a) for name, a in arrays.items()}
    members["__header__"] = npy(np.frombuffer(text.encode(), dtype=np.uint8))
    members.update(raw or {})
    with zipfile.ZipFile(path, "w", compress) as archive:
        for name, data in members.items():
            archive.writestr(f"{name}.npy", data)
    return path


def refused(path, pattern, error=WeightsError, **options):
    with pytest.raises(error) as info:
        load(path, **options)
    text = str(info.value)
    assert text.startswith(f"{error.kind}: {path}: "), text
    assert __import__("re").search(pattern, text), text
    return text


def test_a_clean_rewrite_loads(tmp_path):
    """The writer below is faithful: an unchanged header and arrays load (so the tests that
    follow fail for the change they make, not for the writer)."""
    header, arrays = stored(tmp_path)
    load(write_npz(tmp_path / "same.npz", header, arrays))


@pytest.mark.parametrize("edit, pattern", [
    (lambda h: h.update(causal="no"), r"causal: expected true or false, got 'no'"),
    (lambda h: h.update(unembed=None), r"unembed: expected an array"),
    (lambda h: h.update(unembed={"dense": [-1, 2]}),
     r"unembed\.dense\.0: expected a non-negative integer, got -1"),
    (lambda h: h.update(unembed={"dense": [10**6, 10**6]}),
     r"unembed: stored shape \(3, 2\) differs from the header's \(1000000, 1000000\)"),
    (lambda h: h["layers"][0].update(activation=3), r"layers\.0\.activation: expected a string"),
    (lambda h: h["layers"][0].update(kind="conv"),
     r"layers\.0\.kind: expected 'attention' or 'mlp', got 'conv'"),
    (lambda h: h["layers"][0].pop("w1"), r"layers\.0\.w1: missing"),
    (lambda h: h.update(surprise=1), r"surprise: unknown field"),
    (lambda h: h.update(metadata=[1]), r"metadata: expected an object"),
    (lambda h: h["input_encoder"].update(tokens=[["a"]]),
     r"input_encoder\.tokens\.0: expected a string, number, boolean or null"),
    (lambda h: h.pop("sha256"), r"sha256: missing"),
])
def test_bad_header_fields_are_named(tmp_path, edit, pattern):
    header, arrays = stored(tmp_path)
    edit(header)
    refused(write_npz(tmp_path / "h.npz", header, arrays), pattern)


def test_non_finite_and_huge_json_numbers(tmp_path):
    header, arrays = stored(tmp_path)
    header["layers"][0]["norm"] = {"gain": {"dense": [3]}, "bias": {"dense": [3]}, "eps": 0}
    refused(write_npz(tmp_path / "e.npz", header, arrays),
            r"layers\.0\.norm\.eps: expected a finite positive number, got 0")
    text = json.dumps(stored(tmp_path)[0]).replace('"version": 2', '"version": 1e400')
    refused(write_npz(tmp_path / "v.npz", text, arrays), r"format version inf is not supported")


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_header(tmp_path, depth):
    header, arrays = stored(tmp_path)
    text = json.dumps(header).replace('"metadata": {', '"metadata": {"deep": '
                                      + "[" * depth + "]" * depth + ", ", 1)
    refused(write_npz(tmp_path / "deep.npz", text, arrays),
            r"header: JSON nested more than 64 levels deep")


def test_members_must_match_the_header(tmp_path):
    header, arrays = stored(tmp_path)
    refused(write_npz(tmp_path / "x.npz", header, {**arrays, "extra": np.zeros(2)}),
            r"extra: an array the header does not name")
    refused(write_npz(tmp_path / "i.npz", header, {**arrays, "unembed": np.zeros((3, 2), int)}),
            r"unembed: stored as int64, expected float64")
    refused(write_npz(tmp_path / "t.npz", header, arrays, raw={"notes": b"text"}),
            r"notes: not an \.npy array")
    with zipfile.ZipFile(tmp_path / "r.npz", "w") as archive:
        archive.writestr("readme.txt", b"hello")
    refused(tmp_path / "r.npz", r"readme\.txt: an archive member that is not an \.npy array")


def test_npy_header_claiming_10_to_the_12_elements(tmp_path):
    """The member's .npy header claims 10^12 floats; the member holds 48 bytes: refused
    from the zip's declared size before anything is allocated."""
    header, arrays = stored(tmp_path)
    lying = npy(arrays["unembed"], shape=(10**6, 10**6))
    refused(write_npz(tmp_path / "big.npz", header, arrays, raw={"unembed": lying}),
            r"unembed: its \.npy header declares shape \(1000000, 1000000\) "
            r"\(8,000,000,000,000 bytes\) but it holds 48 bytes")


def test_object_arrays_are_refused_without_unpickling(tmp_path):
    header, arrays = stored(tmp_path)
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    refused(write_npz(tmp_path / "o.npz", header, arrays, raw={"unembed": pickled.getvalue()}),
            r"unembed: dtype \|O \(expected float64 or int64\)")


def test_compressed_member_is_bounded_by_its_declared_size(tmp_path):
    """64 MiB of zeros deflate to a 64 KiB file: the declared size is checked against the
    memory limit before any member is inflated."""
    header, arrays = stored(tmp_path)
    header["unembed"] = {"dense": [2**23, 1]}
    arrays["unembed"] = np.zeros((2**23, 1))
    path = write_npz(tmp_path / "bomb.npz", header, arrays, compress=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 2**20
    total = 2**26 + sum(a.nbytes for name, a in arrays.items() if name != "unembed")
    text = refused(path, r"its header and arrays declare [\d,]+ bytes \(the largest array, "
                   r"unembed, has shape \(8388608, 1\)\), above the memory limit of 1,048,576 "
                   r"bytes; raise it with memory_limit= \(rasp-sim: --memory-limit\)",
                   error=RaspResourceError, memory_limit=2**20)
    declared = int(text.split("declare ")[1].split(" bytes")[0].replace(",", ""))
    assert total < declared < total + 4096  # the arrays, plus the header's few bytes


def test_damaged_compressed_member(tmp_path):
    save(token_model(), tmp_path / "m.npz")
    with zipfile.ZipFile(tmp_path / "m.npz") as src, \
            zipfile.ZipFile(tmp_path / "z.npz", "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    data = bytearray((tmp_path / "z.npz").read_bytes())
    start = data.find(b"unembed.npy") + len("unembed.npy")
    data[start + 30:start + 60] = bytes(30)  # zero bytes inside the deflated stream
    (tmp_path / "z.npz").write_bytes(bytes(data))
    refused(tmp_path / "z.npz", r"unembed: corrupt or truncated")


def test_safetensors_header_claiming_huge_shapes(tmp_path):
    meta = json.dumps({"a": {"dtype": "F64", "shape": [10**6, 10**6],
                             "data_offsets": [0, 8 * 10**12]}}).encode()
    (tmp_path / "s.safetensors").write_bytes(struct.pack("<Q", len(meta)) + meta + bytes(8))
    refused(tmp_path / "s.safetensors", r"corrupt or not a safetensors file")


def test_safetensors_within_the_memory_limit(tmp_path):
    save(token_model(), tmp_path / "m.safetensors")
    refused(tmp_path / "m.safetensors", r"above the memory limit of 100 bytes",
            error=RaspResourceError, memory_limit=100)
    load(tmp_path / "m.safetensors")


def test_a_folder_is_not_a_weights_file(tmp_path):
    refused(tmp_path, r"a directory, not a weights file")


@pytest.mark.parametrize("model, pattern", [
    (token_model(bos="START"), r"input_encoder\.bos: 'START' is not in the vocabulary"),
    (token_model(rows=2), r"token_embed: 2 rows for 3 tokens"),
    (token_model(max_len=5), r"pos_embed: 3 rows, but max_len 5 needs 6"),
    (token_model(tokens_kind="bytes"), r"metadata\.tracr_compile\.tokens_kind: expected one of"),
    (token_model(max_len=None), r"metadata\.tracr_compile\.max_len: expected a positive integer"),
    (token_model(min_len=3), r"metadata\.tracr_compile\.min_len: 3 is above max_len 2"),
    (token_model(vocab="ab"), r"metadata\.tracr_compile\.vocab: expected a list"),
])
def test_compile_records_are_checked_against_the_model(tmp_path, model, pattern):
    save(model, tmp_path / "c.npz")
    with pytest.raises(WeightsError) as info:
        load_compiled(tmp_path / "c.npz")
    assert str(info.value).startswith(f"weights error: {tmp_path / 'c.npz'}: ")
    assert __import__("re").search(pattern, str(info.value)), str(info.value)


def test_a_missing_compile_field(tmp_path):
    model = token_model()
    record = dict(model.metadata["tracr_compile"])
    del record["max_len"]
    save(model.replace(metadata={"validated": True, "tracr_compile": record}), tmp_path / "c.npz")
    with pytest.raises(WeightsError, match=r"metadata\.tracr_compile\.max_len: missing"):
        load_compiled(tmp_path / "c.npz")
    save(token_model(), tmp_path / "ok.npz")
    assert load_compiled(tmp_path / "ok.npz")[1] is None


def test_run_weights_reads_within_its_memory_limit(tmp_path, capsys):
    from rasp_sim.cli import main

    save(token_model(), tmp_path / "m.npz")
    assert main(["run", "--weights", str(tmp_path / "m.npz"), "--input", "ab",
                 "--memory-limit", "100"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"resource limit: {tmp_path / 'm.npz'}: its header and arrays declare")
    assert "above the memory limit of 100 bytes" in err
    header, arrays = stored(tmp_path)
    header["causal"] = "no"
    write_npz(tmp_path / "bad.npz", header, arrays)
    assert main(["run", "--weights", str(tmp_path / "bad.npz"), "--input", "ab"]) == 1
    assert capsys.readouterr().err == (f"weights error: {tmp_path / 'bad.npz'}: causal: expected "
                                       "true or false, got 'no'\n")


def test_a_version_1_file_is_never_trusted_as_validated(tmp_path):
    """Version 1 has no hash, so its `validated` flag may have been edited: it is refused
    unless --allow-unvalidated, which says why."""
    header, arrays = stored(tmp_path)
    header.update(version=1)
    del header["sha256"]
    path = write_npz(tmp_path / "v1.npz", header, arrays)
    why = ("a version-1 file: it has no hash, so nothing guards its 'validated' flag; compile "
           "the program again for a checked file")
    with pytest.raises(WeightsError) as info:
        load_compiled(path)
    assert str(info.value) == (f"weights error: {path}: the model is not validated ({why}); "
                               "--allow-unvalidated uses it anyway")
    assert load_compiled(path, allow_unvalidated=True)[1] == (
        f"warning: {path} is NOT validated ({why}); its outputs may be wrong")


@pytest.mark.parametrize("outer, recorded", [(True, False), (False, True)])
def test_validated_flags_that_disagree_are_refused(tmp_path, outer, recorded):
    model = token_model(validated=recorded)
    save(model.replace(metadata={**model.metadata, "validated": outer}), tmp_path / "c.npz")
    with pytest.raises(WeightsError) as info:
        load_compiled(tmp_path / "c.npz", allow_unvalidated=True)
    assert str(info.value) == (
        f"weights error: {tmp_path / 'c.npz'}: its metadata says validated: "
        f"{str(outer).lower()} but its compile record says validated: "
        f"{str(recorded).lower()}; the file was edited or is corrupt: compile the program "
        "again")


@pytest.mark.filterwarnings("error")  # a NumPy RuntimeWarning would fail the test
def test_an_overflowing_forward_pass_is_an_error_naming_the_block(tmp_path, capsys):
    """Weights near the float64 limit: the MLP's hidden layer overflows to inf. That was
    printed as a decoded answer with exit 0 and a RuntimeWarning on stderr."""
    from rasp_sim.cli import main

    huge = MLPBlock(np.full((D, 2), 1e308), np.zeros(2), np.ones((2, D)), np.zeros(D))
    save(token_model().replace(layers=(huge,)), tmp_path / "m.npz")
    assert main(["run", "--weights", str(tmp_path / "m.npz"), "--input", "ab"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("weights error: block 0 (MLP): the forward pass overflowed (an "
                            "infinite or nan value in the residual stream): the weights or "
                            "inputs are too large for float64\n")


def _declare_uncompressed_size(path, member: str, size: int) -> None:
    """Patch a zip's local and central headers so that `member` declares `size`
    uncompressed bytes (what a forged file can say)."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    for signature, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = data.find(signature)
        while start >= 0:
            name_at = start + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at:name_at + len(name)] == name:
                data[start + size_at:start + size_at + 4] = struct.pack("<I", size)
            start = data.find(signature, start + 4)
    path.write_bytes(bytes(data))


def test_a_lying_compressed_member_costs_no_more_memory_than_its_data(tmp_path):
    """A deflated member whose zip and .npy headers both declare 1 GiB and which holds a
    few bytes: it is read as its bytes arrive, not into a 1 GiB buffer allocated first (a
    1 GB lie peaked at 990 MB). Measured in a fresh process: its peak memory."""
    import subprocess
    import sys

    header, arrays = stored(tmp_path)
    elements = 2**27  # 1 GiB of float64
    header["unembed"] = {"dense": [elements, 1]}
    lying = npy(arrays["unembed"], shape=(elements, 1))
    path = write_npz(tmp_path / "lie.npz", header, arrays, raw={"unembed": lying},
                     compress=zipfile.ZIP_DEFLATED)
    npy_header = len(lying) - arrays["unembed"].nbytes
    _declare_uncompressed_size(path, "unembed.npy", npy_header + 8 * elements)
    # VmHWM: this process's peak resident memory (ru_maxrss would include the pytest
    # process's, which survives exec)
    probe = ("import sys\nfrom rasp_sim.compiler import load_weights\n"
             "try:\n    load_weights(sys.argv[1])\nexcept Exception as error:\n"
             "    print(error)\n"
             "print(next(line.split()[1] for line in open('/proc/self/status')\n"
             "           if line.startswith('VmHWM:')))")
    result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                            text=True, check=True)
    message, peak_kib = result.stdout.strip().splitlines()
    assert message.startswith(f"weights error: {path}: unembed: ")
    assert "corrupt or truncated" in message or "truncated (" in message, message
    assert int(peak_kib) < 300 * 1024  # Python and NumPy take about 60 MiB; the lie 1 GiB


def test_a_vocabulary_entry_the_model_has_no_token_for_is_named(tmp_path):
    """It was a StopIteration (internal error) under verify and universal verify."""
    save(token_model(vocab=["a", "b", "c"]), tmp_path / "c.npz")
    with pytest.raises(WeightsError) as info:
        load_compiled(tmp_path / "c.npz")
    assert str(info.value) == (f"weights error: {tmp_path / 'c.npz'}: metadata.tracr_compile."
                               "vocab: 'c' is not one of the model's tokens "
                               "(input_encoder.tokens)")


def test_a_forged_domain_of_2_to_the_256_inputs_is_bounded_before_counting():
    """A hash-valid record at the longest max_len (256; longer ones are refused when read)
    and no position embedding: universal verify's domain count finishes at once."""
    from rasp_sim.compiler.tracr_backend.validate import COUNT_CAP, domain_size
    from rasp_sim.compiler.universal import as_target, check_domain_size
    from rasp_sim.compiler.universal.errors import UniversalError

    model = token_model(max_len=256).replace(pos_embed=None)
    with pytest.raises(RaspResourceError) as info:
        check_domain_size(model, 100_000)
    assert str(info.value) == (
        f"resource limit: the model's domain has more than {COUNT_CAP:,} inputs (2 tokens, "
        "lengths 1..256), above the limit of 100,000 inputs checked one by one; "
        "raise it with --max-inputs N")
    assert domain_size(2, 10**15) == COUNT_CAP + 1 and domain_size(3, 4) == 3 + 9 + 27 + 81
    assert domain_size(1, 10**15) == 10**15 and domain_size(0, 5) == 0
    with pytest.raises(UniversalError, match="pos_embed: missing; a compiled token model "
                                             "embeds positions"):
        as_target(model)


def test_a_record_longer_than_any_compile_is_refused_when_read(tmp_path):
    """No compile writes max_len above the compiler's limit (256): a record claiming more
    is forged, and is refused before verify or run sample rows that long."""
    save(token_model(max_len=10**15).replace(pos_embed=None), tmp_path / "long.npz")
    with pytest.raises(WeightsError, match=r"metadata.tracr_compile.max_len: expected a "
                       r"positive integer at most 256"):
        load_compiled(tmp_path / "long.npz")
