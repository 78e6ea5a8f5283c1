"""Numeric-token models (continuous.py): the library's linear algebra and attention as
weights, checked against NumPy on random real inputs.

Tolerance: |model - NumPy| <= 1e-9 * max(1, max|NumPy|) per output. Every block is exact up
to one rounding per product and sum (ReGLU units, gathers whose leaked weights underflow
to 0, softmax computed by the forward pass itself), so a model differs from NumPy by a few
ulps times the operations on a path (observed <= 1e-14 relative); 1e-9 leaves a margin of
about 10^5 and is far below what a wrong coefficient, mask or lost term would give."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("tracr")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "library"))

from lib_refs import attention_ref, encoder_ref, layout, mha_ref, softmax_rows  # noqa: E402

from rasp_sim.compiler.tracr_backend.checks import Unsupported  # noqa: E402
from rasp_sim.compiler.tracr_backend.continuous import NumericDomain  # noqa: E402
from rasp_sim.compiler.tracr_backend.runtime import run_weights  # noqa: E402
from rasp_sim.compiled.model import Model  # noqa: E402
from rasp_sim.testing import assert_matches, concat, matrix  # noqa: E402

TOLERANCE = 1e-9


def compiled(driver, library_node, name, length, samples=200):
    root = library_node(name)
    result = driver.compile_program(root, [], length, tracr_oracle=False, samples=samples,
                                    numeric=NumericDomain(length, length, -1000, 1000))
    assert result.report.ok, result.report.disagreement and result.report.disagreement.describe()
    return result


@pytest.fixture(scope="module")
def numeric_node(library):
    return lambda name: library("numeric.rasp", name)


def close(got, want):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    error = np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want))))
    assert error <= TOLERANCE, f"relative error {error:.3g}"
    return error


def test_transpose_is_bit_exact(driver, numeric_node):
    result = compiled(driver, numeric_node, "transpose_2x3", 6)
    assert result.weights.metadata["tracr_compile"]["layers"] == 1  # = rasp-sim analyse
    rng = np.random.default_rng(1)
    for _ in range(5):
        a = rng.normal(size=(2, 3))
        assert run_weights(result.weights, [a.ravel().tolist()])[0] == a.T.ravel().tolist()


MATMULS = {"matmul_2x3x2": (2, 3, 2, 12), "matmul_3x3x3": (3, 3, 3, 18)}


@pytest.fixture(scope="module")
def matmul_models(driver, numeric_node):
    models = {}

    def model(name):
        if name not in models:
            result = compiled(driver, numeric_node, name, MATMULS[name][3])
            assert result.weights.metadata["tracr_compile"]["layers"] == 2  # = rasp-sim analyse
            models[name] = Model(result.weights)
        return models[name]
    return model


@pytest.mark.parametrize("name", list(MATMULS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_matmul_against_numpy(matmul_models, name, data):
    # Through rasp_sim.testing, as a user would test their own model (docs/python.md):
    # entries in [-10, 10], so a product entry is at most 3 * 100 and float64 rounding
    # leaves it within 1e-13, far inside 1e-9 + 1e-9 * |want|.
    r, k, c, length = MATMULS[name]
    x = data.draw(concat(matrix(r, k), matrix(k, c), length=length))

    def product(x):
        a, b = x.parts
        return list((a @ b).ravel()) + [0.0] * (length - r * c)

    assert_matches(matmul_models(name), product, [x])


@pytest.mark.parametrize("name", ["softmax_2x3", "softmax_unshifted_2x3"])
def test_softmax_against_numpy(driver, numeric_node, name):
    result = compiled(driver, numeric_node, name, 6)
    rng = np.random.default_rng(3)
    for scale in (1.0, 10.0, 100.0):
        s = rng.normal(size=(2, 3)) * scale
        close(run_weights(result.weights, [s.ravel().tolist()])[0], softmax_rows(s).ravel())


def test_shifted_softmax_does_not_overflow_where_the_unshifted_one_fails(driver, numeric_node):
    result = compiled(driver, numeric_node, "softmax_2x3", 6)
    s = np.array([[800.0, 799.0, 0.0], [-900.0, 0.0, 1.0]])
    close(run_weights(result.weights, [s.ravel().tolist()])[0], softmax_rows(s).ravel())


def test_determinant_against_numpy(driver, numeric_node):
    result = compiled(driver, numeric_node, "determinant_3x3", 9)
    rng = np.random.default_rng(4)
    for _ in range(10):
        m = rng.normal(size=(3, 3))
        out = run_weights(result.weights, [m.ravel().tolist()])[0]
        close(out, [np.linalg.det(m)] * 9)


def test_inverse_is_refused_with_the_reason(driver, numeric_node):
    with pytest.raises(Unsupported, match="divides by a real-valued s-op") as refusal:
        driver.compile_program(numeric_node("inverse_3x3"), [], 9, tracr_oracle=False,
                               numeric=NumericDomain(9, 9, -10, 10))
    assert refusal.value.span is not None


@pytest.mark.parametrize("name, norm", [("attention_2", softmax_rows),
                                        ("attention_unshifted_2", softmax_rows),
                                        ("attention_linear_2", lambda s: s)])
def test_single_head_U_against_numpy(driver, numeric_node, name, norm):
    result = compiled(driver, numeric_node, name, 16)
    rng = np.random.default_rng(5)
    for _ in range(5):
        x, wq, wk, wv = (rng.normal(size=(2, 2)) for _ in range(4))
        out = run_weights(result.weights, [layout(x, wq, wk, wv, length=16)])[0]
        close(out[:4], attention_ref(x, wq, wk, wv, 1.0, norm).ravel())


@pytest.mark.slow
def test_single_and_multi_head_U_at_size_4(driver, numeric_node):
    rng = np.random.default_rng(6)
    single = compiled(driver, numeric_node, "attention_4", 64, samples=50)
    x, wq, wk, wv = (rng.normal(size=(4, 4)) for _ in range(4))
    out = run_weights(single.weights, [layout(x, wq, wk, wv, length=64)])[0]
    close(out[:16], attention_ref(x, wq, wk, wv, 0.5).ravel())
    multi = compiled(driver, numeric_node, "multihead_4", 144, samples=20)
    check_two_head_U(multi, x, rng, 144, 0.5)


def test_multi_head_U_against_numpy(driver, numeric_node):
    result = compiled(driver, numeric_node, "multihead_2", 36)
    rng = np.random.default_rng(7)
    check_two_head_U(result, rng.normal(size=(2, 2)), rng, 36, 1.0)


def check_two_head_U(result, x: np.ndarray, rng: np.random.Generator, length: int,
                     tau: float) -> None:
    """The compiled two-head U on random head weights for the n x n input `x`, against
    NumPy's multi-head attention."""
    n = x.shape[0]
    heads = [tuple(rng.normal(size=(n, n)) for _ in range(3)) for _ in range(2)]
    wo = rng.normal(size=(2 * n, n))
    out = run_weights(result.weights, [layout(x, *[w for h in heads for w in h], wo,
                                              length=length)])[0]
    close(out[:n * n], mha_ref(x, heads, wo, tau).ravel())


