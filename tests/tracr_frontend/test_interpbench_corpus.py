"""InterpBench's tracr programs, converted by from_tracr, against tracr's `rasp.evaluate` on
InterpBench's own domain (its lengths, BOS not counted): the whole domain where it has at
most 100,000 inputs, else 10,000 seeded random inputs plus structured ones. Then compiled
by rasp-sim (causal where InterpBench compiles it causal) and validated.

The corpus is third-party code and not part of the project: give the folder holding its
`circuits_benchmark` package in RASP_SIM_INTERPBENCH (an InterpBench checkout works);
without it these tests are skipped, as the differential tests against the original
interpreter are without theirs."""
from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("tracr")
from tracr.rasp import rasp  # noqa: E402

from rasp_sim.tracr_frontend import from_tracr  # noqa: E402
from rasp_sim.tracr_frontend.agreement import compare, domain  # noqa: E402

CORPUS = os.environ.get("RASP_SIM_INTERPBENCH")
CASES = sorted((int(n) for n in re.findall(r"case_(\d+)\.py", " ".join(
    p.name for p in Path(CORPUS).glob("circuits_benchmark/benchmark/cases/case_*.py"))))
    if CORPUS else [])

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CORPUS, reason="RASP_SIM_INTERPBENCH is not set")]


def _case(number: int):
    if CORPUS not in sys.path:
        sys.path.insert(0, CORPUS)
    module = importlib.import_module(f"circuits_benchmark.benchmark.cases.case_{number}")
    return getattr(module, f"Case{number}")()


@pytest.mark.parametrize("number", CASES)
def test_case_agrees_with_rasp_evaluate_and_compiles(number: int) -> None:
    import rasp_sim

    case = _case(number)
    sop, vocab = case.get_program(), sorted(case.get_vocab(), key=repr)
    min_len, max_len = case.get_min_seq_len() - 1, case.get_max_seq_len() - 1
    program = from_tracr(sop, vocab, max_len)
    inputs, whole = domain(vocab, min_len, max_len, samples=10_000, seed=number)
    assert whole or len(inputs) >= 10_000
    result = compare(lambda x: rasp.evaluate(sop, x), program, inputs)
    assert result.ok, result.disagreements
    assert result.positions > 0
    model = rasp_sim.compile(program, vocab=vocab, max_len=max_len, min_len=min_len,
                             causal=case.supports_causal_masking())
    assert model.validated
