"""NumPy references, input layouts, value strategies and tolerances for the RASP library
tests (docs/constructions.md). The references are written from the mathematical
definitions, independently of the RASP programs."""
from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np
from hypothesis import strategies as st

from rasp_sim.language import library

# ------------------------------------------------------------------ tolerances

# docs/constructions.md: products, softmax, U and the encoder agree with NumPy to
# rtol 1e-12 plus atol 1e-14 * max|ref|. Both sides round every product and sum once, in
# different orders (NumPy: BLAS/pairwise; RASP: left to right), so the difference is a
# few ulps of the largest term: far below these bounds for the sizes tested (<= 16).
RTOL = 1e-12
ATOL_SCALE = 1e-14


def assert_close(out: Sequence, ref: np.ndarray, scale: float | None = None) -> None:
    """|out - ref| <= RTOL*|ref| + ATOL_SCALE*scale elementwise; scale defaults to
    max|ref| (pass a larger one where the reference itself cancels large terms)."""
    out = np.asarray(out, dtype=float)
    ref = np.asarray(ref, dtype=float)
    assert out.shape == ref.shape
    if scale is None:
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    bound = RTOL * np.abs(ref) + ATOL_SCALE * scale
    err = np.abs(out - ref)
    assert np.all(err <= bound), f"max error {err.max():.3g} exceeds the bound; worst at {err.argmax()}"


def assert_tail_zero(out: Sequence, start: int) -> None:
    """Positions at and after `start` hold 0 (results are masked, docs/constructions.md)."""
    assert all(v == 0 for v in list(out)[start:])


# ------------------------------------------------------------------ values

KINDS = ("normal", "uniform", "integers", "large", "ties", "zeros", "negative")


def draw_matrix(kind: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A matrix of the given kind: the adversarial kinds are large magnitudes, ties (few
    distinct values), many zeros and all-negative entries."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.normal(size=shape)
    if kind == "uniform":
        return rng.uniform(-3, 3, size=shape)
    if kind == "integers":
        return rng.integers(-9, 10, size=shape).astype(float)
    if kind == "large":
        return rng.normal(size=shape) * 10.0 ** rng.integers(3, 60)
    if kind == "ties":
        return rng.choice([-1.5, 0.0, 2.0], size=shape)
    if kind == "zeros":
        return rng.normal(size=shape) * (rng.uniform(size=shape) < 0.3)
    if kind == "negative":
        return -np.abs(rng.normal(size=shape)) * 5
    raise ValueError(kind)


kinds = st.sampled_from(KINDS)
seeds = st.integers(0, 2**32 - 1)
dims = st.integers(1, 6)


def layout(*blocks: np.ndarray, length: int = 0) -> list[float]:
    """Blocks flattened row-major and concatenated, zero-padded to `length`."""
    flat = np.concatenate([np.asarray(b, dtype=float).ravel() for b in blocks])
    pad = max(0, length - flat.size)
    return np.concatenate([flat, np.zeros(pad)]).tolist()


# ------------------------------------------------------------------ references


def softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_base_rows(s: np.ndarray, base: float) -> np.ndarray:
    e = np.power(base, s)
    return e / e.sum(axis=1, keepdims=True)


def attention_ref(x, wq, wk, wv, tau, norm=softmax_rows):
    return norm(tau * (x @ wq) @ (x @ wk).T) @ (x @ wv)


def mha_ref(x, heads, wo, tau):
    return np.concatenate([attention_ref(x, q, k, v, tau) for q, k, v in heads], axis=1) @ wo


def layer_norm_ref(z, eps):
    mu = z.mean(axis=1, keepdims=True)
    var = ((z - mu) ** 2).mean(axis=1, keepdims=True)
    return (z - mu) / np.sqrt(var + eps)


def encoder_ref(x, heads, wo, w1, b1, w2, b2, tau, ln, eps=1e-5):
    ffn = lambda z: np.maximum(z @ w1 + b1, 0) @ w2 + b2  # noqa: E731
    att = lambda z: mha_ref(z, heads, wo, tau)  # noqa: E731
    if ln == "none":
        z = x + att(x)
        return z + ffn(z)
    if ln == "post":
        z = layer_norm_ref(x + att(x), eps)
        return layer_norm_ref(z + ffn(z), eps)
    z = x + att(layer_norm_ref(x, eps))
    return z + ffn(layer_norm_ref(z, eps))


def cofactor_ref(m: np.ndarray) -> np.ndarray:
    n = m.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1))
                      for j in range(n)] for i in range(n)])


# ------------------------------------------------------------------ exact references


def frac_matmul(a, b):
    return [[sum((a[i][t] * b[t][j] for t in range(len(b))), Fraction(0))
             for j in range(len(b[0]))] for i in range(len(a))]


def frac_transpose(a):
    return [list(row) for row in zip(*a)]


def frac_det_inv(m):
    """(det, inverse or None) by exact Gauss-Jordan over Fractions."""
    n = len(m)
    a = [[Fraction(v) for v in row] + [Fraction(int(i == j)) for j in range(n)]
         for i, row in enumerate(m)]
    det = Fraction(1)
    for k in range(n):
        p = next((r for r in range(k, n) if a[r][k] != 0), None)
        if p is None:
            return Fraction(0), None
        if p != k:
            a[k], a[p] = a[p], a[k]
            det = -det
        det *= a[k][k]
        pivot = a[k][k]
        a[k] = [v / pivot for v in a[k]]
        for r in range(n):
            if r != k and a[r][k] != 0:
                f = a[r][k]
                a[r] = [v - f * w for v, w in zip(a[r], a[k])]
    return det, [row[n:] for row in a]


def flat(rows) -> list:
    return [v for row in rows for v in row]


# ------------------------------------------------------------------ calling RASP


def run1(expr: str, inp: list, **options) -> list:
    """The library expression's value on one input."""
    return library.run(expr, [inp], **options)[0]
