"""Proof folders are not trusted (issue 34, compiler/tracr_backend/proof.py): a chunk
record counts only when it is sealed to this proof (model, program, domain) with a
checksum of its content, names one of the domain's chunks and counts that chunk's inputs;
any other is proven again with a warning, never an internal error. A forged "all
correct" over a wrong model is caught by the spot check, a folder rasp-sim did not write
is refused and left as it is, and `--scheduler` is probed whatever the domain's size."""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tracr")

from rasp_sim.cli import main  # noqa: E402
from rasp_sim.cli.compile import describe_proof  # noqa: E402
from rasp_sim.compiler import load_weights  # noqa: E402
from rasp_sim.compiler.tracr_backend import proof as proofs  # noqa: E402
from rasp_sim.compiler.tracr_backend.driver import COMPILE_KEY  # noqa: E402
from rasp_sim.compiler.weights import computation_digest, save  # noqa: E402

from .conftest import EXAMPLES, node_of  # noqa: E402

SORT = str(EXAMPLES / "sort.rasp")
HIST = str(EXAMPLES / "histogram.rasp")


@pytest.fixture(scope="module")
def sort_models(tmp_path_factory):
    """(right model, wrong model, program): sort over 0,1,2 up to length 4 (4 chunks);
    the wrong one's numerical output is doubled, right only where the sorted value is 0."""
    folder = tmp_path_factory.mktemp("models")
    model = folder / "s.npz"
    assert main(["compile", SORT, "--name", "sorted", "--vocab", "0,1,2", "--max-len", "4",
                 "-o", str(model)]) == 0
    right = load_weights(model)
    wrong = right.replace(unembed=2 * np.asarray(right.unembed))
    return right, wrong, node_of(Path(SORT).read_text(), "sorted", SORT)


def _identity(weights, root) -> dict:
    task, domain = proofs.proof_task(weights, root)
    return {"format": proofs.PROOF_FORMAT, "model": computation_digest(weights),
            "program": proofs.program_digest(task.reference), "domain": domain,
            "chunk_inputs": proofs.CHUNK_INPUTS}


def _all_correct(chunk: proofs.Chunk, vocab_size: int) -> dict:
    """What a forger writes: the chunk's every input compared, no disagreement, no CPU."""
    size = vocab_size ** (chunk.length - len(chunk.prefix))
    return {"key": chunk.key, "inputs": size, "compared": size, "undefined": 0,
            "max_numeric_error": 0.0, "output_types": ["float"], "disagreement": None,
            "cpu_seconds": 0.0}


def _forge(folder: Path, weights, root, seal: bool, chunks: int | None = None) -> None:
    """A folder whose manifest is correctly computed for (weights, root), and "all
    correct" records for its first `chunks` chunks (all when None), sealed or not."""
    identity = _identity(weights, root)
    folder.mkdir()
    (folder / proofs.MANIFEST).write_text(json.dumps(identity))
    plan = list(proofs.chunk_plan(3, 1, 4))
    for chunk in plan[:chunks]:
        record = _all_correct(chunk, 3)
        if seal:
            record = proofs.sealed(record, proofs._digest(identity))
        (folder / f"chunk-{chunk.key}.json").write_text(json.dumps(record))


def _honest(sort_models, tmp_path) -> dict:
    right, _, root = sort_models
    proof, _ = proofs.prove(right, root, tmp_path / "honest", workers=1)
    return _result(proof)


def _result(proof) -> dict:
    return {k: v for k, v in proof.as_metadata().items() if k != "cpu_seconds"}


def test_forged_unsealed_records_over_a_wrong_model_are_proven_again(sort_models, tmp_path):
    """The issue's attack: a correctly computed manifest, every chunk 'all correct', 0 s of
    CPU. Before, the wrong model was 'proven on all inputs' with nothing computed."""
    _, wrong, root = sort_models
    _forge(tmp_path / "p", wrong, root, seal=False)
    lines: list[str] = []
    proof, _ = proofs.prove(wrong, root, tmp_path / "p", workers=1, report=lines.append)
    assert not proof.ok and proof.disagreement is not None and proof.resumed == 0
    warnings = [line for line in lines if line.startswith("warning: proof record")]
    assert len(warnings) == 4 and all("its chunk is proven again" in w for w in warnings)
    assert all("not a proof record" in w for w in warnings)


@pytest.mark.parametrize("chunks", [None, 1])
def test_sealed_forged_records_over_a_wrong_model_are_caught_by_the_spot_check(
        sort_models, tmp_path, chunks):
    """A forger who can write the folder can compute the seal (it is no signature): every
    record, or a single one, claiming 'all correct' over the wrong model. The spot check
    proves inputs of those chunks again, finds the model wrong, trusts none of them."""
    _, wrong, root = sort_models
    _forge(tmp_path / "p", wrong, root, seal=True, chunks=chunks)
    lines: list[str] = []
    proof, _ = proofs.prove(wrong, root, tmp_path / "p", workers=1, report=lines.append)
    assert not proof.ok and proof.disagreement is not None and proof.resumed == 0
    assert any("say the model is right where it is not" in line for line in lines), lines


