"""`Model.to_transformer_lens()` computes the model: the TransformerLens model (a
TransformerBridge on transformer-lens 4.x, a HookedTransformer on 3.x: whichever is
installed) agrees with `Model.run` (the NumPy forward pass) on the whole domain of every
program of docs/compiler.md's compile table, and on 10,000 random inputs of three numeric library
models; its attention patterns are `Model.trace`'s, head by head through `block_map`;
ablating a head through a hook changes the output as the trace predicts; what
TransformerLens cannot express is refused. Hook names come from `get_act_name`, which
names them on both versions. Runs in CI's interp step (.ci/run)."""
from __future__ import annotations

import functools
import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformer_lens")
pytest.importorskip("tracr")

import rasp_sim  # noqa: E402
from rasp_sim.compiler.forward import apply_block, readout  # noqa: E402
from rasp_sim.compiler.weights import AttentionBlock, LayerNorm, MLPBlock, as_dense  # noqa: E402
from rasp_sim.compiler.tracr_backend.runtime import NUMERIC_TOLERANCE  # noqa: E402
from transformer_lens.utilities import get_act_name  # noqa: E402

pytestmark = pytest.mark.interp

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compile"
# (file, name, vocab, max_len): every row of docs/compiler.md's compile table.
CLASSIC = [(f, n, v, int(m)) for f, n, v, m in
           (line.split("\t") for line in (EXAMPLES / "table.tsv").read_text().splitlines()
            if line and not line.startswith("#"))]
# Three numeric library models (examples/compile/numeric.tsv): products (gated MLPs),
# a softmax head, and a determinant (products of products).
NUMERIC = [("matmul_2x3x2", 12), ("softmax_2x3", 6), ("determinant_3x3", 9)]
NUMERIC_SAMPLES = 10_000


@functools.cache
def classic_model(file: str, name: str, vocab: str, max_len: int, causal: bool = False):
    return rasp_sim.compile(rasp_sim.load(EXAMPLES / file), name, vocab=vocab.split(","),
                            max_len=max_len, causal=causal)


@functools.cache
def numeric_model(name: str, length: int):
    return rasp_sim.compile(rasp_sim.load(EXAMPLES / "numeric.rasp"), name, numeric_tokens=True,
                            min_len=length, max_len=length)


def domain(model) -> list[list]:
    """Every input of the model's declared domain (its vocabulary, lengths min..max)."""
    info = model.info
    return [list(x) for n in range(info["min_len"], info["max_len"] + 1)
            for x in itertools.product(info["vocab"], repeat=n)]


def disagreements(expected: list[list], got: list[list]) -> list[tuple[int, int, object, object]]:
    """(input, position, expected, got) wherever the outputs differ: categorical values
    must be equal and of one type, numbers within validation's tolerance
    1e-9 * max(1, |expected|) (NUMERIC_TOLERANCE, docs/compiler.md)."""
    found = []
    for i, (want_row, got_row) in enumerate(zip(expected, got, strict=True)):
        for position, (want, value) in enumerate(zip(want_row, got_row, strict=True)):
            if isinstance(want, float) and not isinstance(value, bool):
                ok = abs(value - want) <= NUMERIC_TOLERANCE * max(1.0, abs(want))
            else:
                ok = value == want and type(value) is type(want)
            if not ok:
                found.append((i, position, want, value))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("file, name, vocab, max_len", CLASSIC)
def test_classic_program_agrees_on_its_whole_domain(file, name, vocab, max_len):
    model = classic_model(file, name, vocab, max_len)
    inputs = domain(model)
    assert len(inputs) == model.info["validation"]["compared"]  # the domain validation proved
    hooked = model.to_transformer_lens()
    assert disagreements(model.run(inputs), hooked.run(inputs)) == []


@pytest.mark.slow
@pytest.mark.parametrize("name, length", NUMERIC)
def test_numeric_model_agrees_on_random_inputs(name, length):
    model = numeric_model(name, length)
    inputs = np.random.default_rng(0).standard_normal((NUMERIC_SAMPLES, length)).tolist()
    hooked = model.to_transformer_lens()
    assert disagreements(model.run(inputs), hooked.run(inputs)) == []


def test_causal_model_agrees_and_masks():
    model = classic_model("reverse.rasp", "reversed", "a,b,c", 4, causal=True)
    hooked = model.to_transformer_lens()
    assert hooked.cfg.attention_dir == "causal"
    inputs = domain(model)
    assert disagreements(model.run(inputs), hooked.run(inputs)) == []


