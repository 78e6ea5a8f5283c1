"""The planned forward's products (compiler/planned_products.py) against plain NumPy."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.planned_products import (RightProduct, distinct_keys, distinct_pairs,
                                               shared_pattern_values)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(0, 40), inner=st.integers(1, 9),
       cols=st.integers(1, 9), ones=st.booleans())
def test_a_matrix_with_one_entry_per_column_is_a_gather_giving_the_dense_numbers(
        seed, rows, inner, cols, ones):
    """The single term x[i] * w[i, j] and exact zeros: bit-equal to the dense product."""
    rng = np.random.default_rng(seed)
    w = np.zeros((inner, cols))
    sources = rng.integers(0, inner, size=cols)
    filled = rng.random(cols) < 0.8  # some columns all zero
    w[sources[filled], np.flatnonzero(filled)] = 1.0 if ones else rng.normal(size=filled.sum())
    x = rng.normal(size=(rows, inner))
    product = RightProduct.of(w)
    assert product.dense is None
    assert np.array_equal(product(x), x @ w)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), inner=st.integers(2, 6), cols=st.integers(1, 6))
def test_a_matrix_with_two_entries_in_a_column_stays_dense(seed, inner, cols):
    rng = np.random.default_rng(seed)
    w = np.zeros((inner, cols))
    w[:2, 0] = rng.normal(size=2) + 3.0
    x = rng.normal(size=(5, inner))
    product = RightProduct.of(w)
    assert product.dense is not None
    np.testing.assert_array_equal(product(x), x @ w)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 7), n=st.integers(1, 8),
       c=st.integers(1, 5))
def test_one_pattern_applied_to_every_input_at_once(seed, batch, n, c):
    """Against one product per input; BLAS may order the sums differently (ulps)."""
    rng = np.random.default_rng(seed)
    pattern = rng.random(size=(n, n))
    values = rng.normal(size=(batch, n, c))
    want = np.stack([pattern @ values[b] for b in range(batch)])
    np.testing.assert_allclose(shared_pattern_values(pattern, values), want, rtol=0, atol=1e-13)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 60), width=st.integers(1, 6),
       levels=st.integers(1, 4), table_rows=st.integers(1, 5))
def test_distinct_pairs_are_numpys_unique_pairs(seed, rows, width, levels, table_rows):
    """Pairs (table row, added vector) drawn from a few values, as a compiled model's
    are: as many distinct pairs as np.unique finds, and each position's pair is its own."""
    rng = np.random.default_rng(seed)
    index = rng.integers(0, table_rows, size=rows)
    out = rng.integers(0, levels, size=(rows, width)).astype(float) * 0.5
    found = distinct_pairs(index, out)
    assert found is not None
    first, inverse = found
    assert np.array_equal(index[first][inverse], index)
    assert np.array_equal(out[first][inverse], out)
    assert len(first) == len(np.unique(np.column_stack([index, out]), axis=0))


def test_pairs_with_equal_keys_but_different_values_are_not_merged(monkeypatch):
    """The key is a product with fixed weights; two different vectors with equal keys
    fail the element-wise check, and nothing is merged."""
    import rasp_sim.compiler.planned_products as products

    monkeypatch.setattr(products, "_row_key_weights", lambda width: np.ones(width))
    out = np.array([[1.0, 2.0], [2.0, 1.0], [1.0, 2.0]])  # keys all 3.0
    assert distinct_pairs(np.zeros(3, dtype=np.int64), out) is None
    first, inverse = distinct_pairs(np.array([0, 1, 0]), out[[0, 0, 0]])
    assert len(first) == 2 and inverse[0] == inverse[2] != inverse[1]


def test_nan_updates_are_never_merged():
    assert distinct_pairs(np.zeros(4, dtype=np.int64), np.array([[np.nan, 1.0]] * 4)) is None


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 20), n=st.integers(1, 40))
def test_maxima_and_sums_over_the_keys_are_numpys_reductions(seed, rows, n):
    """The softmax's reductions over the last axis, key by key for short axes: the same
    maxima, sums within ulps (another order), on either side of the 32-key switch."""
    from rasp_sim.compiler.forward import _last_axis

    values = np.random.default_rng(seed).normal(size=(rows, 3, n))
    assert np.array_equal(_last_axis(np.maximum, values), values.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(_last_axis(np.add, values), values.sum(axis=-1, keepdims=True),
                               rtol=1e-14, atol=1e-14)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 3000), values=st.integers(1, 5000),
       collide=st.booleans())
def test_distinct_keys_group_as_numpys_unique(seed, size, values, collide):
    """Every key grouped with its equals only, one group per distinct key; `collide`
    puts every key in one slot (a zero multiplier), so the rounds and the sorted rest run."""
    import rasp_sim.compiler.planned_products as products

    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**63, size=values, dtype=np.uint64)[rng.integers(0, values, size)]
    multiplier = products._HASH_MULTIPLIER
    try:
        if collide:
            products._HASH_MULTIPLIER = np.uint64(0)
        first, inverse = distinct_keys(keys)
    finally:
        products._HASH_MULTIPLIER = multiplier
    assert np.array_equal(keys[first][inverse], keys)
    assert len(first) == len(np.unique(keys)) == len(set(keys[first].tolist()))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 30), n=st.integers(1, 9),
       queries=st.integers(1, 4), keys=st.integers(1, 4), scale=st.sampled_from([1.0, 1500.0]),
       causal=st.booleans())
def test_a_softmax_from_a_table_of_scores_is_the_softmax_per_input(seed, batch, n, queries,
                                                                   keys, scale, causal):
    """Shifted by the table row's maximum, rows whose own maximum is far below it (the
    hard attention of a scale of 1,500 on scores 0, 0.5, 1) recomputed: against the
    softmax of every input's gathered scores, shifted by its own maximum."""
    from rasp_sim.compiler.forward import _softmax, _table_softmax

    rng = np.random.default_rng(seed)
    table = rng.integers(0, 3, size=(queries, keys)) * 0.5 if scale > 1 \
        else rng.normal(size=(queries, keys))
    query_of = rng.integers(0, queries, size=(batch, n))
    key_of = rng.integers(0, keys, size=(batch, n))
    pairs = (query_of * keys)[:, :, None] + key_of[:, None, :]
    want = _softmax(table.reshape(-1)[pairs][:, None].copy(), scale, causal)[:, 0]
    got = _table_softmax(table, pairs, scale, causal)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
