"""A compiled model as a TransformerLens model (docs/transformer_lens.md): on
transformer-lens 4.x a `TransformerBridge` around TransformerLens's own native transformer
(`TransformerBridge.boot_native`), on 3.x a `HookedTransformer`. The installed version
decides (`BRIDGE`).

Needs torch and transformer-lens (`pip install "rasp-sim[interp]"`); import it only
through `Model.to_transformer_lens`, which says so when they are missing.

Both are stacks of layers, each one attention sublayer then one MLP, with a single n_heads,
d_head, d_mlp, activation and attention scale for all of them. The weight format
(docs/compiler.md) is a flat list of blocks with per-head key sizes and a logit scale per
block. The conversion:

- layers: an attention block and the MLP right after it share a layer; an MLP with no
  attention before it, or an attention with no MLP after it, gets an all-zero partner
  (a zero head attends uniformly and adds 0; a zero MLP adds relu(0) W = 0);
- every head is padded with zero columns to one d_head (zero terms add nothing to q.k or
  to the values); a head without W_O (W_V writes the residual) keeps W_V's non-zero
  columns and a W_O that puts them back; every block with zero heads to one n_heads;
- the attention scores are divided by `ATTN_SCALE`, so each block's logit scale times
  ATTN_SCALE is multiplied into its W_Q: 1 on 3.x (`use_attn_scale=False`); 2 on 4.x,
  whose native attention divides by sqrt(d_head) unless it is given a positive
  `attn_scale`, and refuses 1 when d_head > 1. A power of two, so multiplying W_Q by it and
  dividing the scores by it round nothing;
- `attention_dir` "causal" for a causal model, else "bidirectional";
- gated MLPs: TransformerLens's is act(x W_gate) * (x W_in) W_out (3.x adds b_in inside
  and b_out after, at zero here; 4.x's native gated MLP has no biases), the weight
  format's (act(x W1 + b1) * (x W_gate + b_gate)) W2 + b2: W1 goes to its W_gate, the
  format's gate to its W_in, and every bias goes through the residual direction `one` (1
  at every position in a compiled model, checked here: written by the embedding, by no
  block): b1 and b_gate into one's rows of the two products, b2 into one more hidden unit,
  the last, that is 1 everywhere, act(16 x_one) * (x_one / 16) = 1 exactly
  (relu(16) = gelu_new(16) = 16 in float64), with b2 as its W_out row; an ungated MLP of a
  gated model gets `one` as its gate;
- BOS is the token ids' first position, as `Model.run` feeds it; a numeric-input model's
  input is the residual stream after its embedding, given with `start_at_layer=0`.

One path builds the parameters under HookedTransformer's names and shapes (`blocks.0.attn.
W_Q` of (n_heads, d_model, d_head), ...): 3.x copies them in; 4.x renames them to the
native model's `nn.Linear` weights, the names TransformerLens's own tracr loader
(transformer_lens/utilities/tracr.py) gives `TransformerBridge.load_state_dict` after
`boot_native`, and loads them strictly.

The results equal the NumPy forward pass up to float64 rounding (folding changes the
order of a few additions); tests/interp checks whole domains. What TransformerLens cannot
express (LayerNorms, blocks without a residual, the bilinear "linear" activation, mixed
activations, biases of a gated model with no `one` direction) is refused with the reason.
"""
from __future__ import annotations

import functools
import importlib.metadata
import warnings
from collections import defaultdict
from typing import Any, Callable, Sequence

import numpy as np
import torch

from rasp_sim.base.api_arguments import torch_device, torch_dtype
from rasp_sim.base.errors import CompileError, RaspTypeError

from .forward import embed_features
from .layer_pairs import block_map, pair_layers
from .tracr_backend.runtime import (as_program_types, compile_info, decode, is_numeric_input,
                                    numeric_features, token_ids)
from .weights import AttentionBlock, MLPBlock, Transformer, as_dense

TL_VERSION = importlib.metadata.version("transformer-lens")
# transformer-lens 4.0 removed HookedTransformer: its models are TransformerBridges.
BRIDGE = int(TL_VERSION.split(".")[0]) >= 4
if BRIDGE:
    from transformer_lens import TransformerBridge, TransformerBridgeConfig