# hist: one head; most_freq: three attention blocks; dyck1_state: a block of two heads
@pytest.mark.parametrize("name", ["hist", "most_freq", "dyck1_state"])
def test_cached_patterns_are_the_traces_patterns(name):
    model = classic_model(*next(row for row in CLASSIC if row[1] == name))
    hooked = model.to_transformer_lens()
    inputs = [x for x in domain(model) if len(x) == model.info["max_len"]][:64]
    traces = [model.trace(x) for x in inputs]
    _, cache = hooked.run_with_cache(**hooked.input(inputs))
    for index, trace in enumerate(traces):
        heads = trace.attention
        assert heads  # every table program has heads
        for head in heads:
            layer, kind = hooked.block_map[head.block]
            assert kind == "attn" and model.layers[head.block].kind == "attention"
            got = cache["pattern", layer][index, head.head].numpy()
            np.testing.assert_allclose(got, head.pattern, rtol=0, atol=1e-12)
    # The scores from the cached queries and keys, as docs/transformer_lens.md computes them
    # (4.3's hook_attn_scores holds the pattern).
    for index, block in enumerate(model.weights.layers):
        if not isinstance(block, AttentionBlock):
            continue
        layer, _ = hooked.block_map[index]
        scores = torch.einsum("bqhd,bkhd->bhqk", cache["q", layer], cache["k", layer])
        scores = (scores / hooked.cfg.attn_scale).numpy()
        stream = np.stack([trace.residuals[index].values for trace in traces])  # block's input
        for h, head in enumerate(block.heads):
            queries, keys = stream @ as_dense(head.w_q), stream @ as_dense(head.w_k)
            expected = block.scale * queries @ np.swapaxes(keys, -1, -2)
            np.testing.assert_allclose(scores[:, h], expected, rtol=1e-12, atol=1e-9)


def test_the_installed_api_is_used_and_names_its_hooks():
    import importlib.metadata

    from rasp_sim.compiler.transformer_lens_export import BRIDGE

    hooked = classic_model(*CLASSIC[0]).to_transformer_lens()
    major = int(importlib.metadata.version("transformer-lens").split(".")[0])
    assert BRIDGE == (major >= 4)
    if BRIDGE:
        from transformer_lens import TransformerBridge as library_class
    else:
        from transformer_lens import HookedTransformer as library_class
    assert isinstance(hooked, library_class)
    # The HookedTransformer names get_act_name gives are hooks on either version (4.x
    # registers them as aliases of its own, e.g. hook_z for attn.o.hook_in).
    names = [get_act_name(kind, layer) for layer in range(hooked.cfg.n_layers)
             for kind in ("resid_pre", "resid_mid", "resid_post", "q", "k", "v", "z",
                          "pattern", "attn_out", "pre", "post", "mlp_out")]
    assert set(names) <= set(hooked.hook_dict)


# most_freq: three attention blocks with MLPs between them; dyck1_state: a block of two heads
@pytest.mark.parametrize("name", ["most_freq", "dyck1_state"])
def test_ablating_a_head_changes_the_output_as_the_trace_predicts(name):
    """Zero head h of attention block i through the hook on its values (hook_z): the
    logits are those of the trace's residual stream entering block i, carried on by the
    NumPy forward through block i without head h and the blocks after it."""
    model = classic_model(*next(row for row in CLASSIC if row[1] == name))
    weights = model.weights
    hooked = model.to_transformer_lens()
    inputs = [x for x in domain(model) if len(x) == model.info["max_len"]][:16]
    traces = [model.trace(x) for x in inputs]
    changed = 0
    for index, block in enumerate(weights.layers):
        if not isinstance(block, AttentionBlock):
            continue
        layer, kind = hooked.block_map[index]
        assert kind == "attn"
        for h in range(len(block.heads)):
            def ablate(z, hook, h=h):
                z[:, :, h] = 0.0
                return z

            got = hooked.run_with_hooks(**hooked.input(inputs),
                                        fwd_hooks=[(get_act_name("z", layer), ablate)])
            stream = np.stack([trace.residuals[index].values for trace in traces])
            others = tuple(head for g, head in enumerate(block.heads) if g != h)
            if others:
                stream = apply_block(stream, replace(block, heads=others), weights.causal)
            for later in weights.layers[index + 1:]:
                stream = apply_block(stream, later, weights.causal)
            expected = readout(weights, stream)
            np.testing.assert_allclose(got.detach().numpy(), expected, rtol=0, atol=1e-9)
            unablated = np.stack([trace.logits for trace in traces])
            changed += int(np.any(expected.argmax(-1) != unablated.argmax(-1)))
    assert changed  # some head's ablation changes the decoded output