def test_a_recorded_disagreement_is_proven_again(sort_models, tmp_path):
    """A sealed record naming a disagreement where the model is right would fail a right
    model: its chunk is proven again instead."""
    right, _, root = sort_models
    identity = _identity(right, root)
    chunk = next(proofs.chunk_plan(3, 1, 4))
    lie = {**_all_correct(chunk, 3), "inputs": 1, "compared": 1, "disagreement": {
        "input": [0, 0, 0, 0], "position": 0, "expected": 0, "actual": 1}}
    proofs.Records(tmp_path / "p", identity)
    (tmp_path / "p" / f"chunk-{chunk.key}.json").write_text(
        json.dumps(proofs.sealed(lie, proofs._digest(identity))))
    proof, _ = proofs.prove(right, root, tmp_path / "p", workers=1)
    assert proof.ok and proof.resumed == 0


def test_verify_exhaustive_on_forged_records_exits_1_and_records_the_failure(
        sort_models, tmp_path, capsys):
    _, wrong, root = sort_models
    model = tmp_path / "s.npz"
    save(wrong, model)
    _forge(tmp_path / "s.npz.proof", wrong, root, seal=False)
    code = main(["verify", str(model), SORT, "--name", "sorted", "--exhaustive",
                 "--workers", "1", "--allow-unvalidated"])
    err = capsys.readouterr().err
    assert code == 1 and "verify failed" in err and "Traceback" not in err, err
    assert not load_weights(model).metadata[COMPILE_KEY]["proof"]["ok"]


def _reseal(record: dict, identity: dict) -> dict:
    return proofs.sealed({k: v for k, v in record.items() if k not in ("proof", "checksum")},
                         proofs._digest(identity))


def _malformed(record: dict, identity: dict) -> list[tuple[str, bytes]]:
    """(what is wrong, file content) for records that must not be believed."""
    def sealed_with(**changes) -> bytes:
        return json.dumps(_reseal({**record, **changes}, identity)).encode()

    return [
        ("not JSON", b"{not json"),
        ("a list", b"[1, 2]"),
        ("a field missing", json.dumps({k: v for k, v in record.items()
                                        if k != "compared"}).encode()),
        ("content changed, checksum not", json.dumps({**record, "cpu_seconds": 9.0}).encode()),
        ("negative counts", sealed_with(inputs=-999_999_999_999, compared=-999_999_999_999)),
        ("counts not the chunk's size", sealed_with(inputs=1, compared=1)),
        ("compared + undefined != inputs", sealed_with(undefined=5)),
        ("a count that is text", sealed_with(compared="81")),
        ("a bool count", sealed_with(undefined=False)),
        ("a key of no chunk", sealed_with(key="n9-0")),
        ("a key with leading zeros", sealed_with(key="n04-")),
        ("a disagreement without fields", sealed_with(disagreement={"input": [1]})),
        ("output types not names", sealed_with(output_types=[1])),
        ("negative CPU", sealed_with(cpu_seconds=-1.0)),
        ("another proof's seal", json.dumps(proofs.sealed(
            {k: v for k, v in record.items() if k not in ("proof", "checksum")},
            "0" * 64)).encode()),
        ("nested too deeply", b"[" * 100_000 + b"]" * 100_000),
    ]


def test_malformed_records_are_proven_again_with_a_warning(sort_models, tmp_path):
    """Before: KeyError and TypeError (internal errors), or negative totals printed as
    proven. Now each is named in a warning, proven again, and the result is the honest
    one."""
    right, _, root = sort_models
    honest = _honest(sort_models, tmp_path)
    identity = _identity(right, root)
    task, _ = proofs.proof_task(right, root)
    chunk = next(proofs.chunk_plan(3, 1, 4))
    record = proofs.sealed(proofs.prove_chunk(task, chunk), proofs._digest(identity))
    for number, (what, content) in enumerate(_malformed(record, identity)):
        folder = tmp_path / f"p{number}"
        proofs.Records(folder, identity)
        (folder / f"chunk-{chunk.key}.json").write_bytes(content)
        lines: list[str] = []
        proof, _ = proofs.prove(right, root, folder, workers=1, report=lines.append)
        assert _result(proof) == honest and proof.resumed == 0, what
        assert any(f"chunk-{chunk.key}.json" in line and "proven again" in line
                   for line in lines), (what, lines)


