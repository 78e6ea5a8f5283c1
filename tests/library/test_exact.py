"""Exact mode: on integer and rational inputs the library's linear algebra and U without
softmax equal exact rational arithmetic (fractions.Fraction) with zero error."""
from __future__ import annotations

import functools
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

import rasp_sim
from rasp_sim.base.errors import RaspError
from rasp_sim import testing

from lib_refs import flat, frac_det_inv, frac_matmul, frac_transpose, run1

FAST = settings(max_examples=30, deadline=None)
small = st.integers(1, 4)
rationals = st.one_of(st.integers(-9, 9), st.fractions(-5, 5, max_denominator=12))


def matrices(r, c):
    return st.lists(st.lists(rationals, min_size=c, max_size=c), min_size=r, max_size=r)


def exact(expr: str, values: list) -> list:
    # Every token is a Fraction: with a mix of int and Fraction tokens the evaluator (not
    # the library) currently divides gathered ints in float (reported to the integrator).
    return run1(expr, [Fraction(v) for v in values], exact=True)


@FAST
@given(data=st.data(), r=small, c=small)
def test_transpose_exact(data, r, c):
    m = data.draw(matrices(r, c))
    assert exact(f"transpose(tokens_asis, {r}, {c})", flat(m)) == flat(frac_transpose(m))


@functools.lru_cache(maxsize=None)
def exact_matmul(r: int, k: int, c: int) -> rasp_sim.Program:
    return rasp_sim.parse(f'load "linalg"; product = matmul(tokens_asis, {r}, {k}, {c});',
                          exact=True)


@FAST
@given(data=st.data(), r=small, k=small, c=small)
def test_matmul_exact(data, r, k, c):
    # Through rasp_sim.testing, as a user would test their own program (docs/python.md).
    # Every token a Fraction, as exact() gives them; the reference multiplies NumPy object
    # arrays of Fractions, so both sides are exact and must be equal.
    length = max(k * (r + c), r * c)
    fractions = rationals.map(Fraction)
    x = data.draw(testing.concat(testing.matrix(r, k, elements=fractions),
                                 testing.matrix(k, c, elements=fractions),
                                 length=length, pad=Fraction(0)))

    def product(x):
        a, b = x.parts
        return list((a @ b).ravel()) + [0] * (length - r * c)

    testing.assert_matches(exact_matmul(r, k, c), product, [x], exact=True)


@FAST
@given(data=st.data(), n=st.integers(1, 5))
def test_det_and_inverse_exact(data, n):
    m = data.draw(matrices(n, n))
    det, inv = frac_det_inv(m)
    if inv is None:
        with pytest.raises(RaspError, match="singular"):
            exact(f"inverse(tokens_asis, {n})", flat(m))
        with pytest.raises(RaspError, match="singular"):
            exact(f"det(tokens_asis, {n})", flat(m))
        return
    assert exact(f"inverse(tokens_asis, {n})", flat(m)) == flat(inv)
    assert exact(f"det(tokens_asis, {n})", flat(m)) == [det] * (n * n)
    if n == 3:
        assert exact("det3(tokens_asis)", flat(m)) == [det] * 9
        assert exact("inverse3(tokens_asis)", flat(m)) == flat(inv)


@pytest.mark.parametrize("m", [[[1, 2], [2, 4]], [[0, 0], [0, 0]], [[1, 2, 3], [4, 5, 6], [7, 8, 9]]])
def test_singular_matrices_are_errors(m):
    n = len(m)
    with pytest.raises(RaspError, match="singular"):
        exact(f"inverse(tokens_asis, {n})", flat(m))
    if n == 3:
        with pytest.raises(RaspError, match="singular"):
            exact("inverse3(tokens_asis)", flat(m))


@FAST
@given(data=st.data(), n=small, d=small, dk=small, dv=small, tau=st.sampled_from(["1", "0.5"]))
def test_u_without_softmax_exact(data, n, d, dk, dv, tau):
    x, wq, wk, wv = (data.draw(matrices(*s)) for s in [(n, d), (d, dk), (d, dk), (d, dv)])
    t = Fraction(tau)
    s = [[t * v for v in row] for row in frac_matmul(frac_matmul(x, wq), frac_transpose(frac_matmul(x, wk)))]
    ref = frac_matmul(s, frac_matmul(x, wv))
    values = flat(x) + flat(wq) + flat(wk) + flat(wv)
    values += [0] * (max(n * n, n * dk, n * dv) - len(values))
    out = exact(f"attention_linear(tokens_asis, {n}, {d}, {dk}, {dv}, {tau})", values)
    assert out[: n * dv] == flat(ref)
    assert all(v == 0 for v in out[n * dv:])


@settings(max_examples=15, deadline=None)
@given(data=st.data(), n=st.integers(1, 3), d=st.integers(1, 3), h=st.integers(1, 2))
def test_multi_head_without_softmax_exact(data, n, d, h):
    x = data.draw(matrices(n, d))
    heads = [[data.draw(matrices(d, d)) for _ in range(3)] for _ in range(h)]
    wo = data.draw(matrices(h * d, d))
    concat = [[] for _ in range(n)]
    for q, k, v in heads:
        s = frac_matmul(frac_matmul(x, q), frac_transpose(frac_matmul(x, k)))
        for i, row in enumerate(frac_matmul(s, frac_matmul(x, v))):
            concat[i] += row
    ref = frac_matmul(concat, wo)
    values = flat(x) + [v for hd in heads for m in hd for v in flat(m)] + flat(wo)
    values += [0] * max(0, n * n - len(values))
    out = exact(f"mha_with(tokens_asis, {n}, {d}, {d}, {d}, {h}, 1, identity)", values)
    assert out[: n * d] == flat(ref)