def test_encoder_layer_against_numpy(driver, numeric_node):
    result = compiled(driver, numeric_node, "encoder_2", 32)
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 2))
    heads = [tuple(rng.normal(size=(2, 2)) for _ in range(3))]
    wo, w1, b1, w2, b2 = (rng.normal(size=s) for s in ((2, 2), (2, 2), (2,), (2, 2), (2,)))
    blocks = [x, *heads[0], wo, w1, b1, w2, b2]
    out = run_weights(result.weights, [layout(*blocks, length=32)])[0]
    close(out[:4], encoder_ref(x, heads, wo, w1, b1, w2, b2, 1.0, "none").ravel())


@pytest.mark.slow
@pytest.mark.parametrize("ln", ["post", "pre"])
def test_encoder_layer_with_layer_norm_against_numpy(driver, numeric_node, ln):
    # the library's layer_norm is a LayerNorm block over the gathered row (translate.py)
    result = compiled(driver, numeric_node, f"encoder_{ln}_ln_2", 32, samples=50)
    rng = np.random.default_rng(9)
    for _ in range(20):
        x = rng.normal(size=(2, 2))
        heads = [tuple(rng.normal(size=(2, 2)) for _ in range(3))]
        wo, w1, b1, w2, b2 = (rng.normal(size=s) for s in ((2, 2), (2, 2), (2,), (2, 2), (2,)))
        out = run_weights(result.weights, [layout(x, *heads[0], wo, w1, b1, w2, b2,
                                                  length=32)])[0]
        close(out[:4], encoder_ref(x, heads, wo, w1, b1, w2, b2, 1.0, ln).ravel())


# ------------------------------------------------------------------ LayerNorm blocks

LAYER_NORM = 'load "attention";\nx = tokens_float;\ny = layer_norm(x, {n}, {d}, {eps});'
LAYER_NORM_SHAPES = [(2, 3, 0.00001), (3, 2, 0.5)]


