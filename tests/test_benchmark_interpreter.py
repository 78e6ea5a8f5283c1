"""Smoke test of benchmarks/interpreter.py on tiny batches: rasp-sim's pipeline (RASP source
-> Interpreter -> evaluate_batch) gives the same outputs as tracr's evaluator on tracr's
own programs of the same algorithms, and the original interpreter's driver agrees too
when a checkout is configured. No timings are checked.
"""
from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tracr")
SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "interpreter.py"
_spec = importlib.util.spec_from_file_location("benchmark_interpreter", SCRIPT)
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # its dataclasses look their module up there
_spec.loader.exec_module(bench)

ORIGINAL = os.environ.get("RASP_ORIGINAL")
ORIGINAL_PYTHON = os.environ.get("RASP_ORIGINAL_PYTHON")


@pytest.fixture(scope="module")
def roots():
    return bench.rasp_sim_roots(bench.programs())[0]


@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_rasp_sim_pipeline_matches_tracr(roots, n):
    batch = bench.random_batch(random.Random(n), n, 25)
    theirs = bench.tracr_programs()
    assert set(roots) == set(theirs) >= {"sort", "hist", "reverse"}
    for name, root in roots.items():
        assert bench.rasp_sim_outputs(root, batch) == bench.tracr_outputs(theirs[name], batch), name


def test_not_a_checkout_is_refused_clearly(tmp_path):
    with pytest.raises(bench.OriginalUnavailable, match="is not a checkout of tech-srl/RASP"):
        bench.Original(str(tmp_path), sys.executable)


def test_benchmark_exits_2_with_a_message_when_the_original_is_missing(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--original", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "cannot run the original interpreter" in result.stderr
    assert "no RASP_support/REPL.py" in result.stderr


@pytest.mark.skipif(not (ORIGINAL and ORIGINAL_PYTHON),
                    reason="set RASP_ORIGINAL and RASP_ORIGINAL_PYTHON to run the original")
def test_original_matches_rasp_sim(roots):
    original = bench.Original(ORIGINAL, ORIGINAL_PYTHON)
    try:
        for n in (1, 5, 16):
            batch = bench.random_batch(random.Random(n), n, 10)
            for name, program in bench.programs().items():
                outputs, _ = original.run(program, batch)
                assert outputs == bench.rasp_sim_outputs(roots[name], batch), (name, n)
    finally:
        original.close()


def test_cli_row_runs_the_real_cli_and_agrees():
    # The CLI in a subprocess on a tiny batch: its outputs equal the engine's and tracr's.
    batch = bench.random_int_batch(random.Random(5), 9, 20)
    row = bench.cli_row(batch, sample_size=5, repeats=1)
    assert row.problem is None
    assert row.line().split()[:3] == ["sort", "9", "20"]
    assert 0 < bench.cli_startup_seconds(random.Random(6), repeats=1)