else:
    from transformer_lens import HookedTransformer, HookedTransformerConfig

# The weight format's activations as TransformerLens names them: "gelu" is GPT-2's tanh
# form in both (compiler/forward.py, TransformerLens's gelu_new).
ACTIVATIONS = {"relu": "relu", "gelu": "gelu_new"}
ONE = "one"  # tracr's residual direction that is 1 at every position
ATTN_SCALE = 2.0 if BRIDGE else 1.0  # what the scores are divided by (module docstring)
# The bias unit of a gated model's MLPs: act(BIAS_GATE) = BIAS_GATE exactly for relu and
# gelu_new (tanh of ~160 is 1.0), and BIAS_GATE * (1 / BIAS_GATE) = 1 (powers of two).
BIAS_GATE = 16.0
_ROWS_PER_PASS = 1024  # inputs per forward pass in `run`: bounds the hidden layers' memory


class ExportError(CompileError):
    """A model TransformerLens cannot compute exactly, with the reason."""

    kind = "cannot export"


class RaspTransformer:
    """What `Model.to_transformer_lens` adds to TransformerLens's model: the model is a
    `RaspTransformerBridge` (4.x) or `RaspHookedTransformer` (3.x), a subclass of both
    this class and the library's (`_rasp_class`).

    `residual_labels` names each residual direction (as `Model.residual_labels`);
    `block_map[i]` is the (layer, "attn" | "mlp") sublayer that computes block i of
    `Model.layers`, so `cache["pattern", layer][:, h]` is head h of an attention block;
    `weights` is the model's weight format; `input` and `run` feed it as `Model.run` does."""

    residual_labels: tuple[str, ...]
    block_map: dict[int, tuple[int, str]]
    weights: Transformer
    cfg: Any  # the library's config (HookedTransformerConfig or TransformerBridgeConfig)

    def input(self, inputs: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """Keyword arguments of `self(**kw)` or `self.run_with_cache(**kw)` for inputs of
        one length: `input` the token ids [BOS] + tokens (B, n+1), or for a numeric-input
        model the residual stream after the embedding (B, n+1, D) with `start_at_layer` 0."""
        return model_input(self.weights, inputs, self.cfg.dtype, self.cfg.device)

    def run(self, inputs: Sequence[Sequence[Any]]) -> list:
        """Decoded outputs on `inputs` (any lengths), in the program's types, as
        `Model.run` gives them: the TransformerLens model's counterpart of it."""
        model: Any = self  # a torch module as well (the library's class)
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, sequence in enumerate(inputs):
            by_length[len(sequence)].append(i)
        out: list[list[Any]] = [[] for _ in inputs]
        with torch.inference_mode():
            for members in by_length.values():
                for start in range(0, len(members), _ROWS_PER_PASS):
                    batch = members[start:start + _ROWS_PER_PASS]
                    logits = model(**self.input([inputs[i] for i in batch]))
                    for i, values in zip(batch, decode(self.weights, logits.double().cpu().numpy())):
                        out[i] = values
        return as_program_types(self.weights, out)


@functools.cache
def _rasp_class(base: type) -> type:
    """RaspTransformer's methods on the library's class `base`: RaspHookedTransformer or
    RaspTransformerBridge."""
    return type(f"Rasp{base.__name__}", (RaspTransformer, base),
                {"__module__": __name__, "__doc__": RaspTransformer.__doc__})


def model_input(weights: Transformer, inputs: Sequence[Sequence[Any]], dtype: Any = torch.float64,
                device: Any = None) -> dict[str, Any]:
    """`RaspTransformer.input` for `weights` (checked as `Model.run` checks inputs)."""
    if isinstance(inputs, (str, bytes)) or not inputs:
        raise RaspTypeError("give a non-empty list of inputs, e.g. ['abc']")
    if len({len(sequence) for sequence in inputs}) > 1:
        raise RaspTypeError("inputs of one forward pass must have one length (run groups "
                            "them by length)")
    if not is_numeric_input(weights):
        ids = [token_ids(weights, sequence, i) for i, sequence in enumerate(inputs)]
        return {"input": torch.tensor(ids, dtype=torch.long, device=device)}
    features = np.array([numeric_features(weights, sequence, i)
                         for i, sequence in enumerate(inputs)])[..., None]
    residual = embed_features(weights, features)  # float64, the NumPy forward's own embedding
    return {"input": torch.as_tensor(residual, dtype=dtype, device=device), "start_at_layer": 0}


def to_transformer_lens(weights: Transformer, dtype: Any = torch.float64,
                        device: Any = None) -> Any:
    """The compiled model `weights` as a TransformerLens model of `dtype` (a
    RaspTransformerBridge on 4.x, a RaspHookedTransformer on 3.x; see the module's
    docstring), or an ExportError saying what TransformerLens cannot express."""
    torch_dtype("to_transformer_lens", dtype)
    torch_device("to_transformer_lens", device)
    info = compile_info(weights)
    mlps = [block for block in weights.layers if isinstance(block, MLPBlock)]
    activation = _activation(weights)
    gated = any(block.gated for block in mlps)
    one = _one_direction(weights) if gated else None
    if gated and one is None and any(_needs_one(block) for block in mlps):
        raise ExportError(
            "a gated MLP's biases, or an ungated MLP beside gated ones, need a residual "
            "direction that is 1 at every position (TransformerLens's gated MLP has no bias "
            "inside the product, 4.x's none at all); this model has no such 'one' direction")
    layers = pair_layers(weights.layers)
    heads = [head for block in weights.layers if isinstance(block, AttentionBlock)
             for head in block.heads]
    n_heads = max((len(block.heads) for block in weights.layers
                   if isinstance(block, AttentionBlock)), default=1)
    d_head = max([1] + [max(_key_size(head), len(_value_columns(head))) for head in heads])
    bias_unit = gated and any(np.any(block.b2) for block in mlps)
    d_mlp = max([1] + [block.b1.shape[0] for block in mlps]) + bias_unit
    width = weights.width
    config = dict(
        n_layers=len(layers), d_model=width, n_ctx=info["max_len"] + 1, d_head=d_head,
        n_heads=n_heads, d_mlp=d_mlp,
        d_vocab=1 if weights.token_embed is None else weights.token_embed.shape[0],
        d_vocab_out=weights.unembed.shape[1], attn_only=not mlps,
        act_fn=activation or "relu",  # an attention-only model has no MLP to use it
        normalization_type=None, use_attn_scale=BRIDGE, attn_scale=ATTN_SCALE, gated_mlp=gated,
        attention_dir="causal" if weights.causal else "bidirectional",
        positional_embedding_type="standard", default_prepend_bos=False, init_weights=False,
        dtype=dtype, device=device, model_name=f"rasp-sim {info.get('name', 'model')}")
    state: dict[str, np.ndarray] = {
        "embed.W_E": (np.zeros((1, width)) if weights.token_embed is None
                      else as_dense(weights.token_embed)),
        "pos_embed.W_pos": _rows(weights.pos_embed, info["max_len"] + 1, width),
        "unembed.W_U": as_dense(weights.unembed),
        "unembed.b_U": np.zeros(weights.unembed.shape[1]),
    }
    for layer, (attention, mlp) in enumerate(layers):
        attention_block = None if attention is None else weights.layers[attention]
        assert attention_block is None or isinstance(attention_block, AttentionBlock)
        state.update(_attention_state(f"blocks.{layer}.attn", attention_block, width, n_heads,
                                      d_head))
        if mlps:
            mlp_block = None if mlp is None else weights.layers[mlp]
            assert mlp_block is None or isinstance(mlp_block, MLPBlock)
            state.update(_mlp_state(f"blocks.{layer}.mlp", mlp_block, width, d_mlp, gated, one))
    model = (_transformer_bridge if BRIDGE else _hooked_transformer)(config, state)
    if weights.token_embed is None:  # its W_E is a zero placeholder: token ids mean nothing
        model.embed.register_forward_pre_hook(_refuse_token_ids)
    model.__class__ = _rasp_class(model.__class__)  # the library built it; add RaspTransformer's
    model.residual_labels = tuple(weights.residual_labels or ())
    model.block_map = block_map(weights.layers)
    model.weights = weights
    return model


def _hooked_transformer(config: dict[str, Any], state: dict[str, np.ndarray]) -> Any:
    """transformer-lens 3.x: a HookedTransformer of `config` holding `state`."""
    with warnings.catch_warnings():  # 3.x's notice that 4.0 drops HookedTransformer
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(HookedTransformerConfig(**config))
    _copy_parameters(model, state)
    return model


def _transformer_bridge(config: dict[str, Any], state: dict[str, np.ndarray]) -> Any:
    """transformer-lens 4.x: a TransformerBridge around the native transformer of `config`
    holding `state`, booted and loaded as TransformerLens's tracr loader does."""
    bridge = TransformerBridge.boot_native(
        TransformerBridgeConfig(**config), dtype=config["dtype"], device=config["device"],
        model_name=config["model_name"])
    native = {name: torch.as_tensor(value, dtype=bridge.cfg.dtype, device=bridge.cfg.device)
              for name, value in _native_state(state, config["gated_mlp"]).items()}
    # Not strict=True: 4.3 then also asks for its aliases of an ungated MLP's weights
    # (mlp.in for the native fc_in) and for the unembedding's bias, which the native model
    # lacks. The check that matters: every native parameter gets a value, nothing else.
    parameters = {name.replace("._original_component", "")
                  for name, _ in bridge.original_model.named_parameters()}
    unexpected = bridge.load_state_dict(native, strict=False).unexpected_keys
    if set(native) != parameters or unexpected:
        raise AssertionError(f"TransformerLens parameters {sorted(set(native) ^ parameters)} "
                             f"not matched, {sorted(unexpected)} unexpected (an unsupported "
                             "transformer-lens version?)")
    return bridge


def _heads_in(w: np.ndarray) -> np.ndarray:
    """W_Q, W_K, W_V (n_heads, d_model, d_head) as nn.Linear's weight (n_heads * d_head,
    d_model): output feature h * d_head + j is head h's column j."""
    return w.transpose(0, 2, 1).reshape(-1, w.shape[1])


def _heads_out(w: np.ndarray) -> np.ndarray:
    """W_O (n_heads, d_head, d_model) as nn.Linear's weight (d_model, n_heads * d_head)."""
    return w.reshape(-1, w.shape[2]).T


def _flat(b: np.ndarray) -> np.ndarray:
    return b.reshape(-1)


def _transpose(w: np.ndarray) -> np.ndarray:
    return w.T


# HookedTransformer's parameter (after "blocks.L.") -> the native model's (after
# "layers.L."), and how its array is laid out there; None: no such parameter, must be 0.
_NATIVE_BLOCK: dict[str, tuple[str | None, Callable[[np.ndarray], np.ndarray]]] = {
    **{f"attn.W_{x}": (f"attn.{x.lower()}.weight", _heads_in) for x in "QKV"},
    **{f"attn.b_{x}": (f"attn.{x.lower()}.bias", _flat) for x in "QKV"},
    "attn.W_O": ("attn.o.weight", _heads_out), "attn.b_O": ("attn.o.bias", _flat),
    "mlp.W_in": ("mlp.fc_in.weight", _transpose), "mlp.b_in": ("mlp.fc_in.bias", _flat),
    "mlp.W_out": ("mlp.fc_out.weight", _transpose), "mlp.b_out": ("mlp.fc_out.bias", _flat),
}
_NATIVE_GATED = {
    "mlp.W_gate": ("mlp.gate.weight", _transpose), "mlp.W_in": ("mlp.in.weight", _transpose),
    "mlp.W_out": ("mlp.out.weight", _transpose), "mlp.b_in": (None, _flat),
    "mlp.b_out": (None, _flat),
}


def _native_state(state: dict[str, np.ndarray], gated: bool) -> dict[str, np.ndarray]:
    """HookedTransformer-named parameters as TransformerLens 4's native model names them
    (transformer_lens/utilities/tracr.py's keys; nn.Linear weights are (out, in))."""
    table = {**_NATIVE_BLOCK, **(_NATIVE_GATED if gated else {})}
    native = {"tok_embed.weight": state["embed.W_E"], "pos.weight": state["pos_embed.W_pos"],
              "head.weight": state["unembed.W_U"].T}
    dropped = {"unembed.b_U": state["unembed.b_U"]}  # the native unembedding has no bias
    for key, value in state.items():
        if not key.startswith("blocks."):
            continue
        _, layer, name = key.split(".", 2)
        target, layout = table[name]
        if target is None:
            dropped[key] = value
        else:
            native[f"layers.{layer}.{target}"] = layout(value)
    for key, value in dropped.items():
        if np.any(value):
            raise AssertionError(f"{key} is not 0 but TransformerLens 4's native model has no "
                                 "such parameter")
    return native


def _refuse_token_ids(module: Any, args: Any) -> None:
    raise RaspTypeError("this model reads numbers, not token ids: pass its embedded "
                        "residual, hooked(**hooked.input([[0.5, -1.25, ...]])), which "
                        "starts at layer 0")


def _activation(weights: Transformer) -> str | None:
    """TransformerLens's act_fn for the model's MLPs, after the checks that it has one."""
    for index, block in enumerate(weights.layers):
        if block.norm is not None and block.norm.columns is not None:
            raise ExportError(f"block {index} has a LayerNorm of {len(block.norm.columns)} "
                              "residual columns (a compiled RASP layer_norm); "
                              "TransformerLens's LayerNorm normalises the whole residual "
                              "stream, so it cannot compute this block")
        if block.norm is not None:
            raise ExportError(f"block {index} has a LayerNorm of the whole residual stream: "
                              "compiled models have none, and this export does not map "
                              "LayerNorms")
        if not block.residual:
            raise ExportError(f"block {index} has no residual connection (TransformerLens's "
                              "sublayers always add to the residual)")
    if weights.final_norm is not None:
        raise ExportError("the model has a final LayerNorm: compiled models have none, and "
                          "this export does not map LayerNorms")
    found = {block.activation for block in weights.layers if isinstance(block, MLPBlock)}
    unknown = found - set(ACTIVATIONS)
    if unknown:
        raise ExportError(f"activation {sorted(unknown)[0]!r} has no TransformerLens "
                          f"counterpart (it has {', '.join(ACTIVATIONS)})")
    if len(found) > 1:
        raise ExportError(f"MLPs with different activations ({', '.join(sorted(found))}): "
                          "TransformerLens has one activation for every layer")
    return ACTIVATIONS[found.pop()] if found else None


def _needs_one(block: MLPBlock) -> bool:
    """Whether a block of a gated model needs the `one` direction (a bias or a gate)."""
    if not block.gated:
        return True
    assert block.b_gate is not None  # a gated block has both (weights.py)
    return bool(np.any(block.b1) or np.any(block.b_gate) or np.any(block.b2))


def _one_direction(weights: Transformer) -> int | None:
    """The index of the residual direction `one` if it is exactly 1 at every position of
    every input for every block: the embedding writes 1 there (token plus position
    embedding, or 0 from the input feature plus 1 from the position embedding) and no
    block writes it. None otherwise."""
    labels = list(weights.residual_labels or ())
    if ONE not in labels or weights.pos_embed is None:
        return None
    one = labels.index(ONE)
    positions = as_dense(weights.pos_embed)[:, one]
    if weights.token_embed is not None:
        embedded = as_dense(weights.token_embed)[:, one][:, None] + positions[None, :]
    elif weights.input_proj is not None and not np.any(as_dense(weights.input_proj)[:, one]):
        embedded = positions
    else:
        return None
    if not np.all(embedded == 1.0):
        return None
    for block in weights.layers:
        if isinstance(block, MLPBlock):
            written = np.any(as_dense(block.w2)[:, one]) or block.b2[one] != 0
        else:
            written = any(np.any(as_dense(head.w_v if head.w_o is None else head.w_o)[:, one])
                          for head in block.heads)
        if written:
            return None
    return one


def _key_size(head: Any) -> int:
    return int(head.w_q.shape[1])


def _value_columns(head: Any) -> np.ndarray:
    """The value dimensions a head needs: all of W_V's, or without W_O (W_V writes the
    residual directly) only its non-zero columns."""
    w_v = as_dense(head.w_v)
    if head.w_o is not None:
        return np.arange(w_v.shape[1])
    return np.flatnonzero(np.any(w_v != 0, axis=0))


def _attention_state(prefix: str, block: AttentionBlock | None, width: int, n_heads: int,
                     d_head: int) -> dict[str, np.ndarray]:
    q, k, v = (np.zeros((n_heads, width, d_head)) for _ in range(3))
    o = np.zeros((n_heads, d_head, width))
    for h, head in enumerate(block.heads if block is not None else ()):
        assert block is not None
        size = _key_size(head)
        q[h, :, :size] = (block.scale * ATTN_SCALE) * as_dense(head.w_q)
        k[h, :, :size] = as_dense(head.w_k)
        columns = _value_columns(head)
        v[h, :, :columns.size] = as_dense(head.w_v)[:, columns]
        if head.w_o is None:
            o[h, np.arange(columns.size), columns] = 1.0
        else:
            o[h, :columns.size] = as_dense(head.w_o)
    bias = np.zeros((n_heads, d_head))
    return {f"{prefix}.W_Q": q, f"{prefix}.W_K": k, f"{prefix}.W_V": v, f"{prefix}.W_O": o,
            f"{prefix}.b_Q": bias, f"{prefix}.b_K": bias, f"{prefix}.b_V": bias,
            f"{prefix}.b_O": np.zeros(width)}


def _mlp_state(prefix: str, block: MLPBlock | None, width: int, d_mlp: int, gated: bool,
               one: int | None) -> dict[str, np.ndarray]:
    w1, b1 = np.zeros((width, d_mlp)), np.zeros(d_mlp)
    gate = np.zeros((width, d_mlp))
    w2, b2 = np.zeros((d_mlp, width)), np.zeros(width)
    if block is not None:
        hidden = block.b1.shape[0]
        w1[:, :hidden], b1[:hidden] = as_dense(block.w1), block.b1
        w2[:hidden], b2[:] = as_dense(block.w2), block.b2
        if gated:
            if block.gated:
                assert block.w_gate is not None and block.b_gate is not None
                gate[:, :hidden] = as_dense(block.w_gate)
                gate_bias = block.b_gate
            else:  # relu(x W1 + b1) = relu(x W1 + b1) * x_one
                gate_bias = np.ones(hidden)
            if _needs_one(block):
                assert one is not None  # checked by to_transformer_lens
                w1[one, :hidden] += b1[:hidden]
                gate[one, :hidden] += gate_bias
                if np.any(b2):  # the bias unit, the last (to_transformer_lens sized d_mlp)
                    w1[one, -1], gate[one, -1], w2[-1] = BIAS_GATE, 1.0 / BIAS_GATE, b2
            b1[:], b2[:] = 0.0, 0.0
    if not gated:
        return {f"{prefix}.W_in": w1, f"{prefix}.b_in": b1, f"{prefix}.W_out": w2,
                f"{prefix}.b_out": b2}
    # TransformerLens's W_gate is the activation's side, its W_in the linear side.
    return {f"{prefix}.W_gate": w1, f"{prefix}.W_in": gate, f"{prefix}.b_in": np.zeros(d_mlp),
            f"{prefix}.W_out": w2, f"{prefix}.b_out": b2}


def _rows(matrix: Any, rows: int, width: int) -> np.ndarray:
    """The position embedding, or zeros for a model without one."""
    return np.zeros((rows, width)) if matrix is None else as_dense(matrix)[:rows]


def _copy_parameters(model: Any, state: dict[str, np.ndarray]) -> None:
    """Copy `state` into every parameter of the HookedTransformer `model` (created
    uninitialised, so a parameter left out would be garbage: the key sets must be equal)."""
    parameters = dict(model.named_parameters())
    if set(parameters) != set(state):
        raise AssertionError(f"TransformerLens parameters {sorted(set(parameters) ^ set(state))} "
                             "not matched (an unsupported transformer-lens version?)")
    with torch.no_grad():
        for name, parameter in parameters.items():
            value = torch.as_tensor(state[name], dtype=parameter.dtype, device=parameter.device)
            if value.shape != parameter.shape:
                raise AssertionError(f"{name}: shape {tuple(value.shape)}, TransformerLens "
                                     f"expects {tuple(parameter.shape)}")
            parameter.copy_(value)