@pytest.fixture(scope="module")
def layer_norm_models(driver, program):
    models = {}
    for n, d, eps in LAYER_NORM_SHAPES:
        root = program(LAYER_NORM.format(n=n, d=d, eps=eps), "y")
        length = n * d + 1  # one position outside the matrix: its output is 0
        models[n, d, eps] = (root, driver.compile_program(
            root, [], length, tracr_oracle=False, samples=50,
            numeric=NumericDomain(length, length, -1000, 1000)).weights)
    return models


@settings(max_examples=20, deadline=None)
@given(shape=st.sampled_from(LAYER_NORM_SHAPES), data=st.data())
def test_layer_norm_block_against_numpy_and_the_interpreter(layer_norm_models, shape, data):
    from rasp_sim.evaluation.evaluate import evaluate

    n, d, eps = shape
    root, weights = layer_norm_models[shape]
    scale = data.draw(st.sampled_from([1e-3, 1.0, 100.0]))
    rows = data.draw(st.lists(st.lists(st.floats(-1, 1), min_size=d, max_size=d),
                              min_size=n, max_size=n))
    x = np.asarray(rows) * scale
    x[0] = x[0, 0]  # a constant row: the variance is 0, only eps remains
    tokens = x.ravel().tolist() + [float(scale)]
    got = run_weights(weights, [tokens])[0]
    mean = x.mean(axis=1, keepdims=True)
    want = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    close(got[:n * d], want.ravel())
    assert got[n * d] == 0.0
    interpreted = evaluate([root], [tokens])[0][0]
    close(got, interpreted)


def test_layer_norm_is_one_block_in_the_weights(layer_norm_models):
    _, weights = layer_norm_models[2, 3, 0.00001]
    norms = [block.norm for block in weights.layers if block.norm is not None]
    assert len(norms) == 1 and len(norms[0].columns) == 3 and norms[0].eps == 0.00001


def test_layer_norm_block_through_torch_and_a_file(layer_norm_models, tmp_path):
    torch = pytest.importorskip("torch")
    from rasp_sim.compiler.forward import forward
    from rasp_sim.compiler.torch_loader import load_torch
    from rasp_sim.compiler.weights import load, save

    _, weights = layer_norm_models[3, 2, 0.5]
    save(weights, tmp_path / "ln.npz")
    again = load(tmp_path / "ln.npz")
    features = np.random.default_rng(3).normal(size=(4, 7, 1))
    expected = forward(weights, features)
    assert np.array_equal(forward(again, features), expected)
    got = load_torch(again)(torch.as_tensor(features)).detach().numpy()
    assert np.allclose(got, expected, rtol=0, atol=1e-12)


def test_layer_norm_over_rows_that_are_not_classes_is_refused(driver, program):
    # a prefix "row" is no class of positions: key 0 of query 1's row selects only itself
    source = ("x = tokens_float;\nsame = select(indices, indices, <=);\n"
              "mu = aggregate(same, x, 0);\ndev = x - mu;\n"
              "var = aggregate(same, dev * dev, 0);\ny = dev / sqrt(var + 0.1);")
    with pytest.raises(Unsupported) as caught:
        driver.compile_program(program(source, "y", "prog.rasp"), [], 3, tracr_oracle=False,
                               numeric=NumericDomain(3, 3, -10, 10))
    text = caught.value.format()
    assert text.startswith("prog.rasp:2:") and "a row must be a class" in text


# ------------------------------------------------------------------ the lowering itself

@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=6, max_size=6), st.integers(1, 5))
def test_random_polynomials_are_exact(driver, program, coefficients, length):
    a, b, c, d, e, f = coefficients
    source = (f"x = tokens_float; m = aggregate(select(indices, indices, <=), x);"
              f"y = ({a} * x * x + {b} * x + {c}) if indices < 2 else ({d} * x * m + {e} * m - {f});")
    root = program(source, "y")
    result = driver.compile_program(root, [], length, tracr_oracle=False, samples=50,
                                    numeric=NumericDomain(1, length, -100, 100))
    assert result.report.ok
    rng = np.random.default_rng(length)
    x = rng.normal(size=length)
    m = np.cumsum(x) / np.arange(1, length + 1)
    want = np.where(np.arange(length) < 2, a * x * x + b * x + c, d * x * m + e * m - f)
    close(run_weights(result.weights, [x.tolist()])[0], want)


def test_relu_is_one_mlp_and_exact(driver, program):
    root = program("x = tokens_float; y = 0 if x < 0 else x;", "y")
    result = driver.compile_program(root, [], 4, tracr_oracle=False,
                                    numeric=NumericDomain(1, 4, -10, 10))
    assert result.report.ok and result.weights.metadata["tracr_compile"]["layers"] == 1
    assert run_weights(result.weights, [[-1.5, 2.25, 0.0]]) == [[0.0, 2.25, 0.0]]


