"""The explicit {0,1} universal transformer simulates random targets exactly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.universal.embed import embed
from rasp_sim.compiler.universal.gaussian import constraint_matrix
from rasp_sim.compiler.universal.paths import constraint_count
from rasp_sim.compiler.universal.sparse import build_sparse
from rasp_sim.compiler.universal.target import Shape, random_target
from rasp_sim.compiler.universal.verify import verify
from rasp_sim.compiler.weights import (AttentionBlock, AttentionHead, SparseMatrix,
                                       load, save, weights_equal)

from .reference import reference_features

# Views are placed, never solved for: the UT does the target's float64 operations with
# exact 0/1 selections in between, so only summation order differs. 1e-12 relative to the
# output scale (verify.py) is the bound; observed errors are ~1e-15.
SPARSE_TOLERANCE = 1e-12


@st.composite
def shapes(draw, max_heads=3, max_layers=3):
    residual = draw(st.booleans())
    return Shape(dim=draw(st.integers(1, 4)), head_dim=draw(st.integers(1, 3)),
                 out_dim=draw(st.integers(1, 3)), heads=draw(st.integers(1, max_heads)),
                 layers=draw(st.integers(1, max_layers)), residual=residual,
                 causal=draw(st.booleans())), (False if residual else draw(st.booleans()))


def simulation_error(ut, target, lengths=(9,), batch=2, seed=0):
    """max |UT(X; E) - T(X)| relative to the output scale (verify.py), T by the reference."""
    result = verify(ut, embed(target, ut), target, lengths=lengths, batch=batch, seed=seed,
                    reference=reference_features)
    return result.relative_error


@settings(max_examples=40, deadline=None)
@given(shape_tied=shapes(), seed=st.integers(0, 2**32 - 1), length=st.integers(1, 32),
       batch=st.integers(1, 2))
def test_sparse_ut_simulates_random_targets(shape_tied, seed, length, batch):
    shape, tied = shape_tied
    ut = build_sparse(shape, tied)
    target = random_target(shape, seed)
    assert simulation_error(ut, target, (length,), batch, seed) <= SPARSE_TOLERANCE


def test_weights_do_not_depend_on_the_target(tmp_path):
    shape = Shape(dim=3, head_dim=2, out_dim=2, heads=2, layers=3, causal=False)
    first = build_sparse(shape)
    embedding_a = embed(random_target(shape, 1), first).matrix
    second = build_sparse(shape)
    embedding_b = embed(random_target(shape, 2), second).matrix
    assert weights_equal(first, second)
    assert not np.array_equal(embedding_a, embedding_b)
    # Embedding a target does not modify the fixed weights either.
    assert weights_equal(first, build_sparse(shape))
    save(first, tmp_path / "ut.npz")
    assert weights_equal(load(tmp_path / "ut.npz"), second)


@pytest.mark.parametrize("tied, residual", [(False, False), (True, False), (False, True)])
def test_every_weight_is_zero_or_one(tied, residual):
    ut = build_sparse(Shape(2, 2, 3, heads=3, layers=3, residual=residual), tied)
    matrices = [ut.unembed] + [m for block in ut.layers for head in block.heads
                               for m in (head.w_q, head.w_k, head.w_v)]
    for matrix in matrices:
        assert isinstance(matrix, SparseMatrix)
        dense = matrix.toarray()  # duplicates would add up to 2 here
        assert set(np.unique(dense)) <= {0.0, 1.0}


def closed_form_m(heads, layers, k, c, layout):
    """docs/universal.md, written out independently of the block table."""
    if layout == "residual":
        return sum(2 * heads * k * (heads + 1) ** q for q in range(layers)) \
            + c * (heads + 1) ** layers
    tree = sum(heads ** j for j in range(layers))  # (H^L - 1)/(H - 1), or L when H = 1
    reads = heads ** layers if layout == "compact" else sum(heads ** j for j in range(layers + 1))
    return 2 * heads * k * tree + c * reads


@pytest.mark.parametrize("heads", [1, 2, 3, 4])
@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("layout", ["compact", "tied", "residual"])
def test_m_matches_the_closed_forms(heads, layers, layout):
    shape = Shape(2, 3, 2, heads, layers, residual=layout == "residual")
    ut = build_sparse(shape, tied=layout == "tied")
    assert ut.width == closed_form_m(heads, layers, 3, 2, layout)
    if layout != "tied":  # the compact and residual layouts are as small as the system
        assert ut.width == constraint_count(shape)


@pytest.mark.parametrize("heads, layers, k, c, tied, compact, residual", [
    (1, 2, 16, 4, 76, 68, 112), (1, 4, 16, 4, 148, 132, 544), (2, 2, 8, 4, 124, 112, 164),
    (2, 3, 8, 4, 284, 256, 524), (4, 2, 8, 4, 404, 384, 484), (4, 3, 8, 4, 1684, 1600, 2484)])
def test_m_matches_the_design_table(heads, layers, k, c, tied, compact, residual):
    """The worked dimensions of docs/universal.md."""
    def m(residual_flag, tied_flag):
        return build_sparse(Shape(1, k, c, heads, layers, residual_flag), tied_flag).width
    assert (m(False, True), m(False, False), m(True, False)) == (tied, compact, residual)


@pytest.mark.parametrize("layers", [1, 2, 5])
def test_single_head_compact_is_a_shift_register(layers):
    k, c = 3, 2
    ut = build_sparse(Shape(2, k, c, 1, layers))
    assert ut.width == 2 * k * layers + c
    for index, block in enumerate(ut.layers):
        head = block.heads[0]
        assert head.w_q.nnz == head.w_k.nnz == k
        # Untied: layer l moves the Q/K chains of the later layers l+1..L-1 one step down;
        # the read-out block stays in place.
        assert head.w_v.nnz == 2 * k * (layers - 1 - index) + c
    assert ut.unembed.nnz == c


def test_tied_layout_shares_weights_across_layers():
    ut = build_sparse(Shape(2, 2, 2, heads=2, layers=3), tied=True)
    first = ut.layers[0]
    for block in ut.layers[1:]:
        for head, head0 in zip(block.heads, first.heads):
            for name in ("w_q", "w_k", "w_v"):
                assert np.array_equal(getattr(head, name).toarray(), getattr(head0, name).toarray())
    # H = 1: R^V moves every block but the three read at stage 0 (docs/universal.md).
    single = build_sparse(Shape(2, 3, 2, heads=1, layers=4), tied=True)
    assert single.layers[0].heads[0].w_v.nnz == single.width - 2 * 3 - 2


@pytest.mark.parametrize("residual", [False, True])
def test_sparse_constraint_matrix_is_a_selection(residual):
    """The sparse UT solves the linear conditions of docs/universal.md by selection: each
    column of M = [R_path R_terminal] is one-hot, and no two columns share a row."""
    shape = Shape(2, 2, 2, heads=2, layers=3, residual=residual)
    matrix = constraint_matrix(build_sparse(shape), shape)
    assert matrix.shape == (constraint_count(shape), constraint_count(shape))
    assert set(np.unique(matrix)) == {0.0, 1.0}
    assert (matrix.sum(axis=0) == 1).all() and (matrix.sum(axis=1) == 1).all()


def test_canonical_form_folds_scale_output_projection_padding_and_input_projection():
    """A target with fewer heads, a smaller head dimension, an explicit W_O, a temperature
    and an input projection is still simulated exactly."""
    rng = np.random.default_rng(7)
    shape = Shape(dim=2, head_dim=3, out_dim=2, heads=2, layers=2, causal=True)
    base = random_target(Shape(4, 2, 2, 1, 2, causal=True), 3)
    layers = tuple(AttentionBlock((AttentionHead(h.w_q, h.w_k, rng.normal(size=(4, 5)) / 3,
                                                 rng.normal(size=(5, 4)) / 3),),
                                  scale=0.3 + index, residual=False)
                   for index, h in enumerate(block.heads[0] for block in base.layers))
    target = base.replace(layers=layers, input_proj=rng.normal(size=(2, 4)))
    for tied in (False, True):
        assert simulation_error(build_sparse(shape, tied), target) <= SPARSE_TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("heads, layers", [(h, l) for h in (1, 2, 3, 4) for l in (1, 2, 3, 4)])
def test_sparse_grid(heads, layers):
    for residual, tied in ((False, False), (False, True), (True, False)):
        shape = Shape(4, 4, 4, heads, layers, residual=residual, causal=layers % 2 == 0)
        ut = build_sparse(shape, tied)
        target = random_target(shape, heads * 10 + layers)
        assert simulation_error(ut, target, (1, 12, 32), batch=1) <= SPARSE_TOLERANCE


def test_residual_labels_name_the_stage_zero_views():
    ut = build_sparse(Shape(1, 1, 1, heads=2, layers=2))
    assert ut.residual_labels == (
        "Q0<>[0]", "K0<>[0]", "Q1<>[0]", "K1<>[0]",         # read by layer 0
        "Q0<0>[0]", "K0<0>[0]", "Q1<0>[0]", "K1<0>[0]",     # layer 1, via head 0 of layer 0
        "Q0<1>[0]", "K0<1>[0]", "Q1<1>[0]", "K1<1>[0]",     # layer 1, via head 1 of layer 0
        "O<0.0>[0]", "O<0.1>[0]", "O<1.0>[0]", "O<1.1>[0]")  # read-out, one per path
    # The labels say what E puts there: "O<1.0>" is V(layer 0, head 1) V(layer 1, head 0) U.
    target = random_target(Shape(1, 1, 1, heads=2, layers=2), 3)
    embedding = embed(target, ut).matrix
    v = [[head.w_v for head in block.heads] for block in target.layers]
    column = ut.residual_labels.index("O<1.0>[0]")
    np.testing.assert_allclose(embedding[:, column], (v[0][1] @ v[1][0] @ target.unembed)[:, 0],
                               rtol=1e-15)
    # V(layer 0, head 0) K(layer 1, head 1), and Q, up to the power of two (inverse for Q)
    # that balances the head's query and key views (embed.balanced): the scores are equal
    second = target.layers[1]
    key = (v[0][0] @ second.heads[1].w_k)[:, 0]
    query = (v[0][0] @ (second.scale * second.heads[1].w_q))[:, 0]
    keys, queries = (embedding[:, ut.residual_labels.index(label)]
                     for label in ("K1<0>[0]", "Q1<0>[0]"))
    factor = keys[0] / key[0]
    assert factor == 2.0 ** round(np.log2(factor))
    np.testing.assert_allclose(keys, factor * key, rtol=1e-15)
    np.testing.assert_allclose(queries, query / factor, rtol=1e-15)