def test_a_record_under_another_chunks_name_is_not_believed(sort_models, tmp_path):
    right, _, root = sort_models
    identity = _identity(right, root)
    task, _ = proofs.proof_task(right, root)
    first, second = list(proofs.chunk_plan(3, 1, 4))[:2]
    records = proofs.Records(tmp_path / "p", identity)
    records.add(proofs.prove_chunk(task, first))
    (tmp_path / "p" / f"chunk-{first.key}.json").rename(
        tmp_path / "p" / f"chunk-{second.key}.json")
    lines: list[str] = []
    proof, _ = proofs.prove(right, root, tmp_path / "p", workers=1, report=lines.append)
    assert proof.ok and proof.resumed == 0
    assert any(f"it is the record of chunk {first.key}" in line for line in lines)


def test_honest_records_still_resume(sort_models, tmp_path):
    right, _, root = sort_models
    honest = _honest(sort_models, tmp_path)
    task, _ = proofs.proof_task(right, root)
    records = proofs.Records(tmp_path / "p", _identity(right, root))
    for chunk in list(proofs.chunk_plan(3, 1, 4))[:2]:
        records.add(proofs.prove_chunk(task, chunk))
    lines: list[str] = []
    proof, _ = proofs.prove(right, root, tmp_path / "p", workers=1, report=lines.append)
    assert proof.resumed == 2 and _result(proof) == honest
    assert not any(line.startswith("warning") for line in lines)


def test_no_resume_proves_every_chunk_again(sort_models, tmp_path, capsys):
    right, _, root = sort_models
    model = tmp_path / "s.npz"
    save(right, model)
    task, _ = proofs.proof_task(right, root)
    records = proofs.Records(tmp_path / "s.npz.proof", _identity(right, root))
    for chunk in list(proofs.chunk_plan(3, 1, 4))[:2]:
        records.add(proofs.prove_chunk(task, chunk))
    assert main(["verify", str(model), SORT, "--name", "sorted", "--exhaustive",
                 "--workers", "1", "--no-resume"]) == 0
    out, err = capsys.readouterr()
    assert "proven on all 120 inputs" in out and "chunks resumed" not in out
    assert "by an earlier run" not in err
    assert not (tmp_path / "s.npz.proof").exists()


def test_no_resume_needs_exhaustive(tmp_path, capsys):
    assert main(["compile", HIST, "--name", "hist", "--vocab", "a,b", "--max-len", "3",
                 "-o", str(tmp_path / "m.npz"), "--no-resume"]) == 2
    assert "--no-resume is for an exhaustive proof" in capsys.readouterr().err


# -------------------------------------------------------------- folders rasp-sim did not make


def _compile_exhaustive(tmp_path: Path, folder: Path) -> int:
    return main(["compile", HIST, "--name", "hist", "--vocab", "a,b", "--max-len", "3",
                 "-o", str(tmp_path / "m.npz"), "--exhaustive", "--workers", "1",
                 "--proof-dir", str(folder)])