def test_layers_are_paired_and_padded():
    from rasp_sim.compiler.layer_pairs import pair_layers

    a, m = AttentionBlock.__new__(AttentionBlock), MLPBlock.__new__(MLPBlock)
    assert pair_layers([a, m, m, a]) == [(0, 1), (None, 2), (3, None)]
    assert pair_layers([m, m, a, m, m]) == [(None, 0), (None, 1), (2, 3), (None, 4)]
    model = numeric_model("softmax_2x3", 6)  # mlp, mlp, attention, mlp, mlp
    hooked = model.to_transformer_lens()
    assert hooked.block_map == {0: (0, "mlp"), 1: (1, "mlp"), 2: (2, "attn"), 3: (2, "mlp"),
                                4: (3, "mlp")}
    assert hooked.cfg.n_layers == 4 and hooked.cfg.gated_mlp
    assert not hooked.blocks[0].attn.W_Q.any()  # an empty sublayer is zeros
    assert hooked.residual_labels == model.residual_labels


def test_numeric_input_is_the_embedded_residual():
    model = numeric_model("matmul_2x3x2", 12)
    hooked = model.to_transformer_lens()
    kwargs = hooked.input([[0.5] * 12])
    assert kwargs["start_at_layer"] == 0 and kwargs["input"].shape == (1, 13, model.weights.width)
    assert kwargs["input"].dtype == hooked.cfg.dtype
    from rasp_sim.base.errors import RaspTypeError

    with pytest.raises(RaspTypeError, match="reads numbers, not token ids"):
        hooked(torch.zeros((1, 13), dtype=torch.long))


def test_inputs_are_checked():
    from rasp_sim.base.errors import RaspTypeError

    hooked = classic_model(*CLASSIC[0]).to_transformer_lens()
    with pytest.raises(RaspTypeError, match="one length"):
        hooked.input(["ab", "abc"])
    with pytest.raises(RaspTypeError, match="not in the model's vocabulary"):
        hooked.input(["az"])


def refused(model, weights, match: str) -> None:
    from rasp_sim.compiler.transformer_lens_export import to_transformer_lens
    from rasp_sim.base.errors import CompileError

    with pytest.raises(CompileError, match=match):
        to_transformer_lens(weights)


def test_what_transformer_lens_cannot_express_is_refused():
    model = classic_model(*CLASSIC[0])  # reverse: attention, mlp, mlp, attention
    weights = model.weights
    width = weights.width
    norm = LayerNorm(np.ones(width), np.zeros(width))
    layers = list(weights.layers)
    refused(model, replace(weights, final_norm=norm), "final LayerNorm")
    refused(model, replace(weights, layers=(replace(layers[0], norm=norm), *layers[1:])),
            "block 0 has a LayerNorm")
    columns = LayerNorm(np.ones(2), np.zeros(2), columns=(0, 1))  # a compiled layer_norm's
    refused(model, replace(weights, layers=(replace(layers[0], norm=columns), *layers[1:])),
            "LayerNorm of 2 residual columns")
    refused(model, replace(weights, layers=(replace(layers[0], residual=False), *layers[1:])),
            "block 0 has no residual")
    refused(model, replace(weights, layers=(*layers[:2], replace(layers[2], activation="gelu"),
                                            layers[3])), "different activations")
    linear = [replace(b, activation="linear") if isinstance(b, MLPBlock) else b for b in layers]
    refused(model, replace(weights, layers=tuple(linear)), "'linear' has no TransformerLens")


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_gate_biases_need_the_one_direction(activation):
    model = numeric_model("matmul_2x3x2", 12)
    weights = model.weights
    one = model.residual_labels.index("one")
    first = weights.layers[1]
    assert isinstance(first, MLPBlock) and first.gated
    b2 = np.random.default_rng(3).standard_normal(first.b2.shape)
    b2[one] = 0.0  # a block that writes `one` is refused (below)
    biased = replace(first, b1=np.full(first.b1.shape, 0.25), b_gate=np.full(first.b1.shape, -0.5),
                     b2=b2)
    layers = [replace(b, activation=activation) if isinstance(b, MLPBlock) else b
              for b in (weights.layers[0], biased, *weights.layers[2:])]
    with_bias = replace(weights, layers=tuple(layers))
    # Folded through `one` (b2 through one more hidden unit, 1 everywhere), the biases are
    # computed: the export equals the NumPy forward.
    from rasp_sim.compiler.forward import embed_features, readout, residual_stream as stream
    from rasp_sim.compiler.transformer_lens_export import to_transformer_lens
    from rasp_sim.compiler.tracr_backend.runtime import numeric_features

    hooked = to_transformer_lens(with_bias)
    assert hooked.cfg.d_mlp == max(b.b1.shape[0] for b in layers if isinstance(b, MLPBlock)) + 1
    xs = np.random.default_rng(1).standard_normal((50, 12)).tolist()
    features = np.array([numeric_features(with_bias, x) for x in xs])[..., None]
    streams = stream(with_bias, embed_features(with_bias, features))
    logits, cache = hooked.run_with_cache(**hooked.input(xs))
    layer, kind = hooked.block_map[1]
    assert kind == "mlp"
    # the biased block itself to rounding (the folds are exact up to the order of the sums)
    np.testing.assert_allclose(cache["resid_post", layer].numpy(), streams[2], rtol=0, atol=1e-12)
    # b2 moves the next attention's queries and keys, whose scores magnify rounding: the
    # logits agree within validation's tolerance (1e-9 relative; 2e-10 seen)
    expected = readout(with_bias, streams[-1])
    np.testing.assert_allclose(logits.detach().numpy(), expected, rtol=NUMERIC_TOLERANCE,
                               atol=NUMERIC_TOLERANCE)
    # Without a `one` direction that is 1 everywhere (here: a block writes it) it is refused.
    head = weights.layers[0].heads[0]
    w_o = np.array(head.w_o)
    w_o[:, one] = 1.0
    writes_one = replace(weights.layers[0], heads=(replace(head, w_o=w_o), *weights.layers[0].heads[1:]))
    refused(model, replace(with_bias, layers=(writes_one, *with_bias.layers[1:])), "'one' direction")


