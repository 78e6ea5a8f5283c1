"""benchmarks/interpbench.py's machinery on tracr's own library programs (the InterpBench
corpus itself is run by tests/tracr_frontend/test_interpbench_corpus.py where its path is
given): both compilers measured, both models checked against rasp.evaluate, the rasp-sim
model proven, and the table and summary printed. No timings are checked."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("tracr")
pytest.importorskip("jax")
from tracr.compiler import lib  # noqa: E402
from tracr.rasp import rasp  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "interpbench.py"
_spec = importlib.util.spec_from_file_location("benchmark_interpbench", SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench
_spec.loader.exec_module(bench)


def _cases() -> list:
    return [
        bench.Case("reverse", lib.make_reverse(rasp.tokens), ["a", "b", "c"], 1, 4, False),
        bench.Case("frac_prevs", lib.make_frac_prevs(rasp.tokens == "a"), ["a", "b"], 1, 5,
                   True),
        bench.Case("shift_by", lib.shift_by(1, rasp.tokens), ["a", "b", "c"], 2, 4, True),
        bench.Case("sort_unique", lib.make_sort_unique(rasp.tokens, rasp.tokens), [1, 2, 3],
                   1, 4, False),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c.name)
def test_both_compilers_are_measured_and_checked(case) -> None:
    row = bench.measure(case, whole=100_000, samples=50, seed=0, proof_limit=1_000,
                        workers=1)
    assert row.domain == "whole"
    for side in (row.tracr, row.rasp_sim):
        assert side.compiled, side.error
        assert side.layers >= 1 and side.width > 0 and side.parameters > 0
        assert side.checked > 0
    assert row.rasp_sim.wrong == 0, row.rasp_sim.example
    assert row.rasp_sim.validation.startswith("exhaustive")
    assert "inputs, lengths" in row.rasp_sim.proof
    text = bench.markdown_row(row)
    assert text.startswith(f"| {case.name} |") and text.count("|") == 14


def test_a_wrong_model_is_counted_with_an_example() -> None:
    side = bench.Side()
    inputs = [["a"], ["b"], ["a", "b"]]
    expected = [[1], [2.0], None]  # tracr raised on the third: not compared
    bench.score(side, inputs, expected, [[1], [2.5]], bench.TRACR_TOLERANCE)
    assert (side.checked, side.wrong) == (2, 1)
    assert "['b']" in side.example and side.max_numeric_error == pytest.approx(0.25)


def test_the_summary_counts_cases() -> None:
    good = bench.Row("a", 2, "1-3", False, "whole",
                     bench.Side(compiled=True, layers=2, parameters=100, checked=5),
                     bench.Side(compiled=True, layers=2, parameters=50, checked=5))
    wrong = bench.Row("b", 2, "1-3", False, "whole",
                      bench.Side(compiled=True, layers=1, parameters=100, checked=5, wrong=1),
                      bench.Side(compiled=False, error="refused"))
    lines = bench.summary([good, wrong])
    assert "tracr compiles 2, rasp-sim 1" in lines[0]
    assert lines[1].endswith(": 1 cases") and lines[2].endswith(": 0 cases")
    assert "['b']" in lines[3] and "median 2.00x" in lines[5]
    assert "cases above 1e-6: 0" in lines[-1]