def test_a_users_folder_with_proof_and_chunk_files_is_refused_and_left_alone(
        tmp_path, capsys):
    """Before, the user's proof.json and chunk-*.json were deleted, and the folder."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "proof.json").write_text('{"my": "proof"}')
    (folder / "chunk-1.json").write_text('{"my": "chunk"}')
    assert _compile_exhaustive(tmp_path, folder) == 1
    err = capsys.readouterr().err
    assert "is not a rasp-sim proof manifest" in err and "--proof-dir" in err, err
    assert sorted(os.listdir(folder)) == ["chunk-1.json", "proof.json"]
    assert (folder / "proof.json").read_text() == '{"my": "proof"}'
    assert (folder / "chunk-1.json").read_text() == '{"my": "chunk"}'
    assert not (tmp_path / "m.npz").exists()


def test_chunk_files_without_a_manifest_are_refused_and_left_alone(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "chunk-n3-.json").write_text("mine")
    assert _compile_exhaustive(tmp_path, folder) == 1
    assert "chunk-*.json files but no proof.json" in capsys.readouterr().err
    assert (folder / "chunk-n3-.json").read_text() == "mine"


def test_a_folder_rasp_sim_did_not_create_is_kept_with_the_users_files(tmp_path):
    """Only the records go once the proof is in the model: an existing folder stays
    (before, an empty one was removed), and so do the files the user keeps in it."""
    empty, busy = tmp_path / "empty", tmp_path / "busy"
    empty.mkdir()
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    assert _compile_exhaustive(tmp_path, empty) == 0
    assert _compile_exhaustive(tmp_path, busy) == 0
    assert empty.is_dir() and os.listdir(empty) == []
    assert os.listdir(busy) == ["notes.txt"]
    assert _compile_exhaustive(tmp_path, tmp_path / "new" / "sub") == 0
    assert not (tmp_path / "new" / "sub").exists()  # rasp-sim made it: removed


def _unblock_later(fifo: Path, seconds: float = 3.0) -> None:
    """Open `fifo` for writing after `seconds` (and close it): a reader that blocks on
    it, as the old code did, then reads an empty file instead of hanging the test run."""
    def unblock() -> None:
        time.sleep(seconds)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # nobody reading it: nothing to unblock
            pass

    threading.Thread(target=unblock, daemon=True).start()


def test_a_fifo_as_the_manifest_is_refused_without_blocking(tmp_path, capsys):
    folder = tmp_path / "p"
    folder.mkdir()
    os.mkfifo(folder / "proof.json")
    _unblock_later(folder / "proof.json")
    start = time.monotonic()
    assert _compile_exhaustive(tmp_path, folder) == 1
    err = capsys.readouterr().err
    assert "is not a rasp-sim proof manifest" in err and "FIFO" in err, err
    assert time.monotonic() - start < 3.0
    assert (folder / "proof.json").exists() and not (tmp_path / "m.npz").exists()


def test_a_fifo_or_an_oversized_file_as_a_chunk_record_is_proven_again(
        sort_models, tmp_path):
    right, _, root = sort_models
    honest = _honest(sort_models, tmp_path)
    plan = list(proofs.chunk_plan(3, 1, 4))
    folder = tmp_path / "p"
    proofs.Records(folder, _identity(right, root))
    os.mkfifo(folder / f"chunk-{plan[0].key}.json")
    _unblock_later(folder / f"chunk-{plan[0].key}.json")
    with open(folder / f"chunk-{plan[1].key}.json", "wb") as sparse:
        sparse.truncate(proofs.MAX_RECORD_BYTES + 1)
    lines: list[str] = []
    start = time.monotonic()
    proof, _ = proofs.prove(right, root, folder, workers=1, report=lines.append)
    assert time.monotonic() - start < 3.0
    assert _result(proof) == honest and proof.resumed == 0
    assert any("FIFO" in line and "proven again" in line for line in lines), lines
    assert any("above the limit" in line and "proven again" in line for line in lines), lines


# ------------------------------------------------------------------ the recorded proof


@pytest.mark.parametrize("recorded", [
    None, [], {}, {"domain": {"vocab": ["a"], "min_len": 1, "max_len": 2}},
    {"domain": {"vocab": ["a"], "min_len": 1, "max_len": 2}, "inputs": -999_999_721_472,
     "undefined": 0, "oracles": ["x"], "ok": True},
    {"domain": {"vocab": ["a"], "min_len": 1, "max_len": 2}, "inputs": "2",
     "undefined": 0, "oracles": ["x"], "ok": True},
    {"domain": {"vocab": ["a"], "min_len": 1, "max_len": 2}, "inputs": 2,
     "undefined": 0, "oracles": "xy", "ok": True},
    {"domain": {"vocab": ["a"], "min_len": 1, "max_len": 2}, "inputs": 2,
     "undefined": 0, "oracles": ["x"], "ok": "yes"},
])
def test_a_malformed_recorded_proof_is_named_not_described(recorded):
    """A model's hash is a checksum anyone can recompute: its proof entry may be forged.
    Before, these were internal errors (KeyError, ValueError) or negative counts."""
    assert describe_proof(recorded).startswith("a recorded proof that is not rasp-sim's")


def test_a_recorded_proof_is_described(sort_models, tmp_path):
    right, _, root = sort_models
    proof, _ = proofs.prove(right, root, tmp_path / "p", workers=1)
    assert describe_proof(proof.as_metadata()).startswith("proven on every input: 120 inputs")


# ------------------------------------------------------------------------- --scheduler


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_scheduler_is_refused_whatever_the_domain_size(
        sort_models, tmp_path, capsys):
    """Before, a bogus --scheduler was ignored when the proof was small enough to run in
    this process; now compile refuses it before any work, and prove (the Python API's
    path) before any chunk."""
    pytest.importorskip("distributed")
    from rasp_sim.base.dask_cluster import PROBE_SECONDS, ClusterError

    address = f"tcp://127.0.0.1:{_closed_port()}"
    start = time.monotonic()
    assert main(["compile", HIST, "--name", "hist", "--vocab", "a,b", "--max-len", "2",
                 "-o", str(tmp_path / "m.npz"), "--exhaustive", "--scheduler", address]) == 1
    err = capsys.readouterr().err
    assert "cluster error" in err and "unreachable" in err and "Traceback" not in err, err
    assert time.monotonic() - start < PROBE_SECONDS + 1.5
    assert not (tmp_path / "m.npz").exists()
    right, _, root = sort_models
    with pytest.raises(ClusterError, match="unreachable"):
        proofs.prove(right, root, tmp_path / "p", scheduler=address)
    assert not (tmp_path / "p").exists()  # refused before any record
