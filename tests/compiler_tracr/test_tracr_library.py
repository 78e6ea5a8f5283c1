"""The classic programs compile and validate exhaustively (the README table's rows)."""
from __future__ import annotations

import pytest

pytest.importorskip("tracr")

# (file, name, vocab, max_len): every row of the README's compile table.
CLASSIC = [
    ("classic.rasp", "reverse", "a,b,c", 5),
    ("classic.rasp", "hist", "a,b,c", 5),
    ("classic.rasp", "most_freq", "a,b,c", 5),
    ("classic.rasp", "hist2", "a,b,c", 5),
    ("dyck.rasp", "dyck1", "(,)", 8),
    ("numbers.rasp", "sorted", "0,1,2,3", 5),
    ("numbers.rasp", "parity", "0,1", 8),
    ("numbers.rasp", "match2", "-2,-1,0,1,2", 5),
    ("numbers.rasp", "scaled", "0,1", 6),
]


@pytest.mark.slow
@pytest.mark.parametrize("file, name, vocab, max_len", CLASSIC)
def test_classic_program_compiles_and_validates_exhaustively(driver, library, file, name,
                                                             vocab, max_len):
    root = library(file, name)
    result = driver.compile_program(root, driver.parse_vocab(vocab.split(","),
                                                             driver.tokens_kind(root)), max_len)
    assert result.report.mode == "exhaustive"
    assert result.report.ok, result.report.disagreement.describe()
    assert result.report.undefined == 0


def test_sort_of_integers_compiles(driver, library):
    root = library("numbers.rasp", "sorted")
    result = driver.compile_program(root, [0, 1, 2], 3)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend import run_weights
    assert run_weights(result.weights, [[2, 0, 1]]) == [[0.0, 1.0, 2.0]]
