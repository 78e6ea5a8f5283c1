"""`rasp_sim.compress` and `rasp-sim compress` (docs/compiler.md#compression-with-a-certificate):
the weight algebra, the certificate on the whole domain (exact at the rank bound, the
wrong inputs counted below it), the compressed model as an ordinary model file, and the
argument checks."""
from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("tracr")
pytest.importorskip("optax")

import rasp_sim  # noqa: E402
from rasp_sim.compiler.forward import forward  # noqa: E402
from rasp_sim.compiler.weights import LayerNorm  # noqa: E402
from rasp_sim.compression import CompressionError, compress  # noqa: E402
from rasp_sim.compression.algebra import compress_weights  # noqa: E402
from rasp_sim.compression.states import model_inputs, principal_directions  # noqa: E402
from cli_helpers import run_cli  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compile"
VOCAB, MAX_LEN = "abc", 3
DOMAIN = ["".join(t) for n in range(1, MAX_LEN + 1) for t in itertools.product(VOCAB, repeat=n)]
STEPS = 20  # training below the rank bound: enough to exercise it, fast


@pytest.fixture(scope="module")
def program() -> rasp_sim.Program:
    return rasp_sim.load(str(EXAMPLES / "reverse.rasp"))


@pytest.fixture(scope="module")
def model(program: rasp_sim.Program) -> rasp_sim.Model:
    return rasp_sim.compile(program, "reversed", vocab=VOCAB, max_len=MAX_LEN)


@pytest.fixture(scope="module")
def bound(model: rasp_sim.Model) -> int:
    return principal_directions(model.weights, model_inputs(model.weights)).rank


@pytest.fixture(scope="module")
def exact(model, program, bound) -> rasp_sim.Model:
    return compress(model, bound, program=program)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, model) -> Path:
    """A folder holding the model and the program its compile record names."""
    path = tmp_path_factory.mktemp("compress")
    shutil.copy(EXAMPLES / "reverse.rasp", path / "reverse.rasp")
    program = rasp_sim.load(str(path / "reverse.rasp"))
    rasp_sim.compile(program, "reversed", vocab=VOCAB, max_len=MAX_LEN).save(path / "m.npz")
    return path


def _logits(weights, inputs: list[str]) -> np.ndarray:
    """Logits of `inputs` of one length (BOS first), from token ids."""
    ids = [[weights.input_encoder.tokens.index(t) for t in [weights.input_encoder.bos, *x]]
           for x in inputs]
    return forward(weights, np.array(ids))


# ---------------------------------------------------------------------- the algebra


