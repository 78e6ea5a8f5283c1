"""benchmarks/reference_kernels.py: every reference kernel gives exactly the engine's output
(values and dtype) for its program, on random batches of strings of one length, ASCII and
not. The NumPy kernels always run; the numba ones where numba is installed."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rasp_sim.core import graph
from rasp_sim.evaluation.evaluate import evaluate_batch
from rasp_sim.language.interpreter import Interpreter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))  # as when the benchmark runs: beside it
import reference_kernels as reference  # noqa: E402

# the programs as benchmarks/interpreter.py runs them
SOURCES = {
    "sort": ("sorted = sort(tokens, tokens);\n", "sorted"),
    "hist": ((ROOT / "examples" / "histogram.rasp").read_text(), "hist"),
    "reverse": ((ROOT / "examples" / "reverse.rasp").read_text(), "reverse"),
}
NUMBA = reference.numba_kernels()
# the kernels' domain: no NUL, no lone surrogate; ASCII (one-byte codes) and any other
# characters (four-byte codes, some ranges too wide for a small table)
CHARACTERS = st.one_of(
    st.sampled_from("abcdefgh"),
    st.characters(codec="ascii", exclude_characters="\0"),
    st.characters(codec="utf-8", exclude_characters="\0"))  # utf-8: no lone surrogates


def root_of(name: str) -> graph.SOp:
    interpreter = Interpreter()
    source, sop = SOURCES[name]
    interpreter.run_source(source, f"<{name}>")
    return interpreter.lookup(sop)


ROOTS = {name: root_of(name) for name in reference.PROGRAMS}


@st.composite
def batches(draw: st.DrawFn) -> list[str]:
    n = draw(st.integers(1, 70))
    alphabet = draw(st.sampled_from([st.sampled_from("abcdefgh"), CHARACTERS]))
    word = st.text(alphabet, min_size=n, max_size=n)
    return draw(st.lists(word, min_size=1, max_size=8))


def assert_engine_output(name: str, out: np.ndarray, batch: list[str]) -> None:
    expected = evaluate_batch([ROOTS[name]], batch)[ROOTS[name]]
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", reference.PROGRAMS)
@settings(max_examples=60, deadline=None)
@given(batch=batches())
def test_numpy_kernel_equals_engine(name, batch):
    assert_engine_output(name, reference.NUMPY_KERNELS[name](batch), batch)


@pytest.mark.skipif(NUMBA is None, reason="numba is not installed (pip install rasp-sim[bench])")
@pytest.mark.parametrize("name", reference.PROGRAMS)
@settings(max_examples=60, deadline=None)  # the first example compiles
@given(batch=batches())
def test_numba_kernel_equals_engine(name, batch):
    assert NUMBA is not None
    assert_engine_output(name, NUMBA[name](batch), batch)
