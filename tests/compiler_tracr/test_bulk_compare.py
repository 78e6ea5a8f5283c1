"""The proof's bulk comparison (compiler/tracr_backend/bulk_compare.py) against
`agreement.agree` element by element, on a program whose output column mixes types."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from rasp_sim.compiler.tracr_backend.bulk_compare import Encoding, Tally, compare_rows


def _one_hot(chosen: list[list[int]], width: int) -> np.ndarray:
    return np.eye(width)[np.array(chosen)]


def test_a_mixed_column_is_compared_by_value_and_type():
    """True == 1 in Python, but a program's True is not the model's 1, nor None its 0."""
    from rasp_sim.compiler.tracr_backend.bulk_compare import _compare_categorical_objects
    from rasp_sim.compiler.tracr_backend.agreement import agree

    values = (0, 1, True, None)
    encoding = Encoding(vocab=("a",), vocab_ids=np.array([1]), bos=0, numeric=False,
                        output_values=values)
    want = np.array([[1, None, True], [True, 0, None]], dtype=object)
    rows = np.zeros((2, 3), dtype=np.int64)
    for chosen in itertools.product(range(4), repeat=6):
        picked = [list(chosen[:3]), list(chosen[3:])]
        tally = Tally()
        _compare_categorical_objects(want, _one_hot(picked, 4), encoding, rows, tally)
        wrong = [(r, p) for r in range(2) for p in range(3)
                 if not agree(values[picked[r][p]], want[r, p], False)[0]]
        if wrong:
            r, p = wrong[0]
            assert tally.disagreement == (["a"] * 3, p, want[r, p], values[picked[r][p]])
        else:
            assert tally.disagreement is None
        assert tally.output_types == {int, bool, type(None)}


def test_a_column_of_bools_and_ints_proven_and_a_wrong_model_caught(driver):
    """A categorical output mixing False and 1 (an object column): every input up to
    length 4 agrees, and a model whose two output values are swapped is caught at the
    first position `agree` refuses."""
    from rasp_sim.compiler.tracr_backend.proof import proof_task
    from rasp_sim.compiler.tracr_backend.agreement import agree

    from .conftest import node_of

    root = node_of('mixed = (tokens == "a") if tokens == "b" else 1;', "mixed")
    weights = driver.compile_program(root, ["a", "b", "c"], 4, tracr_oracle=False).weights
    task, _ = proof_task(weights, root)
    rows = np.array(list(itertools.product(range(3), repeat=4)))
    tally = Tally()
    compare_rows(task.reference, task.weights, task.encoding, rows, tally)
    assert tally.disagreement is None and tally.compared == len(rows)
    assert tally.output_types == {bool, int}
    values = task.encoding.output_values
    assert len(values) == 2
    swapped = task.weights.replace(unembed=np.asarray(task.weights.unembed)[:, ::-1].copy())
    tally = Tally()
    compare_rows(task.reference, swapped, task.encoding, rows, tally)
    assert tally.disagreement is not None
    tokens, position, program, model = tally.disagreement
    assert not agree(model, program, False)[0]


def test_numbers_of_mixed_types_compared_as_floats_like_agree(driver, library):
    """sorted_unique's numerical column mixes ints and floats (an object column): compared
    as float(b), as `agree` does: no disagreement on every input of length 5, and a model
    whose outputs are scaled by 1.5 is caught at a position `agree` refuses."""
    from rasp_sim.compiler.tracr_backend.proof import proof_task
    from rasp_sim.compiler.tracr_backend.agreement import agree

    root = library("sort.rasp", "sorted_unique")
    vocab = driver.parse_vocab(["0", "1", "2", "3"], driver.tokens_kind(root))
    weights = driver.compile_program(root, vocab, 5, tracr_oracle=False).weights
    task, _ = proof_task(weights, root)
    rows = np.array(list(itertools.product(range(4), repeat=5)))
    tally = Tally()
    compare_rows(task.reference, task.weights, task.encoding, rows, tally)
    assert tally.disagreement is None and tally.compared == len(rows)
    assert tally.output_types == {int, float} and tally.max_numeric_error < 1e-9
    scaled = task.weights.replace(unembed=np.asarray(task.weights.unembed) * 1.5)
    tally = Tally()
    compare_rows(task.reference, scaled, task.encoding, rows, tally)
    assert tally.disagreement is not None
    tokens, position, program, model = tally.disagreement
    assert not agree(model, program, True)[0]