def test_the_identity_basis_leaves_the_model_unchanged(model):
    same = compress_weights(model.weights, np.eye(model.width))
    assert same.width == model.width and same.residual_labels[:2] == ("c0", "c1")
    for n in range(1, MAX_LEN + 1):
        batch = [x for x in DOMAIN if len(x) == n]
        assert np.array_equal(_logits(same, batch), _logits(model.weights, batch))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_rotated_stream_computes_the_same_logits(model, seed):
    """W orthogonal and square: W W^T = I, so every block sees the original stream."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(model.width,) * 2))
    rotated = compress_weights(model.weights, q)
    for n in range(1, MAX_LEN + 1):
        batch = [x for x in DOMAIN if len(x) == n]
        assert np.allclose(_logits(rotated, batch), _logits(model.weights, batch), atol=1e-8)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), width=st.integers(1, 6))
def test_each_matrix_is_read_through_w_transposed_and_written_through_w(model, seed, width):
    w = np.random.default_rng(seed).normal(size=(model.width, width))
    small = compress_weights(model.weights, w)
    old = model.weights
    assert np.allclose(small.token_embed, old.token_embed @ w)
    assert np.allclose(small.pos_embed, old.pos_embed @ w)
    assert np.allclose(small.unembed, w.T @ old.unembed)
    for new, block in zip(small.layers, old.layers):
        if hasattr(block, "heads"):
            for h, g in zip(new.heads, block.heads):
                assert np.allclose(h.w_q, w.T @ g.w_q) and np.allclose(h.w_k, w.T @ g.w_k)
                if g.w_o is None:
                    assert h.w_o is None and np.allclose(h.w_v, w.T @ g.w_v @ w)
                else:
                    assert np.allclose(h.w_v, w.T @ g.w_v) and np.allclose(h.w_o, g.w_o @ w)
        else:
            assert np.allclose(new.w1, w.T @ block.w1) and np.allclose(new.w2, block.w2 @ w)
            assert np.allclose(new.b2, block.b2 @ w) and np.array_equal(new.b1, block.b1)


def test_the_principal_directions_spanning_every_state_are_exact(model, bound):
    basis = principal_directions(model.weights, model_inputs(model.weights)).basis
    small = compress_weights(model.weights, basis[:, :bound])
    assert bound < model.width  # the compiled stream has unused directions
    for n in range(1, MAX_LEN + 1):
        batch = [x for x in DOMAIN if len(x) == n]
        assert np.allclose(_logits(small, batch), _logits(model.weights, batch), atol=1e-9)


# ------------------------------------------------------------------ the certificate


def test_compressing_at_the_rank_bound_is_certified_exact(exact, model, program, bound):
    record = exact.weights.metadata["compression"]
    assert exact.validated and exact.width == bound and record["width"] == bound
    assert record["certificate"] == {**record["certificate"], "exact": True, "wrong": 0,
                                     "inputs": len(DOMAIN), "examples": []}
    assert record["source_width"] == model.width and record["steps"] == 0
    assert exact.info["residual_width"] == bound and exact.info["proof"]["ok"]
    assert exact.run(DOMAIN) == program.run(DOMAIN, "reversed")
    assert all(a.dtype == np.float64 for b in exact.layers for a in b.arrays.values())


@pytest.fixture(scope="module")
def small(model, program) -> rasp_sim.Model:
    return compress(model, 2, program=program, steps=STEPS)


def test_a_too_small_width_counts_its_wrong_inputs(small, program):
    cert = small.weights.metadata["compression"]["certificate"]
    outputs, wanted = small.run(DOMAIN), program.run(DOMAIN, "reversed")
    wrong = [x for x, got, want in zip(DOMAIN, outputs, wanted) if got != want]
    assert not small.validated and not cert["exact"]
    assert cert["wrong"] == len(wrong) > 0  # every input of the domain, counted
    assert cert["examples"] and all("".join(e["input"]) in wrong for e in cert["examples"])
    assert small.weights.metadata["compression"]["losses"]["total"] > 0


@pytest.mark.slow
def test_compression_is_deterministic(model, program):
    a, b = (compress(model, 3, program=program, steps=STEPS, seed=1) for _ in range(2))
    assert all(np.array_equal(x, y) for p, q in zip(a.layers, b.layers)
               for x, y in zip(p.arrays.values(), q.arrays.values()))


# ------------------------------------------------------------- an ordinary model


def test_save_load_run_trace_round_trip(exact, model, tmp_path):
    exact.save(tmp_path / "c.npz")
    loaded = rasp_sim.load_model(tmp_path / "c.npz")
    assert loaded.validated and loaded.width == exact.width < model.width
    assert loaded.run(DOMAIN) == model.run(DOMAIN)
    trace = loaded.trace("abc")
    assert trace.residual_labels == tuple(f"c{i}" for i in range(exact.width))
    assert trace.output == ["c", "b", "a"]


def test_an_unvalidated_compression_is_refused_unless_allowed(small, tmp_path):
    small.save(tmp_path / "bad.npz")
    with pytest.raises(rasp_sim.WeightsError, match="compressed by `rasp-sim compress`"):
        rasp_sim.load_model(tmp_path / "bad.npz")
    assert "NOT validated" in rasp_sim.load_model(tmp_path / "bad.npz",
                                                  allow_unvalidated=True).warning


def test_cli_compress_run_and_trace(folder, bound, capsys):
    model, out = str(folder / "m.npz"), str(folder / "c.npz")
    code, stdout, _ = run_cli(capsys, "compress", model, "--width", str(bound), "-o", out)
    assert code == 0 and f"exact on all {len(DOMAIN)} inputs" in stdout
    code, stdout, _ = run_cli(capsys, "run", "--weights", out, "--input", "abc")
    assert code == 0 and "[c, b, a]" in stdout
    code, stdout, _ = run_cli(capsys, "trace", out, "--input", "ab")
    assert code == 0 and "c0 = " in stdout


def test_cli_compress_too_small_writes_it_unvalidated(folder, capsys):
    model, out = str(folder / "m.npz"), str(folder / "small.npz")
    code, stdout, err = run_cli(capsys, "compress", model, "--width", "1", "--steps", "0",
                                "-o", out)
    assert code == 1 and "NOT exact: wrong on" in stdout and "UNVALIDATED" in err
    code, _, err = run_cli(capsys, "run", "--weights", out, "--input", "abc")
    assert code == 1 and "not validated" in err


@pytest.mark.parametrize("steps", ["0", pytest.param("5", marks=pytest.mark.slow)])
def test_cli_find_width(folder, bound, capsys, steps):
    model, out, plot = (str(folder / name) for name in ("m.npz", "f.npz", "curve.png"))
    code, stdout, _ = run_cli(capsys, "compress", model, "--find-width", "--steps", steps,
                              "-o", out, "--plot", plot)
    assert code == 0 and f"width {bound} (of " in stdout
    assert stdout.count("NOT exact") >= 1  # below the bound, with little or no training
    found = rasp_sim.load_model(out)
    search = found.weights.metadata["compression"]["search"]["tried"]
    assert found.width <= bound and {t["width"] for t in search} >= {bound, found.width}
    assert f"smallest certified width: {found.width}" in stdout
    assert Path(plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------- argument checks


def test_a_width_outside_1_to_d_is_refused(model, program):
    with pytest.raises(rasp_sim.RaspTypeError, match="width must be at least 1"):
        compress(model, 0, program=program)
    with pytest.raises(CompressionError, match=f"outside 1..{model.width}"):
        compress(model, model.width + 1, program=program)
    with pytest.raises(rasp_sim.RaspTypeError, match="compress takes a Model"):
        compress("m.npz", 2)


def test_a_layer_norm_is_refused(model, program):
    d = model.width
    normed = rasp_sim.Model(model.weights.replace(final_norm=LayerNorm(np.ones(d), np.zeros(d))))
    with pytest.raises(CompressionError, match="LayerNorm .*does not commute"):
        compress(normed, 2, program=program)


def test_cli_argument_checks(folder, capsys):
    model, out = str(folder / "m.npz"), str(folder / "x.npz")
    with pytest.raises(SystemExit) as usage:  # argparse's own check of a positive width
        run_cli(capsys, "compress", model, "--width", "0", "-o", out)
    assert usage.value.code == 2 and "--width: invalid value '0'" in capsys.readouterr().err
    code, _, err = run_cli(capsys, "compress", model, "--width", "999", "-o", out)
    assert code == 1 and "outside 1.." in err and not Path(out).exists()
    code, _, err = run_cli(capsys, "compress", model, "--width", "2", "--plot", "c.png",
                           "-o", out)
    assert code == 2 and "--find-width" in err
    for option, value, said in (("-o", "x.bin", "ends in .npz or .safetensors"),
                                ("--plot", "c.svg", "drawn as a .png")):
        argv = ["--find-width", "-o", out, option, value] if option == "--plot" else \
            ["--width", "2", option, value]
        code, _, err = run_cli(capsys, "compress", model, *argv)
        assert code == 2 and said in err


def test_a_counting_proof_record_must_count_its_disagreement():
    """The proof folder's records are checked before they are believed
    (docs/compiler.md, "Exhaustive proofs"): a count of wrong inputs must fit the record."""
    from rasp_sim.compiler.tracr_backend import proof

    identity = {"format": proof.PROOF_FORMAT, "model": "m", "program": "p",
                "domain": {"vocab": list(VOCAB), "min_len": 1, "max_len": MAX_LEN},
                "chunk_inputs": proof.CHUNK_INPUTS, "count_all": True}
    digest = proof._digest(identity)
    wrong_at = {"input": ["a", "b", "c"], "position": 0, "expected": "c", "actual": "a"}
    base = {"key": "n3-", "inputs": 27, "compared": 27, "undefined": 0,
            "max_numeric_error": 0.0, "output_types": ["str"], "cpu_seconds": 0.1}
    for wrong, disagreement, ok in ((0, None, True), (5, wrong_at, True), (5, None, False),
                                    (0, wrong_at, False), (28, wrong_at, False)):
        record = proof.sealed({**base, "wrong": wrong, "disagreement": disagreement}, digest)
        problem = proof.record_problem(record, digest, identity)
        assert (problem is None) == ok, (wrong, disagreement, problem)
