"""Whole-domain proofs (`compile/verify --exhaustive`, compiler/tracr_backend/proof.py):
chunks cover the domain exactly once, the model records the proof, a wrong model's
failing input is found and named, options are checked, and an interrupted proof resumes
to the same result (the slow test, on a local Dask cluster)."""
from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("tracr")

from rasp_sim.cli import main  # noqa: E402
from rasp_sim.compiler import load_weights, run_weights  # noqa: E402
from rasp_sim.compiler.tracr_backend import proof as proofs  # noqa: E402
from rasp_sim.compiler.tracr_backend.driver import COMPILE_KEY  # noqa: E402
from rasp_sim.compiler.weights import save  # noqa: E402
from rasp_sim.evaluation.evaluate import evaluate  # noqa: E402

from .conftest import EXAMPLES, node_of  # noqa: E402

HIST = str(EXAMPLES / "histogram.rasp")
SORT = str(EXAMPLES / "sort.rasp")


@settings(max_examples=60, deadline=None)
@given(vocab_size=st.integers(1, 4), min_len=st.integers(1, 4), extra=st.integers(0, 3),
       chunk_inputs=st.integers(1, 40))
def test_chunks_hold_every_input_exactly_once(vocab_size, min_len, extra, chunk_inputs):
    max_len = min_len + extra
    chunks = list(proofs.chunk_plan(vocab_size, min_len, max_len, chunk_inputs))
    assert len(chunks) == proofs.chunk_count(vocab_size, min_len, max_len, chunk_inputs)
    assert len({c.key for c in chunks}) == len(chunks)  # keys name the records
    seen = []
    for chunk in chunks:
        rows = proofs.chunk_rows(chunk, vocab_size)
        assert len(rows) <= max(chunk_inputs, 1) or vocab_size > chunk_inputs
        assert (rows[:, :len(chunk.prefix)] == chunk.prefix).all()
        seen += [tuple(row) for row in rows.tolist()]
    expected = [row for n in range(min_len, max_len + 1)
                for row in itertools.product(range(vocab_size), repeat=n)]
    assert len(seen) == len(expected) and sorted(seen) == sorted(expected)


def test_compile_exhaustive_records_the_proof(tmp_path, capsys):
    model = tmp_path / "h.npz"
    assert main(["compile", HIST, "--name", "hist", "--vocab", "a,b,c", "--max-len", "6",
                 "-o", str(model), "--exhaustive", "--workers", "1"]) == 0
    out, err = capsys.readouterr()
    assert "proven on all 1,092 inputs" in out and "proving on every input: 1,092" in err
    assert sorted(os.listdir(tmp_path)) == ["h.npz"]  # the records are gone once recorded
    weights = load_weights(model)  # its hash covers the record
    record = weights.metadata[COMPILE_KEY]
    proof = record["proof"]
    assert proof["ok"] and proof["inputs"] == proof["compared"] == 1092
    assert proof["domain"] == {"vocab": ["a", "b", "c"], "min_len": 1, "max_len": 6}
    assert proof["oracles"] == list(proofs.ORACLES)
    # the bulk comparison counts what the element-by-element validation counted
    assert record["validation"]["mode"] == "exhaustive"
    assert record["validation"]["compared"] == proof["compared"]
    import rasp_sim

    assert rasp_sim.load_model(model).proof == proof
    assert main(["verify", str(model), HIST, "--name", "hist"]) == 0
    assert "proven on every input: 1,092 inputs" in capsys.readouterr().out
    assert main(["run", "--weights", str(model), "--input", "abc"]) == 0
    assert "proven on every input" in capsys.readouterr().err