def test_gelu_and_mlp_biases_of_an_ungated_model_are_computed():
    # Not what the compiler writes, but what the export maps: GPT-2's gelu (TransformerLens's
    # gelu_new) and b1, b2 of an ungated MLP; compared with the NumPy forward's logits.
    from rasp_sim.compiler.forward import forward
    from rasp_sim.compiler.transformer_lens_export import to_transformer_lens

    weights = classic_model(*CLASSIC[0]).weights
    rng = np.random.default_rng(2)
    layers = tuple(replace(b, activation="gelu", b1=rng.standard_normal(b.b1.shape),
                           b2=rng.standard_normal(b.b2.shape))
                   if isinstance(b, MLPBlock) else b for b in weights.layers)
    changed = replace(weights, layers=layers)
    hooked = to_transformer_lens(changed)
    assert hooked.cfg.act_fn == "gelu_new" and not hooked.cfg.gated_mlp
    inputs = [list(x) for x in itertools.product("abc", repeat=5)]
    kwargs = hooked.input(inputs)
    expected = forward(changed, kwargs["input"].numpy())
    np.testing.assert_allclose(hooked(**kwargs).detach().numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make, vocab, max_len, causal", [
    (lambda rasp, lib: lib.make_sort_unique(rasp.tokens, rasp.tokens), [1, 2, 3, 4], 4, False),
    (lambda rasp, lib: lib.make_frac_prevs(rasp.tokens == "a"), ["a", "b"], 5, True),
    (lambda rasp, lib: lib.shift_by(1, rasp.tokens), ["a", "b", "c"], 4, True),
], ids=["sort_unique", "frac_prevs", "shift_by"])
def test_a_tracr_program_goes_to_transformer_lens_proven(make, vocab, max_len, causal):
    """tracr Python -> rasp-sim proven model -> TransformerLens (docs/tracr.md): the
    exported model agrees with the proven one on its whole domain, and both with tracr's
    rasp.evaluate wherever it gives a value (causal: on each prefix)."""
    from tracr.compiler import lib
    from tracr.rasp import rasp

    program = make(rasp, lib)
    model = rasp_sim.compile_tracr(program, set(vocab), max_len, causal=causal,
                                   exhaustive=True, workers=1)
    assert model.proof is not None and model.validated
    hooked = model.to_transformer_lens()
    inputs = domain(model)
    outputs = model.run(inputs)
    assert disagreements(outputs, hooked.run(inputs)) == []
    for tokens, row in zip(inputs, outputs):
        for position, value in enumerate(row):
            seen = tokens[:position + 1] if causal else tokens
            want = rasp.evaluate(program, seen)[position]
            if want is not None:
                assert abs(value - want) <= 1e-9 if isinstance(want, float) else value == want
