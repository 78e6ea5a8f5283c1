"""Property tests of programs/linalg.rasp against NumPy (docs/constructions.md)."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.base.errors import RaspError

from lib_refs import (
    assert_close, assert_tail_zero, cofactor_ref, dims, draw_matrix, frac_det_inv, kinds, layout,
    run1, seeds, softmax_base_rows, softmax_rows,
)

FAST = settings(max_examples=40, deadline=None)


# ------------------------------------------------------------------ transpose (bit-exact)

@FAST
@given(h=st.integers(1, 3), r=dims, c=dims, kind=kinds, seed=seeds, pad=st.integers(0, 3))
def test_transpose_blocks_is_bit_exact(h, r, c, kind, seed, pad):
    blocks = [draw_matrix(kind, (r, c), seed + b) for b in range(h)]
    out = run1(f"transpose_blocks(tokens_float, {h}, {r}, {c})", layout(*blocks, length=h * r * c + pad))
    # a gather copies one key: the very same float, so equality is exact
    assert out[: h * r * c] == layout(*[b.T for b in blocks])
    assert_tail_zero(out, h * r * c)


def test_transpose_keeps_element_types():
    assert run1("transpose(tokens_int, 2, 3)", [1, 2, 3, 4, 5, 6]) == [1, 4, 2, 5, 3, 6]


# ------------------------------------------------------------------ matmul

@FAST
@given(r=dims, k=dims, c=dims, kind=kinds, seed=seeds)
def test_matmul_matches_numpy(r, k, c, kind, seed):
    check_matmul(r, k, c, kind, seed)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(r=st.integers(1, 8), k=st.integers(1, 8), c=st.integers(1, 8), kind=kinds, seed=seeds)
def test_matmul_sweep(r, k, c, kind, seed):
    check_matmul(r, k, c, kind, seed)


def check_matmul(r, k, c, kind, seed):
    a = draw_matrix(kind, (r, k), seed)
    b = draw_matrix(kind, (k, c), seed + 1)
    length = max(k * (r + c), r * c)
    for expr in ("matmul", "matmul_per_entry"):
        out = run1(f"{expr}(tokens_float, {r}, {k}, {c})", layout(a, b, length=length))
        # the atol scale is max (|A||B|): an entry that cancels large terms is only
        # determined to a few ulps of those terms, on either side
        assert_close(out[: r * c], (a @ b).ravel(), scale=float((np.abs(a) @ np.abs(b)).max()))
        assert_tail_zero(out, r * c)


@pytest.mark.parametrize("r,k,c", [(3, 2, 4), (2, 5, 3), (4, 4, 4), (1, 3, 1), (4, 1, 4), (3, 2, 3)])
def test_matmul_shapes_of_the_design_and_the_stride_bug(r, k, c):
    # (3,2,3) is the shape the authors' stride bug gets wrong (docs/constructions.md)
    a = np.arange(r * k, dtype=float).reshape(r, k) - 2
    b = np.arange(k * c, dtype=float).reshape(k, c) * 3 - 5
    out = run1(f"matmul(tokens_float, {r}, {k}, {c})", layout(a, b, length=max(k * (r + c), r * c)))
    assert out[: r * c] == (a @ b).ravel().tolist()  # small integers: exact


def test_matmul_authors_trace():
    # the product recorded in the authors' compiled trace (docs/constructions.md)
    out = run1("matmul(tokens_float, 3, 3, 3)", [7, 9, 12, 4, 5, 21, 34, 72, 23, 10, 3, 6, 1, 64, 30, 73, 17, 18])
    assert out[:9] == [955, 801, 528, 1578, 689, 552, 2091, 5101, 2778]


@FAST
@given(r=dims, c=dims, op=st.sampled_from(["+", "-", "*", "/"]), kind=kinds, seed=seeds)
def test_elementwise_matches_numpy(r, c, op, kind, seed):
    a = draw_matrix(kind, (r, c), seed)
    b = draw_matrix("normal", (r, c), seed + 1) + 5.0  # nonzero divisors
    ref = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
    out = run1(f'elementwise(tokens_float, {r}, {c}, "{op}")', layout(a, b))
    assert out[: r * c] == ref.ravel().tolist()  # one IEEE operation each side: bit-equal
    assert_tail_zero(out, r * c)


def test_relu():
    assert run1("relu(tokens_float)", [-1.5, 0, 2.5]) == [0, 0, 2.5]


# ------------------------------------------------------------------ softmax

@FAST
@given(r=dims, c=dims, kind=kinds, seed=seeds, pad=st.integers(0, 2))
def test_softmax_matches_numpy(r, c, kind, seed, pad):
    s = draw_matrix(kind, (r, c), seed)
    out = run1(f"softmax(tokens_float, {r}, {c})", layout(s, length=r * c + pad))
    assert_close(out[: r * c], softmax_rows(s).ravel())
    assert_tail_zero(out, r * c)


@FAST
@given(r=dims, c=dims, seed=seeds)
def test_unshifted_softmax_matches_numpy_in_range(r, c, seed):
    s = draw_matrix("uniform", (r, c), seed) * 30
    out = run1(f"softmax_unshifted(tokens_float, {r}, {c})", layout(s))
    assert_close(out, softmax_rows(s).ravel())


def test_shifted_softmax_survives_what_overflows_unshifted():
    out = run1("softmax(tokens_float, 1, 4)", [1000, 999, 0, -5])
    assert_close(out, softmax_rows(np.array([[1000.0, 999, 0, -5]])).ravel())


@pytest.mark.parametrize("base", [2.718, 2.73])
def test_fixed_base_softmax_is_a_temperature_error(base):
    # the authors' b^x softmax equals softmax(x ln b) (docs/constructions.md), to 1e-14
    s = draw_matrix("normal", (3, 3), 7)
    out = run1(f"softmax_base(tokens_float, 3, 3, {base})", layout(s))
    assert_close(out, softmax_base_rows(s, base).ravel())
    assert np.abs(np.array(out) - softmax_rows(s * np.log(base)).ravel()).max() < 1e-14
    assert np.abs(np.array(out) - softmax_rows(s).ravel()).max() > 1e-6


def test_masked_softmax_ignores_masked_columns():
    s = draw_matrix("normal", (2, 4), 3)
    out = np.array(run1("softmax_masked(tokens_float, 2, 4, 3)", layout(s))).reshape(2, 4)
    assert_close(out[:, :3].ravel(), softmax_rows(s[:, :3]).ravel())
    assert (out[:, 3] == 0).all()


# ------------------------------------------------------------------ determinants, inverses

@FAST
@given(kind=kinds, seed=seeds)
def test_3x3_cofactor_det_inverse(kind, seed):
    m = draw_matrix(kind, (3, 3), seed)
    scale = float(np.abs(m).max()) ** 2 or 1.0
    assert_close(run1("cofactor3(tokens_float)", layout(m)), cofactor_ref(m).ravel(), scale=2 * scale * 1e2)
    det = np.linalg.det(m)
    out = run1("det3(tokens_float)", layout(m, length=9))
    assert_close(out, [det] * 9, scale=float(np.abs(m).max()) ** 3 * 1e2)
    if abs(det) > 1e-8 * (np.abs(m).max() ** 3 or 1):
        inv = run1("inverse3(tokens_float)", layout(m))
        cond = np.linalg.cond(m)
        ref = np.linalg.inv(m)
        # inverses are accurate only to cond(M) * eps (docs/constructions.md)
        assert np.abs(np.array(inv) - ref.ravel()).max() <= cond * 1e-14 * np.abs(ref).max()


def test_3x3_authors_example():
    m = [7, 8, 12, 10, 11, 9, 2, 4, 21]
    assert run1("cofactor3(tokens_int)", m) == [195, -192, 18, -120, 123, -12, -60, 57, -3]
    assert run1("det3(tokens_int)", m) == [45] * 9
    assert_close(run1("inverse3(tokens_float)", m), np.linalg.inv(np.array(m, float).reshape(3, 3)).ravel())


@FAST
@given(n=st.integers(1, 6), kind=kinds, seed=seeds)
def test_gauss_jordan_inverse_and_det(n, kind, seed):
    check_gauss_jordan(n, kind, seed)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 9), kind=kinds, seed=seeds)
def test_gauss_jordan_sweep(n, kind, seed):
    check_gauss_jordan(n, kind, seed)


def check_gauss_jordan(n, kind, seed):
    m = draw_matrix(kind, (n, n), seed)
    cond = np.linalg.cond(m)
    if not np.isfinite(cond) or cond > 1e10:
        return  # (near-)singular: covered by the exact-mode tests
    inv = np.array(run1(f"inverse(tokens_float, {n})", layout(m)))
    ref = np.linalg.inv(m)
    assert np.abs(inv - ref.ravel()).max() <= cond * 1e-14 * np.abs(ref).max() * n
    # the exact determinant of the float matrix: NumPy's own det goes through exp(log|det|)
    # and is off by ~|log det| ulps for large magnitudes
    exact_det = frac_det_inv(m.tolist())[0]
    if abs(exact_det) > sys.float_info.max:  # beyond float64: an overflow error, not inf
        with pytest.raises(RaspError, match="overflow"):
            run1(f"det(tokens_float, {n})", layout(m))
        return
    det = run1(f"det(tokens_float, {n})", layout(m))
    ref_det = float(exact_det)
    assert abs(det[0] - ref_det) <= cond * 1e-14 * abs(ref_det) * n
    assert len(set(det)) == 1  # broadcast


def test_gauss_jordan_pivots_where_plain_elimination_would_divide_by_zero():
    assert run1("inverse(tokens_float, 2)", [0, 1, 1, 0]) == [0, 1, 1, 0]
    assert run1("det(tokens_float, 2)", [0, 1, 1, 0]) == [-1, -1, -1, -1]
    perm = np.eye(4)[[2, 0, 3, 1]]
    assert run1("det(tokens_float, 4)", layout(perm))[0] == np.linalg.det(perm)


def test_softmax_authors_trace():
    # the softmax in the authors' compiled trace (docs/constructions.md), 3 decimals
    out = run1("softmax(tokens_float, 3, 3)", [-12, 2, 3, 5, 20, -60, 74, -63, 12])
    assert [round(v, 3) for v in out] == [0.0, 0.269, 0.731, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
