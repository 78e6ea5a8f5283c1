"""Smoke test of benchmarks/interpreter.py on tiny batches: rasp-sim's pipeline (RASP source
-> Interpreter -> evaluate_batch) gives the same outputs as tracr's evaluator on tracr's
own programs of the same algorithms, and the original interpreter's driver agrees too
when a checkout is configured. The library's constructions, translated to tracr's RASP
and to the original's language (benchmarks/tracr_translation.py, original_translation.py),
give rasp-sim's values there. No timings are checked.
"""
from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tracr")
SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "interpreter.py"
sys.path.insert(0, str(SCRIPT.parent))  # as when it runs: its translations lie beside it
_spec = importlib.util.spec_from_file_location("benchmark_interpreter", SCRIPT)
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # its dataclasses look their module up there
_spec.loader.exec_module(bench)

from original_translation import NotExpressible, _literal, original_source  # noqa: E402
from tracr.rasp import rasp  # noqa: E402
from tracr_translation import MemoizedEvaluator, to_tracr  # noqa: E402

from rasp_sim.language.interpreter import Interpreter  # noqa: E402

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


def test_float_cli_row_runs_the_real_cli_on_float_layouts_and_agrees():
    row = bench.float_cli_row("matmul 4x4x4", size=30, repeats=1)
    assert row.problem is None
    assert row.inputs == 30 and row.engine_rate > 0
    assert row.line().split()[:3] == ["matmul", "4x4x4", "30"]


def test_reference_rows_time_each_kernel_checked_against_the_engine(roots, monkeypatch):
    mismatches: list[str] = []
    rows = bench.reference_rows(roots, 30, 1, mismatches)
    assert mismatches == []
    assert [row.split(" | ")[:2] for row in rows] == [["| sort", "64"], ["| hist", "64"],
                                                       ["| reverse", "64"]]
    # the engine's ratio, and the accelerated engine's where numba is installed
    accelerated = bench.numba_kernels() is not None
    assert all(row.split(" | ")[-2].endswith("x") for row in rows)
    assert all(row.split(" | ")[-1].endswith("x |" if accelerated else "- |") for row in rows)
    # a kernel giving another program's output is reported, not timed as a floor
    monkeypatch.setitem(bench.NUMPY_KERNELS, "reverse", bench.NUMPY_KERNELS["sort"])
    bench.reference_rows(roots, 30, 1, mismatches)
    assert mismatches == ["reverse n=64 NumPy reference kernel differs"]


# ------------------------------------------------- the constructions in tracr and the original

def _construction(name: str):
    source, n = bench.LIBRARY[name]
    interpreter = Interpreter()
    interpreter.run_source(source, f"<{name}>")
    root = interpreter.lookup("y")
    batch = np.random.default_rng(len(name)).uniform(-1, 1, (2, n))
    return root, batch, np.asarray(bench.evaluate_batch([root], batch)[root].tolist(), dtype=float)


@pytest.mark.parametrize("name", list(bench.LIBRARY))
def test_every_construction_in_tracr_gives_rasp_sims_values(name):
    root, batch, ours = _construction(name)
    expression, evaluator = to_tracr(root), MemoizedEvaluator()
    theirs = [evaluator.evaluate(expression, row) for row in batch.tolist()]
    assert bench._close(ours, theirs)
    assert not bench._close(ours + 1e-6, theirs)  # the check can fail


def test_the_memoized_evaluator_is_tracrs_on_a_shared_graph():
    # softmax 4x4 is 85 nodes, 17,043 as a tree: each evaluator on it, value for value
    root, batch, _ = _construction("softmax 4x4")
    expression = to_tracr(root)
    for row in batch.tolist():
        assert MemoizedEvaluator().evaluate(expression, row) == rasp.evaluate(expression, row)


def test_original_literals_read_back_to_the_same_values():
    for value in (0.1, -0.5, 1e-05, -2.5e-300, 123456789.125, 1e22, -0.0, 3, -7, True, False):
        text = _literal(value)
        assert "e" not in text.lower().replace("true", "").replace("false", "")  # no exponent
        assert eval(text) == value and type(eval(text)) is type(value)  # noqa: S307
    with pytest.raises(NotExpressible, match="no literal for inf"):
        _literal(float("inf"))


def test_an_operation_the_original_lacks_is_refused_by_name():
    interpreter = Interpreter()
    interpreter.run_source("y = log(tokens_float);\n", "<log>")
    with pytest.raises(NotExpressible, match="no `log` map"):
        original_source(interpreter.lookup("y"), [1.0])


def test_library_rows_without_the_original_agree_with_tracr():
    mismatches: list[str] = []
    rows = bench.library_rows(1, 3, 1, None, 1, mismatches)
    assert mismatches == [] and len(rows) == len(bench.LIBRARY)
    assert all(row.count("|") == 9 and row.endswith("x | - |") for row in rows)


@pytest.mark.skipif(not (ORIGINAL and ORIGINAL_PYTHON),
                    reason="set RASP_ORIGINAL and RASP_ORIGINAL_PYTHON to run the original")
@pytest.mark.parametrize("name", list(bench.LIBRARY))
def test_every_construction_in_the_original_gives_rasp_sims_values(name):
    root, batch, ours = _construction(name)
    original = bench.Original(ORIGINAL, ORIGINAL_PYTHON)
    try:
        program = bench.Program(original_source(root, batch[0].tolist()), f"<{name}>", "y")
        assert bench._close(ours, original.run(program, batch.tolist())[0])
    finally:
        original.close()


def test_sort_floor_runs_and_checks_its_kernel(monkeypatch, capsys):
    # benchmarks/sort_floor.py on 40 inputs: it runs, and where numba is installed its
    # kernel's output is checked against NumPy's stable order (exit 1 if they differ).
    import sort_floor

    monkeypatch.setattr(sort_floor, "INPUTS", 40)
    assert sort_floor.main() == 0
    out = capsys.readouterr().out
    assert "floor with NumPy" in out and "DRAM bound" in out
    with pytest.raises(ValueError):
        sort_floor.inputs_checked_and_joined(["ab", "abc"])


def test_per_call_rows_time_the_python_api_checked_against_run_batch(monkeypatch):
    mismatches: list[str] = []
    rows = bench.per_call_rows(20, 4, 1, mismatches)
    assert mismatches == []
    assert [row.split(" | ")[:2] for row in rows] == [["| sort", "64"], ["| hist", "64"],
                                                       ["| reverse", "64"]]
    assert all(row.count("|") == 10 and row.endswith("x |") for row in rows)
    # run_batch giving other values (here: floats for reverse's strings) is reported
    real = bench.rasp_sim.Program.run_batch
    monkeypatch.setattr(bench.rasp_sim.Program, "run_batch",
                        lambda self, *args: np.zeros(real(self, *args).shape))
    bench.per_call_rows(20, 4, 1, mismatches)
    assert "reverse n=64 Program.run vs run_batch: values differ" in mismatches
