"""The vectorised Dyck-1 generator draws the distribution of the per-sample definition.

Two-sample chi-square tests of homogeneity (scipy's chi2_contingency) between 6,000
reference samples and 6,000 vectorised ones, on: the string length, the answer, the number
of `(`, the final, lowest and highest running depth, the token at each of the 63 positions,
and, for the balanced-string recursion alone, the whole string at t = 6 pairs (132 strings).
The family of tests holds a significance level of alpha = 1e-3 overall (Bonferroni: each
test at 1e-3 / number of tests). Seeds are fixed, so the outcome is repeatable; the
negative controls check that the same tests reject a generator with a wrong wrap
probability or flip rule, so they have the power to see a real difference.
"""
from __future__ import annotations

import numpy as np
import pytest

from rasp_sim.experiments.tasks import dyck

from . import task_reference as reference

stats = pytest.importorskip("scipy.stats")

ALPHA = 1e-3
SAMPLES = 6000
MAX_LEN = 30


def homogeneity_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """p-value that the categorical samples a and b come from one distribution."""
    values, index = np.unique(np.concatenate([a, b]), return_inverse=True)
    counts = np.stack([np.bincount(index[:len(a)], minlength=len(values)),
                       np.bincount(index[len(a):], minlength=len(values))])
    # Pool the rare categories: the chi-square approximation needs expected counts >= 5.
    rare = counts.sum(axis=0) < 20
    if rare.any():
        counts = np.column_stack([counts[:, ~rare], counts[:, rare].sum(axis=1)])
    counts = counts[:, counts.sum(axis=0) > 0]
    return 1.0 if counts.shape[1] < 2 else float(stats.chi2_contingency(counts).pvalue)


def row_statistics(rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per-sample summaries of encoded rows (string, `?`, answer, PAD)."""
    length = np.argmax(rows == dyck.QUERY, axis=1)
    string = np.where(np.arange(rows.shape[1]) < length[:, None], rows, dyck.PAD)
    depth = np.cumsum((string == dyck.OPEN).astype(int) - (string == dyck.CLOSE), axis=1)
    out = {"length": length, "answer": rows[np.arange(len(rows)), length + 1],
           "opens": (string == dyck.OPEN).sum(axis=1), "final depth": depth[:, -1],
           "lowest depth": depth.min(axis=1), "highest depth": depth.max(axis=1)}
    out.update({f"token at {i}": rows[:, i] for i in range(rows.shape[1])})
    return out


def rejected(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> list[str]:
    """The statistics whose distributions differ at family-wise level ALPHA."""
    pvalues = {name: homogeneity_pvalue(a[name], b[name]) for name in a}
    return [name for name, p in pvalues.items() if p < ALPHA / len(pvalues)]


@pytest.fixture(scope="module")
def reference_statistics():
    return row_statistics(reference.dyck_rows(SAMPLES, MAX_LEN, np.random.default_rng(101)))


def vectorised_statistics() -> dict[str, np.ndarray]:
    task = dyck.Dyck1(MAX_LEN, test_size=1)
    return row_statistics(task.sample_rows(SAMPLES, np.random.default_rng(202)))


def test_vectorised_samples_have_the_reference_distribution(reference_statistics):
    assert rejected(reference_statistics, vectorised_statistics()) == []


@pytest.mark.parametrize("name, value", [("WRAP", 0.4), ("DOUBLE_FLIPS", 0.0)])
def test_the_tests_reject_a_wrong_generator(reference_statistics, monkeypatch, name, value):
    monkeypatch.setattr(dyck, name, value)
    assert rejected(reference_statistics, vectorised_statistics()) != []


def test_balanced_recursion_draws_each_string_as_often_as_the_reference():
    pairs = 6
    rng = np.random.default_rng(303)
    ref = np.array([reference.balanced_string(pairs, rng) for _ in range(SAMPLES)])
    ours = dyck.balanced_strings(np.full(SAMPLES, pairs), 2 * pairs, np.random.default_rng(404))
    keys = {tuple(row) for row in np.concatenate([ref, ours])}
    assert len(keys) == 132  # every balanced string of 6 pairs occurs: Catalan(6)
    code = np.array([1 << i for i in range(2 * pairs)])  # a string -> one integer category
    p = homogeneity_pvalue((ref == dyck.OPEN) @ code, (ours == dyck.OPEN) @ code)
    assert p >= ALPHA


def stream_statistics(rows: np.ndarray) -> dict[str, np.ndarray]:
    """What the training stream must keep from the task distribution: the string length,
    and the answer of the short strings (where a hold-out of test strings bites hardest)."""
    stats_ = row_statistics(rows)
    short = stats_["length"] <= dyck.HELD_OUT_ABOVE
    return {"length": stats_["length"], "short answer": stats_["answer"][short]}


@pytest.fixture(scope="module")
def task_and_distribution():
    task = dyck.Dyck1(MAX_LEN)  # the full 4,000-row test set, as the experiments hold out
    return task, stream_statistics(task.sample_rows(SAMPLES, np.random.default_rng(505)))


def test_training_stream_has_the_task_length_distribution(task_and_distribution):
    task, distribution = task_and_distribution
    stream = task.train_batch(SAMPLES, np.random.default_rng(606)).inputs
    assert rejected(distribution, stream_statistics(stream)) == []


def test_the_stream_test_rejects_a_stream_that_drops_every_test_string(task_and_distribution):
    # The protocol before: reject every test sample. Short strings, where the test set holds
    # most of the possible strings, become rare and mostly unbalanced: the test must see it.
    task, distribution = task_and_distribution
    test = {row.tobytes() for row in task.test_rows}
    rows = task.sample_rows(3 * SAMPLES, np.random.default_rng(606))
    fresh = rows[[row.tobytes() not in test for row in rows]][:SAMPLES]
    assert len(fresh) == SAMPLES
    assert set(rejected(distribution, stream_statistics(fresh))) == {"length", "short answer"}
