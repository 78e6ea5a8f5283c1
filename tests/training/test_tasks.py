"""The task generators against their definitions (docs/universal.md), on samples: the
vectorised generators against the per-sample references in task_reference.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.experiments.errors import ExperimentError
from rasp_sim.experiments.tasks import make_task
from rasp_sim.experiments.tasks import dyck, khop

from . import task_reference as reference


@pytest.fixture(scope="module")
def dyck_task():
    return make_task("dyck1", test_size=500)


@given(st.lists(st.integers(1, 30), min_size=1, max_size=20), st.integers(0, 2**32 - 1))
def test_balanced_strings_are_balanced_with_t_pairs(pairs, seed):
    rows = dyck.balanced_strings(np.array(pairs), 60, np.random.default_rng(seed))
    for row, t in zip(rows, pairs):
        string = row[row != dyck.PAD].tolist()
        assert len(string) == 2 * t and np.all(row[2 * t:] == dyck.PAD)
        assert reference.is_balanced(string)


def test_is_balanced_examples():
    o, c, p = dyck.OPEN, dyck.CLOSE, dyck.PAD
    assert dyck.is_balanced([o, c, o, o, c, c])
    assert not dyck.is_balanced([c, o])          # goes negative, ends at 0
    assert not dyck.is_balanced([o, o, c])
    assert dyck.is_balanced([[o, c, p], [c, o, p], [o, o, c]]).tolist() == [True, False, False]


def test_dyck_rows_have_the_defining_layout(dyck_task):
    rows = dyck_task.train_batch(300, np.random.default_rng(0)).inputs
    assert rows.shape == (300, 63)
    for row in rows:
        query = np.flatnonzero(row == dyck.QUERY)
        assert query.size == 1
        q = int(query[0])
        string = row[:q]
        assert 1 <= q <= 60 and set(string.tolist()) <= {dyck.OPEN, dyck.CLOSE}
        expected = dyck.CLOSE if reference.is_balanced(string.tolist()) else dyck.OPEN
        assert row[q + 1] == expected
        assert np.all(row[q + 2:] == dyck.PAD)


def test_dyck_batch_loss_sits_on_the_query(dyck_task):
    batch = dyck_task.test_set()
    assert np.all(batch.weights.sum(axis=1) == 1)
    q = np.argmax(batch.weights, axis=1)
    rows = np.arange(len(batch))
    assert np.all(batch.inputs[rows, q] == dyck.QUERY)
    assert np.all(batch.targets[rows, q] == batch.inputs[rows, q + 1])


def test_dyck_groups_are_string_lengths_in_buckets_of_ten(dyck_task):
    batch = dyck_task.train_batch(500, np.random.default_rng(3))
    lengths = np.argmax(batch.inputs == dyck.QUERY, axis=1)  # the `?` follows the string
    assert np.all(batch.groups == (lengths + 9) // 10 * 10)
    assert set(np.unique(batch.groups)) == {10, 20, 30, 40, 50, 60}  # lengths 1..60


def test_dyck_mixture_has_both_answers_and_both_sources(dyck_task):
    batch = dyck_task.train_batch(2000, np.random.default_rng(1))
    answers = batch.targets[batch.weights > 0]
    balanced = np.mean(answers == dyck.CLOSE)
    # Balanced answers come mostly from unmutated balanced strings: 2/3 * (1/2 + 1/2 * 1/4)
    # = 0.417 plus mutations that keep balance; a 2000-sample mean is within +-0.05 w.h.p.
    assert 0.38 < balanced < 0.60
    lengths = np.argmax(batch.inputs == dyck.QUERY, axis=1)
    assert lengths.max() > 30 and np.any(lengths % 2 == 1)  # random strings: long and odd


def test_dyck_test_set_is_fixed_by_its_seed():
    a = make_task("dyck1", test_size=50).test_set().inputs
    b = make_task("dyck1", test_size=50).test_set().inputs
    c = make_task("dyck1", test_size=50, test_seed=1).test_set().inputs
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert make_task("dyck1").test_set().inputs.shape == (4000, 63)


def test_dyck_training_stream_holds_out_the_long_test_strings_only():
    task = make_task("dyck1", test_size=4000)
    lengths = dyck.string_lengths(task.test_rows)
    long_test = {row.tobytes() for row in task.test_rows[lengths > dyck.HELD_OUT_ABOVE]}
    short_test = {row.tobytes() for row in task.test_rows[lengths <= dyck.HELD_OUT_ABOVE]}
    batch = task.train_batch(3000, np.random.default_rng(2))
    assert not any(row.tobytes() in long_test for row in batch.inputs)
    # The hold-out has something to hold out, and short test strings are trained on.
    raw = task.sample_rows(3000, np.random.default_rng(2))
    assert any(row.tobytes() in long_test for row in raw)
    assert any(row.tobytes() in short_test for row in batch.inputs)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 16))
def test_khop_targets_match_the_slow_reference(seed, max_hops):
    task = khop.KHop(seq_len=40, max_hops=max_hops, test_size=1)
    batch = task.train_batch(6, np.random.default_rng(seed))
    for inputs, targets, k in zip(batch.inputs, batch.targets, batch.groups):
        assert inputs[0] == k and targets[0] == task.blank_id
        letters = (inputs[1:] - khop.LETTER_BASE).tolist()
        for i, target in enumerate(targets[1:]):
            expected = reference.hop(letters, int(k), i)
            assert target == (task.null_id if expected < 0 else expected + khop.LETTER_BASE)


def test_khop_hops_up_to_16_match_the_reference():
    # Every bit of the binary lifting (k = 0..16 needs bits 0..4) on full-length strings.
    rng = np.random.default_rng(5)
    strings = khop.sample_strings(34, 100, 4, rng)
    counts = np.arange(34) % 17
    hopped = khop.hops(strings, counts, 4)
    expected = [[reference.hop(row.tolist(), int(k), i) for i in range(100)]
                for row, k in zip(strings, counts)]
    assert hopped.tolist() == expected


def test_khop_strings_have_no_equal_neighbours_and_use_all_letters():
    strings = khop.sample_strings(500, 100, 4, np.random.default_rng(3))
    assert np.all(strings[:, 1:] != strings[:, :-1])
    assert set(np.unique(strings)) == {0, 1, 2, 3}


def test_khop_layout_and_hop_counts():
    task = make_task("khop", min_hops=2, max_hops=5, test_size=400)
    batch = task.test_set()
    assert batch.inputs.shape == batch.targets.shape == (400, 99)
    assert set(np.unique(batch.groups)) == {2, 3, 4, 5}
    assert np.all(batch.inputs[:, 0] == batch.groups) and np.all(batch.weights == 1)
    assert batch.inputs.max() < khop.VOCAB and batch.targets.max() < khop.VOCAB
    # hop_1 at i is the letter after the previous occurrence of X_i: a real induction head.
    one = khop.KHop(seq_len=10, min_hops=1, max_hops=1, test_size=1)
    assert reference.hop([0, 1, 0, 2, 1], 1, 4) == 0
    assert khop.hops(np.array([[0, 1, 0, 2, 1]]), np.array([1]), 4).tolist() == [[-1, -1, 1, -1, 0]]
    assert one.seq_len == 9


def test_unknown_task_and_bad_hops_are_clear_errors():
    with pytest.raises(ExperimentError, match="unknown task 'dyck2'; known tasks: dyck1, khop"):
        make_task("dyck2")
    with pytest.raises(ExperimentError, match="max_hops <= 16"):
        make_task("khop", max_hops=17)


def test_majority_baseline_is_the_larger_answer_share(dyck_task):
    from rasp_sim.experiments.tasks.batch import majority_accuracy
    batch = dyck_task.test_set()
    balanced = np.mean([dyck.is_balanced(row[:np.argmax(row == dyck.QUERY)])
                        for row in batch.inputs])
    assert majority_accuracy(batch) == pytest.approx(max(balanced, 1 - balanced))