@pytest.mark.parametrize("source, reason", [
    ("x = tokens_float; y = 1 if x < 0 else 0;", "not continuous"),
    ("x = tokens_float; y = x / (x * x + 1);", "divides by a real-valued s-op"),
    ("x = tokens_float; y = exp(x);", "'exp'"),
    ("x = tokens_float; y = aggregate(select(x, x, <), x, 0);", "select's keys or queries"),
    ("x = tokens_float; e = exp(x); s = sum(select(indices, indices, !=), e, 0); y = e / s;",
     "without selecting itself"),
])
def test_what_has_no_exact_lowering_is_refused(driver, program, source, reason):
    with pytest.raises(Unsupported, match=reason):
        driver.compile_program(program(source, "y"), [], 3, tracr_oracle=False,
                               numeric=NumericDomain(3, 3, -10, 10))


# ------------------------------------------------------------------ through the CLI

def test_compile_and_run_numeric_weights_through_the_cli(tmp_path, capsys):
    from rasp_sim.cli import main

    model = tmp_path / "mm.safetensors"
    example = Path(__file__).resolve().parents[2] / "examples" / "compile" / "numeric.rasp"
    assert main(["compile", str(example), "--name", "matmul_2x3x2", "--numeric-tokens",
                 "--max-len", "12", "--token-range", "-5,5", "-o", str(model)]) == 0
    assert "validated sampled (real inputs)" in capsys.readouterr().out
    a, b = np.arange(6.0).reshape(2, 3) / 4, -np.arange(6.0).reshape(3, 2) / 8
    assert main(["run", "--weights", str(model), "--json", "--input",
                 str(layout(a, b, length=12))]) == 0
    out = __import__("json").loads(capsys.readouterr().out)["output"]
    close(out[:4], (a @ b).ravel())
    # outside the declared range: refused before running
    assert main(["run", "--weights", str(model), "--input", str([6.0] * 12)]) == 1
    assert "range" in capsys.readouterr().err


def test_a_refusal_inside_the_library_points_at_the_callers_line(capsys, tmp_path):
    from rasp_sim.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "compile" / "numeric.rasp"
    assert main(["compile", str(example), "--name", "inverse_3x3", "--numeric-tokens",
                 "--max-len", "9", "-o", str(tmp_path / "inverse.npz")]) == 1
    err = capsys.readouterr().err
    head, *rest = err.splitlines()
    assert head.startswith(f"{example}:") and "divides by a real-valued s-op" in head
    assert "inverse_3x3 = inverse3(x);" in rest[0]
    assert any("note:" in line and "linalg.rasp:" in line for line in rest)


@pytest.mark.parametrize("argv, message", [
    (["--token-range", "5,1"], "LO <= HI"),
    (["--token-range", "nan,1"], "finite"),
    (["--token-range", "1,2,3"], "two numbers"),
    (["--min-len", "0"], "min-len"),
    (["--min-len", "9"], "min-len"),
])
def test_bad_numeric_options_are_clear_errors(tmp_path, capsys, argv, message):
    from rasp_sim.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "compile" / "numeric.rasp"
    code = main(["compile", str(example), "--name", "transpose_2x3", "--numeric-tokens",
                 "--max-len", "6", "-o", str(tmp_path / "t.npz"), *argv])
    assert code in (1, 2)
    assert message in capsys.readouterr().err


def test_numeric_tokens_need_tokens_float(driver, program):
    with pytest.raises(Unsupported, match="tokens_float"):
        driver.compile_program(program("y = aggregate(select(indices, indices, ==), tokens);",
                                       "y"), [], 3, tracr_oracle=False,
                               numeric=NumericDomain(1, 3, -1, 1))


@pytest.mark.filterwarnings("error")  # a NumPy RuntimeWarning would fail the test
def test_a_token_range_near_the_float64_limit_is_refused_without_warnings(tmp_path, capsys):
    """Softmax heads scale their scores by the token range: 1e308 overflows the query
    weights. That was a RuntimeWarning on stderr before the refusal."""
    from rasp_sim.cli import main

    source = Path(__file__).resolve().parents[2] / "examples" / "compile" / "numeric.rasp"
    assert main(["compile", str(source), "--name", "softmax_2x3", "--numeric-tokens",
                 "--max-len", "6", "--token-range=-1e308,1e308",
                 "-o", str(tmp_path / "s.npz")]) == 1
    assert capsys.readouterr().err == ("weights error: layers.2.heads.0.w_q: contains "
                                       "non-finite values (nan or inf)\n")
    assert not (tmp_path / "s.npz").exists()
