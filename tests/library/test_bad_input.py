"""Bad input to the library gives a clear RaspError with a source location, never a
NumPy warning, inf or NaN: shapes inconsistent with the input length, non-integer and
empty shapes, non-numeric tokens, singular matrices and overflow."""
from __future__ import annotations

import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from rasp_sim.base.errors import RaspError, RaspProgramError

from lib_refs import run1

SHORT = [
    # (expression, input, what the message names)
    ("matmul(tokens_float, 2, 3, 2)", [1.0] * 11, "matmul: the input is too short for these shapes (it needs 12"),
    ("matmul(tokens_float, 4, 1, 4)", [1.0] * 8, "it needs 16 positions"),  # C does not fit
    ("transpose(tokens_float, 3, 2)", [1.0] * 4, "transpose: the input is too short"),
    ("elementwise(tokens_float, 2, 2, \"+\")", [1.0] * 7, "elementwise: the input is too short"),
    ("softmax(tokens_float, 2, 3)", [1.0] * 5, "softmax: the input is too short"),
    ("det3(tokens_float)", [1.0] * 8, "det3: the input is too short"),
    ("inverse(tokens_float, 3)", [2, 1, 0, 1, 3, 1], "gauss_jordan: the input is too short"),
    ("inverse(tokens_float, 3)", [2, 1, 0, 1, 3, 1, 5, 7], "gauss_jordan: the input is too short"),
    ("attention(tokens_float, 3, 2, 2, 2, 1)", [0.5] * 17, "attention: the input is too short for these shapes (it needs 18"),
    ("attention(tokens_float, 4, 1, 1, 1, 1)", [0.5] * 10, "it needs 16 positions"),  # no room for the scores
    ("mha(tokens_float, 2, 2, 2, 2, 2, 1)", [0.5] * 30, "mha: the input is too short"),
]


def error_of(expr: str, inp: list, **options) -> RaspError:
    with pytest.raises(RaspError) as info:
        run1(expr, inp, **options)
    return info.value


def assert_at_the_users_call(error: RaspError, expr: str) -> None:
    """The library's own error (`assert`), reported at the user's call of the library
    function (library.build binds `library_result = expr;` in the file "<expr>"), with
    the library's lines as notes."""
    assert isinstance(error, RaspProgramError)
    assert error.span is not None and error.span.file == f"<{expr}>"
    assert error.span.column == len("library_result = ") + 1
    assert error.notes and all(n.startswith("  note: from ") and ".rasp:" in n for n in error.notes)
    assert error.format().startswith(f"<{expr}>:1:18: error: ")


@pytest.mark.parametrize("expr,inp,text", SHORT, ids=[s[0] for s in SHORT])
def test_input_too_short_for_the_shapes(expr, inp, text):
    error = error_of(expr, inp)
    assert text in error.message
    assert_at_the_users_call(error, expr)


@pytest.mark.parametrize("shape", ["2.5", "0", "-1", '"a"'])
def test_bad_shape_parameters(shape):
    expr = f"matmul(tokens_float, 2, {shape}, 2)"
    error = error_of(expr, [1.0] * 8)
    assert error.message == "matmul: k must be an integer from 1 to 4096"
    assert_at_the_users_call(error, expr)


def test_non_numeric_tokens():
    error = error_of("matmul(tokens_float, 1, 2, 1)", ["a", 1, 2, 3])
    assert "tokens_float of 'a'" in error.message and "could not convert" in error.message


@pytest.mark.parametrize("expr,inp", [
    ("inverse3(tokens_float)", [1, 2, 3, 4, 5, 6, 7, 8, 9]),
    ("inverse(tokens_float, 2)", [1, 2, 2, 4]),
    ("det(tokens_float, 3)", [0] * 9),
])
def test_singular_matrix(expr, inp):
    error = error_of(expr, inp)
    assert "the matrix is singular" in error.message
    assert_at_the_users_call(error, expr)


@pytest.mark.parametrize("expr,inp,text", [
    ("matmul(tokens_float, 1, 2, 1)", [1e200, 1e200, 1e200, 1e200], "matmul: result is not finite (overflow)"),
    ("softmax_unshifted(tokens_float, 1, 2)", [1000, 1], "numerical result out of range in exp"),
    ("attention_unshifted(tokens_float, 1, 1, 1, 1, 1)", [40, 40, 1, 1], "numerical result out of range in exp"),
    ('elementwise(tokens_float, 1, 2, "/")', [1, 2, 0, 1], "division by zero"),
])
def test_overflow_and_division_by_zero(expr, inp, text):
    error = error_of(expr, inp)
    assert text in error.message
    assert error.span is not None


def test_shifted_softmax_does_not_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run1("softmax(tokens_float, 1, 3)", [1e300, -1e300, 5.0])
    assert out == [1.0, 0.0, 0.0]


def test_overflow_raises_no_numpy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RaspError):
            run1("matmul(tokens_float, 1, 2, 1)", [1e200, 1e200, 1e200, 1e200])


EPS = 2.0**-52


def rank_deficient(n: int, seed: int) -> np.ndarray:
    """A float matrix of rank n - 1 in exact arithmetic up to the rounding of its products
    (its last row a combination of the others): singular to working precision."""
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, n))
    m[-1] = rng.normal(size=n - 1) @ m[:-1]
    return m


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(4))
def test_float_singular_matrices_are_errors(n, seed):
    m = rank_deficient(n, seed)
    assert np.linalg.matrix_rank(m) < n  # NumPy agrees it is singular to working precision
    for expr in (f"inverse(tokens_float, {n})", f"det(tokens_float, {n})"):
        error = error_of(expr, m.ravel().tolist())
        assert "gauss_jordan: the matrix is singular (to working precision: a pivot |p| <= n eps sum |M_ij|)" in error.message
        assert_at_the_users_call(error, expr)
    if n == 3:
        error = error_of("inverse3(tokens_float)", m.ravel().tolist())
        assert "inverse3: the matrix is singular (|det| is within its rounding error bound)" in error.message


def test_float_singularity_threshold_is_n_eps_sum_of_magnitudes():
    # diag(1, delta): the second pivot is delta, the threshold 2 eps (1 + delta)
    threshold = 2 * EPS * (1 + 4e-16)
    above, below = threshold * 1.01, threshold * 0.99
    assert run1("inverse(tokens_float, 2)", [1.0, 0.0, 0.0, above]) == [1.0, 0.0, 0.0, 1 / above]
    error = error_of("inverse(tokens_float, 2)", [1.0, 0.0, 0.0, below])
    assert "the matrix is singular (to working precision" in error.message


def test_exact_mode_keeps_the_exact_zero_test():
    tiny = Fraction(1, 10**40)
    assert run1("inverse(tokens_asis, 2)", [Fraction(1), Fraction(0), Fraction(0), tiny], exact=True) == [1, 0, 0, 10**40]
    error = error_of("inverse(tokens_asis, 2)", [Fraction(v) for v in (1, 2, 2, 4)], exact=True)
    assert "the matrix is singular (no nonzero pivot in a column)" in error.message


def test_the_documented_singular_example_is_a_located_error(capsys, monkeypatch):
    from rasp_sim.cli import main

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert main(["run", "examples/inverse.rasp", "--input", "[1, 2, 3, 4, 5, 6, 7, 8, 9]"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(
        "examples/inverse.rasp:8:9: error: gauss_jordan: the matrix is singular (to working precision"
    )
    assert lines[1] == "    m_inv = inverse(tokens_float, 3);"
    assert lines[3].startswith("  note: from ") and "linalg.rasp" in lines[3]
