"""Property tests of programs/attention.rasp (U, multi-head U, encoder) against NumPy
(docs/constructions.md: rtol 1e-12 and atol 1e-14 * max|ref|)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.base.errors import RaspError

from lib_refs import (
    assert_close, assert_tail_zero, attention_ref, draw_matrix, encoder_ref, layout,
    layer_norm_ref, mha_ref, run1, seeds,
)

FAST = settings(max_examples=30, deadline=None)
small = st.integers(1, 4)
# U's kinds: large magnitudes are left out on purpose. Scores of size 1e20 turn softmax
# into an argmax whose winner changes with the last bit of a score, so no tolerance on P
# is meaningful there; softmax itself is tested with large values in test_linalg.
u_kinds = st.sampled_from(["normal", "uniform", "integers", "ties", "zeros", "negative"])


def single_head_input(n, d, dk, dv, kind, seed):
    x = draw_matrix(kind, (n, d), seed)
    wq, wk = draw_matrix(kind, (d, dk), seed + 1), draw_matrix(kind, (d, dk), seed + 2)
    wv = draw_matrix(kind, (d, dv), seed + 3)
    length = max(n * d + d * (2 * dk + dv), n * n, n * dk, n * dv)
    return (x, wq, wk, wv), layout(x, wq, wk, wv, length=length)


@settings(max_examples=12, deadline=None)  # the slow sweep below draws 150
@given(n=small, d=small, dk=small, dv=small, scaled=st.booleans(), kind=u_kinds, seed=seeds)
def test_single_head_u(n, d, dk, dv, scaled, kind, seed):
    check_single_head_u(n, d, dk, dv, scaled, kind, seed)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 6), d=st.integers(1, 6), dk=st.integers(1, 6), dv=st.integers(1, 6),
       scaled=st.booleans(), kind=u_kinds, seed=seeds)
def test_single_head_u_sweep(n, d, dk, dv, scaled, kind, seed):
    check_single_head_u(n, d, dk, dv, scaled, kind, seed)


def check_single_head_u(n, d, dk, dv, scaled, kind, seed):
    (x, wq, wk, wv), inp = single_head_input(n, d, dk, dv, kind, seed)
    tau_text, tau = (f"1 / sqrt({dk})", 1 / np.sqrt(dk)) if scaled else ("1", 1.0)
    ref = attention_ref(x, wq, wk, wv, tau).ravel()
    out = run1(f"attention(tokens_float, {n}, {d}, {dk}, {dv}, {tau_text})", inp)
    assert_close(out[: n * dv], ref)
    assert_tail_zero(out, n * dv)
    unshifted = f"attention_unshifted(tokens_float, {n}, {d}, {dk}, {dv}, {tau_text})"
    scores = tau * (x @ wq) @ (x @ wk).T
    if scores.max() > 709.79:  # exp overflows: an error
        with pytest.raises(RaspError, match="out of range"):
            run1(unshifted, inp)
    elif scores.max(axis=1).min() < -745.2:  # a whole row underflows to 0: an error
        with pytest.raises(RaspError, match="underflowed"):
            run1(unshifted, inp)
    elif scores.max() < 700 and scores.max(axis=1).min() > -700:  # no subnormal sums
        assert_close(run1(unshifted, inp)[: n * dv], ref)


@FAST
@given(n=small, d=small, dk=small, dv=small, kind=u_kinds, seed=seeds)
def test_linear_attention(n, d, dk, dv, kind, seed):
    (x, wq, wk, wv), inp = single_head_input(n, d, dk, dv, kind, seed)
    ref = attention_ref(x, wq, wk, wv, 0.5, norm=lambda s: s).ravel()
    out = run1(f"attention_linear(tokens_float, {n}, {d}, {dk}, {dv}, 0.5)", inp)
    mags = attention_ref(np.abs(x), np.abs(wq), np.abs(wk), np.abs(wv), 0.5, norm=lambda s: s)
    assert_close(out[: n * dv], ref, scale=float(mags.max()))  # cancellation: see matmul


@FAST
@given(n=small, d=small, kind=u_kinds, seed=seeds)
def test_authors_xav_layout(n, d, kind, seed):
    x = draw_matrix(kind, (n, d), seed)
    a, v = draw_matrix(kind, (d, d), seed + 1), draw_matrix(kind, (d, d), seed + 2)
    inp = layout(x, a, v, length=max(n * d + 2 * d * d, n * n))
    from lib_refs import softmax_rows
    ref = (softmax_rows((x @ a) @ x.T) @ (x @ v)).ravel()
    out = run1(f"attention_xav(tokens_float, {n}, {d}, 1, softmax)", inp)
    assert_close(out[: n * d], ref)


def mha_input(n, d, dk, dv, h, kind, seed, dff=0):
    x = draw_matrix(kind, (n, d), seed)
    heads = [tuple(draw_matrix(kind, s, seed + 10 * g + i)
                   for i, s in enumerate([(d, dk), (d, dk), (d, dv)])) for g in range(h)]
    wo = draw_matrix(kind, (h * dv, d), seed + 5)
    blocks = [x] + [m for hd in heads for m in hd] + [wo]
    ffn = ()
    if dff:
        ffn = (draw_matrix(kind, (d, dff), seed + 6), draw_matrix(kind, (dff,), seed + 7),
               draw_matrix(kind, (dff, d), seed + 8), draw_matrix(kind, (d,), seed + 9))
    length = max(sum(np.size(b) for b in blocks + list(ffn)), n * n, n * dk, n * d, n * dff)
    return x, heads, wo, ffn, layout(*blocks, *ffn, length=length)


@FAST
@given(n=small, d=small, dk=small, dv=small, h=st.integers(1, 3), kind=u_kinds, seed=seeds)
def test_multi_head_u(n, d, dk, dv, h, kind, seed):
    x, heads, wo, _, inp = mha_input(n, d, dk, dv, h, kind, seed)
    ref = mha_ref(x, heads, wo, 1 / np.sqrt(dk)).ravel()
    out = run1(f"mha(tokens_float, {n}, {d}, {dk}, {dv}, {h}, 1 / sqrt({dk}))", inp)
    assert_close(out[: n * d], ref)
    assert_tail_zero(out, n * d)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), d=st.integers(1, 3), dk=st.integers(1, 3), dv=st.integers(1, 3),
       h=st.integers(1, 2), dff=st.integers(1, 4), ln=st.sampled_from(["none", "post", "pre"]),
       kind=st.sampled_from(["normal", "uniform", "integers"]), seed=seeds)
def test_encoder_layer(n, d, dk, dv, h, dff, ln, kind, seed):
    x, heads, wo, (w1, b1, w2, b2), inp = mha_input(n, d, dk, dv, h, kind, seed, dff=dff)
    ref = encoder_ref(x, heads, wo, w1, b1, w2, b2, 1 / np.sqrt(dk), ln).ravel()
    out = run1(f'encoder(tokens_float, {n}, {d}, {dk}, {dv}, {h}, {dff}, 1 / sqrt({dk}), "{ln}")', inp)
    # LayerNorm divides by sqrt(var + eps): near-constant rows amplify rounding by up to
    # 1/sqrt(eps) ~ 316, so the absolute part is scaled by that for LN variants
    amplify = 1.0 if ln == "none" else 1 / np.sqrt(1e-5)
    assert_close(out[: n * d], ref, scale=float(np.abs(ref).max()) * amplify)
    assert_tail_zero(out, n * d)


@pytest.mark.parametrize("n,d", [(1, 3), (3, 2), (2, 5)])
def test_layer_norm(n, d):
    z = draw_matrix("normal", (n, d), n * d)
    out = run1(f"layer_norm(tokens_float, {n}, {d}, 0.00001)", layout(z, length=n * d + 2))
    assert_close(out[: n * d], layer_norm_ref(z, 1e-5).ravel())
    assert_tail_zero(out, n * d)
