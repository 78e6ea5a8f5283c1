"""The closed-form sizes of budget.py and paths.py against the constructions themselves,
and the memory estimates against measured peaks."""
from __future__ import annotations

import tracemalloc
from itertools import product

import pytest

from rasp_sim.compiler.universal import budget
from rasp_sim.compiler.universal.gaussian import build_random
from rasp_sim.compiler.universal.paths import (constraint_count, constraint_total, constraints,
                                               terminal_width)
from rasp_sim.compiler.universal.report import size_report
from rasp_sim.compiler.universal.sparse import build_sparse
from rasp_sim.compiler.universal.target import Shape
from rasp_sim.compiler.weights import save
from rasp_sim.base.errors import RaspResourceError

SHAPES = [(h, l, residual, tied) for h, l, residual, tied
          in product((1, 2, 3), (1, 2, 3), (False, True), (False, True)) if not (residual and tied)]


@pytest.mark.parametrize("heads, layers, residual, tied", SHAPES)
def test_closed_forms_count_what_is_built(heads, layers, residual, tied):
    shape = Shape(2, 3, 4, heads, layers, residual)
    pairs = constraints(shape)
    assert constraint_total(shape) == len(pairs)
    assert constraint_count(shape) == sum(terminal_width(t, shape) for t, _ in pairs)
    ut = build_sparse(shape, tied)
    assert budget.sparse_width(shape, tied) == ut.width
    assert budget.value_nonzeros(shape, tied) == sum(h.w_v.nnz for b in ut.layers for h in b.heads)


def _peak(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("heads, layers, dim, residual, tied, random", [
    (2, 6, 4, False, False, False), (3, 4, 8, True, False, False), (1, 30, 2, False, True, False),
    (2, 4, 4, False, False, True), (2, 3, 8, True, False, True)])
def test_build_estimate_covers_the_measured_peak(tmp_path, heads, layers, dim, residual, tied,
                                                 random):
    shape = Shape(dim, dim, dim, heads, layers, residual)
    m = constraint_count(shape) if random else None

    def work():
        ut = build_random(shape, 0, tied, m) if random else build_sparse(shape, tied)
        size_report(ut)
        save(ut, tmp_path / "ut.npz")

    peak = _peak(work)
    estimate = budget.build_bytes(shape, tied, m)
    assert peak <= estimate <= 4 * peak + budget.FIXED


def test_astronomic_shapes_are_refused_without_counting():
    with pytest.raises(RaspResourceError, match=r"the machine has 2\^65 \(about 2\^65\) attention "
                       "paths per read-out"):
        budget.check_not_astronomic(Shape(1, 1, 1, 2, 65), "the machine")
    budget.check_not_astronomic(Shape(1, 1, 1, 2, 64), "the machine")
    budget.check_not_astronomic(Shape(1, 1, 1, 1, 10**12), "the machine")  # H = 1: linear
