"""Smoke test of the numeric part of benchmarks/compiled.py on tiny batches: the jitted JAX
forward it times agrees with the NumPy forward, and the table prints. No timings are checked."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tracr")
pytest.importorskip("jax")
SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "compiled.py"
_spec = importlib.util.spec_from_file_location("benchmark_compiled", SCRIPT)
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench
_spec.loader.exec_module(bench)


def test_numeric_numpy_and_jax_agree(capsys):
    rows = [r for r in bench.NUMERIC_ROWS if r[0] in bench.QUICK_NUMERIC]
    differences = bench.numeric_forward_speed(rows, batch=4)
    assert set(differences) == set(bench.QUICK_NUMERIC)
    assert all(d <= 1e-9 for d in differences.values()), differences
    table = capsys.readouterr().out
    assert all(f"| {name} |" in table for name in bench.QUICK_NUMERIC)


def test_numeric_inputs_start_with_bos():
    features = bench.numeric_inputs(3, 5)
    assert features.shape == (3, 6, 1)
    assert np.all(features[:, 0] == 0.0) and np.all(features[:, 1:] != 0.0)
