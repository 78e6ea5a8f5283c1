"""The optional accelerator (rasp_sim/evaluation/accelerate.py): when it loads numba, and
that the engine's results are the same with it and without it (the compiled half skips
where numba is not installed; `pip install -e .[dev]` installs it)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rasp_sim import evaluation
from rasp_sim.evaluation import accelerate, fusion
from rasp_sim.evaluation.attention import row_counts, select
from rasp_sim.evaluation.evaluate import evaluate_batch
from rasp_sim.language.interpreter import Interpreter

sys.path.insert(0, str(Path(__file__).parent))
from heavy_imports import heavy_modules_after  # noqa: E402

HISTOGRAM = "h = selector_width(select(tokens, tokens, ==));\n"


@pytest.fixture
def fresh(monkeypatch):
    """The accelerator as a new process has it: nothing counted, numba not loaded."""
    monkeypatch.setattr(accelerate, "_state", {"counted": 0, "kernels": None, "loaded": False})
    return monkeypatch


@pytest.mark.parametrize("value,mode", [("0", "0"), ("1", "1"), ("auto", "auto"),
                                        (" 1 ", "1"), ("yes", "auto"), (None, "auto")],
                         ids=["off", "on", "auto", "spaced", "other", "unset"])
def test_the_mode_is_read_from_the_environment(monkeypatch, value, mode):
    if value is None:
        monkeypatch.delenv(accelerate.ENVIRONMENT, raising=False)
    else:
        monkeypatch.setenv(accelerate.ENVIRONMENT, value)
    assert accelerate.mode() == mode


def _codes(rows: int) -> np.ndarray:
    return np.random.default_rng(rows).integers(0, 5, size=(rows, 64))


def test_off_and_small_batches_never_load_the_kernels(fresh):
    fresh.setenv(accelerate.ENVIRONMENT, "0")
    big = _codes(accelerate.MIN_ELEMENTS // 64 + 1)
    assert accelerate.equal_counts(big, big, 0, 5) is None
    fresh.setenv(accelerate.ENVIRONMENT, "1")
    small = _codes(2)
    assert accelerate.equal_counts(small, small, 0, 5) is None
    assert accelerate._state["loaded"] is False


def test_auto_loads_the_kernels_only_once_numpy_has_counted_what_loading_costs(fresh):
    fresh.delenv(accelerate.ENVIRONMENT, raising=False)
    fresh.setattr(accelerate, "PAYOFF_ELEMENTS", 3 * accelerate.MIN_ELEMENTS)
    batch = _codes(accelerate.MIN_ELEMENTS // 64)
    assert accelerate.equal_counts(batch, batch, 0, 5) is None
    assert accelerate.equal_counts(batch, batch, 0, 5) is None
    assert accelerate._state == {"counted": 2 * batch.size, "kernels": None, "loaded": False}
    third = accelerate.equal_counts(batch, batch, 0, 5)  # the count reaches the payoff
    assert accelerate._state["loaded"] is True
    if accelerate._state["kernels"] is None:  # numba not installed: NumPy goes on
        assert third is None
    else:
        assert np.array_equal(third, row_counts(select(batch, batch, "==", False)))


def test_without_numba_every_mode_is_the_numpy_path(fresh):
    fresh.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    fresh.delitem(sys.modules, "rasp_sim.evaluation.numba_kernels", raising=False)
    fresh.delattr(evaluation, "numba_kernels", raising=False)  # (bound by an earlier import)
    fresh.setenv(accelerate.ENVIRONMENT, "1")
    interpreter = Interpreter()
    interpreter.run_source(HISTOGRAM, "<accelerate>")
    root = interpreter.lookup("h")
    batch = ["abcab" * 20] * (accelerate.MIN_ELEMENTS // 100 + 1)
    got = evaluate_batch([root], batch)[root]
    assert accelerate._state == {"counted": 0, "kernels": None, "loaded": True}
    assert got.dtype == np.int64 and got[0].tolist() == [40, 40, 20, 40, 40] * 20


def test_a_large_run_in_auto_mode_does_not_import_numba(tmp_path):
    # 2,000 inputs at n = 64: far below the payoff, so numba stays out of the process
    statement = ("import rasp_sim, numba_probe; "
                 "rasp_sim.parse('h = selector_width(select(tokens, tokens, ==));')"
                 ".run(['ab' * 32] * 2000); numba_probe.check()")
    (tmp_path / "numba_probe.py").write_text(
        "import sys\ndef check():\n    assert 'numba' not in sys.modules\n")
    assert heavy_modules_after(statement, tmp_path) == []


# ------------------------------------------------------------- the compiled half (numba)

_ALPHABETS = {"ascii": "abc~", "non-ascii": "aé\U0001f600", "with empty": "ab"}


def _character_column(rng: np.random.Generator, alphabet: str, shape: tuple[int, int],
                      empty: bool) -> np.ndarray:
    column = rng.choice(list(alphabet), size=shape).astype("U1")
    if empty:  # "" elements, which only arrays hold
        column[rng.random(shape) < 0.2] = ""
    return column


_KINDS = st.sampled_from(["ascii", "non-ascii", "with empty", "bool", "int", "wide int"])


def _column(kind: str, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    if kind in _ALPHABETS:
        return _character_column(rng, _ALPHABETS[kind], shape, kind == "with empty")
    if kind == "bool":
        return rng.random(shape) < 0.5
    if kind == "int":
        return rng.integers(-3, 3, size=shape)
    return rng.choice([-2**62, 7, 2**62, 2**40], size=shape)  # ranks, not a short range


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_KINDS, st.booleans(), st.integers(1, 40), st.sampled_from([1, 2, 7, 64, 300]),
       st.integers(0, 2**32 - 1))
def test_the_kernel_gives_the_numpy_paths_counts(kind, same, rows, n, seed):
    pytest.importorskip("numba")
    rng = np.random.default_rng(seed)
    keys = _column(kind, rng, (rows, n))
    queries = keys if same else _column(kind, rng, (rows, n))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accelerate, "MIN_ELEMENTS", 0)  # every batch, however small
        patch.setenv(accelerate.ENVIRONMENT, "0")
        numpy_counts = fusion._equal_width(keys, queries, False)
        patch.setenv(accelerate.ENVIRONMENT, "1")
        compiled = accelerate.equal_counts(*fusion._equality_codes(keys, queries))
        kernel_counts = fusion._equal_width(keys, queries, False)
    assert compiled is not None  # the kernel ran
    assert kernel_counts.dtype == numpy_counts.dtype == np.int64
    assert np.array_equal(kernel_counts, numpy_counts) and np.array_equal(compiled, numpy_counts)


@pytest.mark.parametrize("alphabet", sorted(_ALPHABETS), ids=sorted(_ALPHABETS))
def test_a_histogram_program_is_the_same_accelerated_or_not(monkeypatch, alphabet):
    pytest.importorskip("numba")
    interpreter = Interpreter()
    interpreter.run_source(HISTOGRAM + "s = sort(tokens, tokens);\n", "<accelerate>")
    roots = [interpreter.lookup("h"), interpreter.lookup("s")]
    rng = np.random.default_rng(5)
    letters = alphabet if alphabet != "with empty" else "ab"
    batch = ["".join(rng.choice(list(letters), size=97)) for _ in range(700)]  # 67,900 keys
    results = {}
    for mode in ("0", "1"):
        monkeypatch.setenv(accelerate.ENVIRONMENT, mode)
        results[mode] = evaluate_batch(roots, batch)
    for root in roots:
        off, on = results["0"][root], results["1"][root]
        assert off.dtype == on.dtype and np.array_equal(off, on)
