"""The planned forward's products (compiler/planned_products.py) against plain NumPy."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from rasp_sim.compiler.planned_products import (RightProduct, RowSharing, distinct_rows,
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
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(0, 60), width=st.integers(1, 6),
       levels=st.integers(1, 4))
def test_distinct_rows_are_numpys_unique_rows(seed, rows, width, levels):
    """Rows drawn from a few values (as a compiled model's residual rows are): the distinct
    rows gathered back are the rows, and there are as many as np.unique finds; None where
    more than half are distinct."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels, size=(rows, width)).astype(float) * 0.5
    found = distinct_rows(x)
    unique = np.unique(x, axis=0) if rows else x
    if rows < 2 or 2 * len(unique) > rows:
        assert found is None
        return
    assert found is not None
    distinct, inverse = found
    assert np.array_equal(distinct[inverse], x)
    assert len(distinct) == len(unique)


def test_rows_with_equal_keys_but_different_values_are_not_merged(monkeypatch):
    """The key is a product with fixed weights; two different rows with equal keys fail
    the element-wise check, and the rows are not shared."""
    import rasp_sim.compiler.planned_products as products

    monkeypatch.setattr(products, "_row_key_weights", lambda width: np.ones(width))
    x = np.array([[1.0, 2.0], [2.0, 1.0], [1.0, 2.0], [2.0, 1.0]])  # keys all 3.0
    assert distinct_rows(x) is None
    assert distinct_rows(np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])) is not None


def test_nan_rows_are_never_shared():
    x = np.array([[np.nan, 1.0]] * 4)
    assert distinct_rows(x) is None


def test_row_sharing_backs_off_after_misses_and_looks_again():
    sharing = RowSharing()
    distinct = np.arange(8.0).reshape(8, 1)
    repeated = np.zeros((8, 1))
    looked = [sharing.distinct(distinct) for _ in range(4)]  # miss, skip, miss, skip, skip
    assert looked == [None] * 4 and sharing.backoff == 4
    while sharing.skip:
        assert sharing.distinct(repeated) is None
    assert sharing.distinct(repeated) is not None and sharing.backoff == 1
