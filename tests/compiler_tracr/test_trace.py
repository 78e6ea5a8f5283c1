"""Model.trace (rasp_sim/compiled/trace.py): the trace is the model's own forward pass, block by
block, and the residual stream holds every categorical s-op's interpreter value at every
position after the block that writes it: the weights compute the program step by step,
not only at the output."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import rasp_sim
from rasp_sim.compiler.forward import block_input, forward, head_output, mlp_hidden
from rasp_sim.compiler.weights import AttentionBlock, as_dense
from rasp_sim.evaluation.evaluate import evaluate_batch
from rasp_sim.compiled.model import Model
from rasp_sim.compiled.trace import Trace

from .conftest import EXAMPLES

# (file, name, vocab, max_len) from the classic compile table (docs/compiler.md), small and varied:
# a categorical output (reverse), a numerical one (hist), sort's several heads, and a
# deep stack of layers (Dyck-1).
CASES = [("reverse.rasp", "reversed", "abc", 5), ("histogram.rasp", "hist", "abc", 5),
         ("sort.rasp", "sorted", [0, 1, 2, 3], 5), ("dyck.rasp", "dyck1_state", "()", 8)]


def _compiled(driver, case):
    file, name, vocab, max_len = case
    program = rasp_sim.load(EXAMPLES / file)
    root = program[name]
    kind = driver.tokens_kind(root)
    values = list(vocab) if kind == "str" else vocab
    result = driver.compile_program(root, values, max_len, program=str(EXAMPLES / file),
                                    name=name, tracr_oracle=False)
    return program, root, result, Model(driver.final_weights(result))


@pytest.fixture(scope="module", params=CASES, ids=[c[1] for c in CASES])
def compiled(request, driver):
    return (request.param, *_compiled(driver, request.param))


def _inputs(case):
    _, _, vocab, max_len = case
    return st.lists(st.sampled_from(list(vocab)), min_size=1, max_size=max_len)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_the_trace_is_the_models_forward_pass(compiled, data):
    case, _, _, _, model = compiled
    x = data.draw(_inputs(case))
    trace = model.trace(x)
    weights = model.weights
    assert isinstance(trace, Trace) and trace.positions[1:] == tuple(str(t) for t in x)
    # The logits equal the optimised forward's (which narrows each block to the columns
    # it writes, so the two are computed differently): to 1e-9, BLAS's summation order.
    ids = np.array([[weights.input_encoder.tokens.index(weights.input_encoder.bos)]
                    + [model.weights.input_encoder.tokens.index(t) for t in x]])
    np.testing.assert_allclose(trace.logits, forward(weights, ids)[0], rtol=0, atol=1e-9)
    assert trace.output == model.run([x])[0]
    # Each block's output is rebuilt from what the trace recorded: the heads' patterns
    # (rows summing to 1) and the MLP's hidden activations.
    patterns = iter(trace.attention)
    mlps = iter(trace.mlps)
    assert len(trace.residuals) == len(weights.layers) + 1
    for index, block in enumerate(weights.layers):
        before, after = trace.residuals[index].values, trace.residuals[index + 1].values
        assert trace.residuals[index + 1].block == index
        inner = block_input(before[None], block)
        if isinstance(block, AttentionBlock):
            added = 0.0
            for head in block.heads:
                recorded = next(patterns)
                assert recorded.block == index and recorded.pattern.shape == (len(x) + 1,) * 2
                np.testing.assert_allclose(recorded.pattern.sum(axis=1), 1.0, atol=1e-12)
                added = added + head_output(inner, recorded.pattern[None], head)[0]
        else:
            recorded_mlp = next(mlps)
            assert recorded_mlp.block == index
            np.testing.assert_array_equal(recorded_mlp.hidden, mlp_hidden(inner, block)[0])
            added = recorded_mlp.hidden @ as_dense(block.w2) + block.b2
        np.testing.assert_allclose(after, before + added, rtol=0, atol=1e-9)
    assert next(patterns, None) is None and next(mlps, None) is None


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_categorical_sop_is_in_the_residual_stream_as_the_interpreter_computes_it(
        compiled, data):
    case, program, _, result, model = compiled
    x = data.draw(_inputs(case))
    trace = model.trace(x)
    sources = {label: node for label, node in result.compiled.translation.sources.items()
               if label in trace.sops and any(name.startswith(label + ":")
                                              for name in trace.residual_labels)}
    assert set(sources) - {"tokens", "indices"}, sources  # at least one computed s-op
    values = evaluate_batch(list(sources.values()), [x])
    for label, node in sources.items():
        expected = [str(v) for v in np.asarray(values[node]).reshape(-1)]
        assert trace.sop_values(label) == expected, (label, x)


def test_trace_entries_name_their_operations(driver):
    _, _, _, model = _compiled(driver, CASES[0])
    trace = model.trace("abca")
    located = [op for head in trace.attention for op in head.operations if op.at]
    assert any("examples/compile/reverse.rasp" in op.at or "classic.rasp" in op.at
               for op in located)
    assert trace.sop_values("tokens") == ["a", "b", "c", "a"]
    with pytest.raises(rasp_sim.RaspNameError, match="no residual direction belongs to an s-op "
                       "'missing'"):
        trace.sop_values("missing")
    as_json = trace.to_json()
    assert as_json["output"] == ["a", "c", "b", "a"]
    assert len(as_json["residuals"]) == len(model.layers) + 1


def test_a_numeric_models_trace(driver):
    program = rasp_sim.parse('load "linalg"; t = transpose(tokens_float, 2, 3);')
    model = rasp_sim.compile(program, numeric_tokens=True, max_len=6, min_len=6)
    x = [0.5, -1.0, 2.0, 3.5, 0.0, -2.25]
    trace = model.trace(x)
    np.testing.assert_allclose(trace.output, program.run([x])[0], atol=1e-9)
    assert trace.residuals[0].values.shape == (7, model.weights.width)


def test_trace_refuses_an_input_outside_the_domain(driver):
    _, _, _, model = _compiled(driver, CASES[0])
    with pytest.raises(rasp_sim.RaspTypeError, match="token 'z' is not in the model's vocabulary"):
        model.trace("abz")
    with pytest.raises(rasp_sim.RaspTypeError, match="above the model's max-len 5"):
        model.trace("abcabc")


# ------------------------------------------------------------------ rasp-sim trace, plot

@pytest.fixture(scope="module")
def reverse_file(tmp_path_factory, driver):
    path = tmp_path_factory.mktemp("trace") / "reverse.npz"
    _compiled(driver, CASES[0])[3].save(path)
    return str(path)


def test_the_cli_shows_each_blocks_sops_and_attention(capsys, reverse_file):
    from cli_helpers import run_cli

    code, out, err = run_cli(capsys, "trace", reverse_file, "--input", "abca")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "positions: BOS a b c a"
    assert any(line.startswith("block ") and "(attention): Aggregate 'reversed_" in line
               for line in lines)
    assert "  head 0 attends (query->keys): 1->4 2->3 3->2 4->1" in lines
    assert "  head 0 attends (query->keys): 1->all 2->all 3->all 4->all" in lines  # length
    assert any(line.startswith("  reversed_") and line.endswith("= [a, c, b, a]") for line in lines)
    assert lines[-1] == "output: [a, c, b, a]"


def test_the_cli_json_is_the_api_trace(capsys, reverse_file):
    import json

    from cli_helpers import run_cli

    code, out, _ = run_cli(capsys, "trace", reverse_file, "--input", "[\"b\", \"a\"]", "--json")
    assert code == 0
    expected = rasp_sim.load_model(reverse_file).trace(["b", "a"]).to_json()
    assert json.loads(out) == expected


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_the_cli_writes_the_figure(capsys, reverse_file, tmp_path, suffix):
    import xml.etree.ElementTree as ElementTree

    from cli_helpers import run_cli

    out_path = tmp_path / f"trace{suffix}"
    code, out, _ = run_cli(capsys, "trace", reverse_file, "--input", "abc", "-o", str(out_path))
    assert code == 0 and out.strip() == f"wrote {out_path}"
    data = out_path.read_bytes()
    signatures = {".png": b"\x89PNG", ".pdf": b"%PDF"}
    if suffix == ".svg":
        root = ElementTree.fromstring(data)
        assert root.tag.endswith("svg") and b"reversed_" in data  # real text labels
    else:
        assert data.startswith(signatures[suffix])


def test_the_cli_refuses_bad_requests(capsys, reverse_file, tmp_path):
    from cli_helpers import run_cli

    code, _, err = run_cli(capsys, "trace", reverse_file, "--input", "abc", "-o",
                           str(tmp_path / "t.gif"))
    assert code == 2 and "the output is written as .png, .svg, .pdf (by the suffix)" in err
    code, _, err = run_cli(capsys, "trace", reverse_file, "--input", "abz")
    assert code == 1 and "token 'z' is not in the model's vocabulary" in err
    with pytest.raises(SystemExit) as stopped:  # argparse's own usage error
        run_cli(capsys, "trace", reverse_file, "--input", "ab", "--json", "-o", "x.png")
    assert stopped.value.code == 2 and "not allowed with" in capsys.readouterr().err
    code, _, err = run_cli(capsys, "trace", str(tmp_path / "missing.npz"), "--input", "ab")
    assert code == 1 and "missing.npz" in err


def test_plot_is_a_matplotlib_figure(reverse_file):
    from matplotlib.figure import Figure

    figure = rasp_sim.load_model(reverse_file).trace("abc").plot()
    assert isinstance(figure, Figure)
    assert len(figure.axes) == 1 + 1 + 2  # the stream, its colour bar, two heads


def test_a_trace_renders_in_a_notebook_as_svg(reverse_file):
    import xml.etree.ElementTree as ElementTree

    text = rasp_sim.load_model(reverse_file).trace("ab")._repr_svg_()
    assert ElementTree.fromstring(text).tag.endswith("svg") and "queries" in text
