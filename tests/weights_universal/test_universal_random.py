"""Random (Gaussian) universal transformers: E from the linear system, verified."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.universal.embed import embed
from rasp_sim.compiler.universal.errors import UniversalError
from rasp_sim.compiler.universal.gaussian import build_random, constraint_matrix
from rasp_sim.compiler.universal.paths import constraint_count, target_views
from rasp_sim.compiler.universal.report import size_report
from rasp_sim.compiler.universal.sparse import build_sparse
from rasp_sim.compiler.universal.target import Shape, canonicalise, random_target
from rasp_sim.compiler.universal.verify import verify
from rasp_sim.compiler.weights import AttentionBlock, AttentionHead, weights_equal

from .reference import reference_features

# verify.py states the tolerance: 100 cond(M) u times max|X| and the largest view (the
# scale of the right-hand side), from the backward stability of the SVD solve, with a 15x
# margin over the worst observed ratio. The cap on cond(M) keeps that tolerance from going
# vacuous (100 cond u <= 2.2e-8 of the view scale); these small shapes stay far below it.
CONDITION_CAP = 1e6


def check(ut, target, lengths, seed=0):
    solved = embed(target, ut)
    result = verify(ut, solved, target, lengths=lengths, batch=2, seed=seed,
                    reference=reference_features)
    assert result.passed, (result, solved.condition)
    assert solved.condition <= CONDITION_CAP
    return solved


@st.composite
def configurations(draw):
    residual = draw(st.booleans())
    shape = Shape(dim=draw(st.integers(1, 3)), head_dim=draw(st.integers(1, 2)),
                  out_dim=draw(st.integers(1, 2)), heads=draw(st.integers(1, 2)),
                  layers=draw(st.integers(1, 3)), residual=residual, causal=draw(st.booleans()))
    return shape, (False if residual else draw(st.booleans()))


@settings(max_examples=30, deadline=None)
@given(config=configurations(), seed=st.integers(0, 2**32 - 1), length=st.integers(1, 32))
def test_random_ut_simulates_random_targets(config, seed, length):
    shape, tied = config
    solved = check(build_random(shape, seed, tied), random_target(shape, seed ^ 0x5EED),
                   (length,), seed)
    assert solved.residual <= 100 * solved.condition * np.finfo(float).eps


def test_random_machines_have_an_ordinary_attention_scale_that_E_absorbs():
    # Weights of variance 1/m (1/fan-in) and scores scaled by 1/sqrt(k), as an ordinary
    # random transformer: the embedding solve carries the temperature, so verify stays
    # exact; the same E in the machine without its temperature simulates nothing.
    shape = Shape(3, 2, 2, heads=2, layers=2, causal=True)
    ut = build_random(shape, 9)
    m = ut.width
    assert all(block.scale == pytest.approx(1 / np.sqrt(2)) for block in ut.layers)
    weights = np.concatenate([np.ravel(getattr(head, name)) for block in ut.layers
                              for head in block.heads for name in ("w_q", "w_k", "w_v")])
    assert weights.std() * np.sqrt(m) == pytest.approx(1.0, abs=0.05)  # 4,096+ draws
    target = random_target(shape, 2)
    solved = check(ut, target, (1, 8, 16))
    unscaled = ut.replace(layers=tuple(replace(block, scale=1.0) for block in ut.layers))
    result = verify(unscaled, solved, target, lengths=(8, 16), batch=2, seed=0,
                    reference=reference_features)
    assert not result.passed and result.relative_error > 1e-3


def test_random_weights_depend_on_the_seed_only():
    shape = Shape(2, 2, 2, heads=2, layers=2)
    first = build_random(shape, 11)
    embed(random_target(shape, 1), first)
    assert weights_equal(first, build_random(shape, 11))
    assert not weights_equal(first, build_random(shape, 12))


@pytest.mark.parametrize("heads, layers", [(1, 3), (2, 2)])
def test_m_below_the_constraint_count_is_an_error(heads, layers):
    shape = Shape(2, 2, 2, heads=heads, layers=layers)
    count = constraint_count(shape)
    ut = build_random(shape, 0, m=count - 1)
    with pytest.raises(UniversalError,
                       match=rf"m: the universal transformer has m = {count - 1} .* need m >= {count}"):
        embed(random_target(shape, 0), ut)
    # m = C is enough, and so is anything wider (E is then the minimum-norm solution).
    for m in (count, count + 7):
        check(build_random(shape, 0, m=m), random_target(shape, 0), (1, 6))


def test_a_singular_system_is_an_error_not_a_wrong_embedding():
    """Queries and keys read through the same fixed matrix: columns of M coincide."""
    shape = Shape(2, 2, 2, heads=1, layers=2)
    ut = build_random(shape, 3)
    head = ut.layers[0].heads[0]
    same = AttentionHead(head.w_q, head.w_q, head.w_v)
    broken = ut.replace(layers=(AttentionBlock((same,), residual=False),) + ut.layers[1:])
    with pytest.raises(UniversalError, match=r"singular system: .* rank \d+ < C = 10"):
        embed(random_target(shape, 0), broken)


@pytest.mark.parametrize("out_dim", [1, 2])
def test_attention_matching_needs_c_times_H_to_the_L_dimensions(out_dim):
    """Random universality (docs/universal.md) with c outputs: for d = k = 1 the read-out conditions alone are
    c H^L independent equations on E (one c-vector per path), so m = c H^L - 1 leaves a
    residual for a generic target, whatever the rest of the system. We check the read-out
    block of M directly: its rank is at most m."""
    shape = Shape(1, 1, out_dim, heads=2, layers=3)
    readouts = out_dim * shape.heads ** shape.layers
    ut = build_random(shape, 5, m=readouts - 1)
    readout = constraint_matrix(ut, shape)[:, -readouts:]
    assert np.linalg.matrix_rank(readout) == readouts - 1
    views = np.concatenate(target_views(canonicalise(random_target(shape, 9), shape), shape),
                           axis=1)[:, -readouts:]
    solution, *_ = np.linalg.lstsq(readout.T, views.T, rcond=None)
    assert np.abs(solution.T @ readout - views).max() > 1e-6 * np.abs(views).max()
    # What `build` reports as the bound is this count.
    reference = size_report(build_sparse(shape))["reference"]
    assert reference["attention_matching_lower_bound"] == readouts


def test_the_paper_bound_is_evaluated_at_the_target_width_d():
    # d differs from k and c: the paper states O(HLd) in the target's embedding width d.
    shape = Shape(6, 2, 3, heads=2, layers=2)
    report = size_report(build_sparse(shape))["reference"]
    assert report["paper_stated_H_L_d"] == shape.heads * shape.layers * shape.dim
    assert size_report(build_sparse(Shape(6, 2, 3, heads=1, layers=2)))["reference"][
        "paper_stated_L_d"] == 2 * 6


@pytest.mark.slow
@pytest.mark.parametrize("heads, layers", [(1, 4), (2, 3), (3, 3), (4, 2), (2, 4)])
def test_random_grid(heads, layers):
    shape = Shape(2, 2, 2, heads, layers, causal=True)
    check(build_random(shape, heads * 100 + layers), random_target(shape, 1), (1, 16, 32))