def test_verify_exhaustive_finds_and_records_a_wrong_models_failing_input(tmp_path, capsys):
    model = tmp_path / "s.npz"
    assert main(["compile", SORT, "--name", "sorted", "--vocab", "0,1,2", "--max-len", "4",
                 "-o", str(model)]) == 0
    weights = load_weights(model)
    # a deliberately wrong model: its (numerical) output doubled, right only where it is 0
    save(weights.replace(unembed=2 * np.asarray(weights.unembed)), model)
    capsys.readouterr()
    assert main(["verify", str(model), SORT, "--name", "sorted", "--exhaustive",
                 "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert "verify failed" in err and "on input [" in err and "checked every input" in err
    recorded = load_weights(model).metadata
    proof = recorded[COMPILE_KEY]["proof"]
    assert not proof["ok"] and recorded["validated"] is False
    bad = proof["disagreement"]
    # the named input really is one where the model and the program differ, as recorded
    program = node_of(Path(SORT).read_text(), "sorted", SORT)
    wrong = load_weights(model)
    assert evaluate([program], [bad["input"]])[0][0][bad["position"]] == bad["expected"]
    assert run_weights(wrong, [bad["input"]])[0][bad["position"]] == bad["actual"]
    assert bad["expected"] != bad["actual"]
    # the model now says not validated: run refuses it
    assert main(["run", "--weights", str(model), "--input", "[0, 1]"]) != 0


def test_prove_resumes_from_records_and_ignores_another_proofs(tmp_path):
    model = tmp_path / "h.npz"
    assert main(["compile", HIST, "--name", "hist", "--vocab", "a,b,c", "--max-len", "8",
                 "-o", str(model)]) == 0
    weights = load_weights(model)
    root = node_of(Path(HIST).read_text(), "hist", HIST)
    whole, _ = proofs.prove(weights, root, tmp_path / "whole", workers=1)
    # an interrupted run: some chunks recorded, then resumed
    task, domain = proofs.proof_task(weights, root)
    records = proofs.Records(tmp_path / "part", _identity(weights, task, domain))
    for chunk in itertools.islice(proofs.chunk_plan(3, 1, 8), 3):
        records.add(proofs.prove_chunk(task, chunk))
    resumed, _ = proofs.prove(weights, root, tmp_path / "part", workers=1)
    assert resumed.resumed == 3
    assert _result(resumed) == _result(whole) and resumed.ok
    # records of another program are not reused
    other = node_of(Path(HIST).read_text() + "\nother = hist + 1;\n", "other", HIST)
    lines: list[str] = []
    again, _ = proofs.prove(weights, other, tmp_path / "part", workers=1, report=lines.append)
    assert again.resumed == 0 and not again.ok and again.disagreement is not None


def _identity(weights, task, domain) -> dict:
    from rasp_sim.compiler.weights import computation_digest

    return {"format": proofs.PROOF_FORMAT, "model": computation_digest(weights),
            "program": proofs.program_digest(task.reference), "domain": domain,
            "chunk_inputs": proofs.CHUNK_INPUTS}


def _result(proof) -> dict:
    return {k: v for k, v in proof.as_metadata().items() if k != "cpu_seconds"}


@pytest.mark.parametrize("argv, message", [
    (["--workers", "2"], "--workers is for an exhaustive proof: add --exhaustive"),
    (["--proof-dir", "d"], "--proof-dir is for an exhaustive proof"),
    (["--exhaustive", "--scheduler", "not an address"], "expected a Dask scheduler address"),
])
def test_proof_options_are_checked(tmp_path, capsys, argv, message):
    code = main(["compile", HIST, "--name", "hist", "--vocab", "a,b", "--max-len", "3",
                 "-o", str(tmp_path / "m.npz"), *argv])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m.npz").exists()


def test_exhaustive_refuses_an_infinite_domain_and_an_unwritable_folder(tmp_path, capsys):
    source = tmp_path / "p.rasp"
    source.write_text("y = tokens_float * 2;\n")
    assert main(["compile", str(source), "--numeric-tokens", "--max-len", "2",
                 "-o", str(tmp_path / "n.npz"), "--exhaustive"]) == 2
    assert "domain is infinite" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["compile", HIST, "--name", "hist", "--vocab", "a,b", "--max-len", "3",
                 "-o", str(tmp_path / "m.npz"), "--exhaustive",
                 "--proof-dir", str(blocker / "sub")]) == 1
    err = capsys.readouterr().err
    assert "cannot write the proof records in" in err and "--proof-dir" in err
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.slow
def test_an_interrupted_proof_on_a_local_cluster_resumes_to_the_same_result(tmp_path):
    """Ctrl-C during a chunked proof on a LocalCluster exits 130 saying how to resume;
    the rerun skips the recorded chunks and records the same proof as an uninterrupted
    run."""
    command = [sys.executable, "-m", "rasp_sim", "compile", HIST, "--name", "hist",
               "--vocab", "a,b,c,d", "--max-len", "10", "--exhaustive", "--workers", "2"]
    records = tmp_path / "m.npz.proof"
    child = subprocess.Popen([*command, "-o", "m.npz"], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    # the first chunk runs in the process (it measures the throughput); a second one
    # recorded means the cluster is proving chunks
    while len(list(records.glob("chunk-*.json"))) < 2 and child.poll() is None:
        assert time.monotonic() < deadline, "no chunk was recorded"
        time.sleep(0.1)
    assert child.poll() is None, child.communicate()
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    assert not (tmp_path / "m.npz").exists()
    assert len(list(records.glob("chunk-*.json"))) >= 2
    resumed = subprocess.run([*command, "-o", "m.npz"], cwd=tmp_path, text=True,
                             capture_output=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "by an earlier run" in resumed.stderr and "Traceback" not in resumed.stderr
    whole = subprocess.run([*command, "-o", "whole.npz"], cwd=tmp_path, text=True,
                           capture_output=True, timeout=600)
    assert whole.returncode == 0, whole.stderr

    def proof_of(name: str) -> dict:
        proof = load_weights(tmp_path / name).metadata[COMPILE_KEY]["proof"]
        return {k: v for k, v in proof.items() if k != "cpu_seconds"}

    assert proof_of("m.npz") == proof_of("whole.npz")
    assert proof_of("m.npz")["ok"] and proof_of("m.npz")["inputs"] == sum(
        4 ** n for n in range(1, 11))
    assert json.loads(json.dumps(proof_of("m.npz")))  # JSON as stored
    assert not records.exists()


def test_an_unwritable_proof_folder_names_both_ways_to_choose_another(tmp_path):
    import rasp_sim

    occupied = tmp_path / "a-file"
    occupied.write_text("not a folder")
    program = rasp_sim.parse("r = aggregate(select(indices, length - indices - 1, ==), "
                             "tokens);")
    with pytest.raises(proofs.ProofError, match="cannot write the proof records in .*"
                       r"--proof-dir, or proof_dir= in the Python API"):
        rasp_sim.compile(program, vocab="ab", max_len=3, exhaustive=True, workers=1,
                         proof_dir=occupied)
    assert occupied.read_text() == "not a folder"
