"""Loading rasp-sim weights into PyTorch (optional: torch is not a dependency;
`pip install "rasp-sim[interp]"` installs it).

    import torch
    from rasp_sim.compiler.torch_loader import load_torch
    from rasp_sim.compiler.tracr_backend.runtime import numeric_features, token_ids
    net = load_torch("reverse.npz")                        # a torch.nn.Module, float64
    ids = torch.tensor([token_ids(net.weights, list("abc"))])
    out = net(ids)                                          # (1, 4, c); position 0 is BOS
    # categorical output: net.weights.output_encoder.values[i] for i in out.argmax(-1)[0, 1:]
    # a numeric-input model takes float64 features (B, n+1, 1) instead:
    # net(torch.tensor([numeric_features(net.weights, [0.5, -1.25])],
    #                  dtype=torch.float64).unsqueeze(-1))

The module computes exactly compiler/forward.py's forward pass: integer inputs are token
ids (token plus position embedding), floating ones real features (input_proj, plus the
position embedding when the model has one); attention blocks with their logit scale and
causal mask; MLPs with their activation (relu, gelu in GPT-2's tanh form, linear) and
optional gate; optional LayerNorms; the unembedding. Every weight is a frozen parameter
(sparse ones made dense).

dtype: float64 by default, the NumPy forward's own precision (it agrees with it to about
1e-15). Features must come in the module's precision or higher: `torch.tensor(list of
floats)` builds float32, which rounds every feature to 24 bits before the module sees it
(1.2e-7 error on a numeric matmul instead of 4e-16), so a float64 module refuses float32
features instead of silently widening already-rounded numbers. A float32 module (dtype=
torch.float32) takes any floating features and casts them down; keep PyTorch's default
`torch.set_float32_matmul_precision("highest")` then.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rasp_sim.base.api_arguments import torch_device, torch_dtype
from rasp_sim.base.errors import RaspTypeError

from .weights import AttentionBlock, LayerNorm, Transformer, WeightsError, as_dense, load


def load_torch(model: Transformer | str | Path, dtype: Any = None, device: Any = None) -> Any:
    """The weights (a Transformer or a weights file) as a `torch.nn.Module` of token ids
    (integer tensors) or features (floating tensors), its parameters of `dtype` (default
    torch.float64) on `device`. Its `dtype` attribute says which; floating features of a
    lower precision are refused with a RaspTypeError (see the module's docstring)."""
    torch_dtype("load_torch", dtype)
    torch_device("load_torch", device)
    import torch

    weights = model if isinstance(model, Transformer) else load(model)
    dtype = dtype or torch.float64
    activations = {
        "relu": torch.relu,
        "gelu": lambda z: torch.nn.functional.gelu(z, approximate="tanh"),  # as forward.py
        "linear": lambda z: z,
    }

    def tensor(array: Any) -> Any:
        if array is None:
            return None
        return torch.nn.Parameter(torch.as_tensor(as_dense(array), dtype=dtype, device=device),
                                  requires_grad=False)

    def norm(x: Any, ln: LayerNorm | None, params: Any) -> Any:
        if ln is None:
            return x
        if ln.columns is not None:  # a LayerNorm of some residual columns (forward.py)
            columns = list(ln.columns)
            out = x.clone()
            out[..., columns] = torch.nn.functional.layer_norm(
                x[..., columns], (len(columns),), params["gain"], params["bias"], ln.eps)
            return out
        return torch.nn.functional.layer_norm(x, x.shape[-1:], params["gain"], params["bias"],
                                              ln.eps)

    class CompiledTransformer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weights = weights
            self.dtype = dtype
            self.token_embed = tensor(weights.token_embed)
            self.pos_embed = tensor(weights.pos_embed)
            self.input_proj = tensor(weights.input_proj)
            self.unembed = tensor(weights.unembed)
            self.blocks = torch.nn.ModuleList()
            for block in weights.layers:
                params = torch.nn.ParameterDict()
                if isinstance(block, AttentionBlock):
                    for h, head in enumerate(block.heads):
                        for name in ("w_q", "w_k", "w_v", "w_o"):
                            if getattr(head, name) is not None:
                                params[f"{name}{h}"] = tensor(getattr(head, name))
                else:
                    for name in ("w1", "b1", "w2", "b2", "w_gate", "b_gate"):
                        if getattr(block, name) is not None:
                            params[name] = tensor(getattr(block, name))
                if block.norm is not None:
                    params["gain"], params["bias"] = tensor(block.norm.gain), tensor(block.norm.bias)
                holder = torch.nn.Module()
                holder.params = params
                self.blocks.append(holder)
            self.final = torch.nn.ParameterDict()
            if weights.final_norm is not None:
                self.final["gain"] = tensor(weights.final_norm.gain)
                self.final["bias"] = tensor(weights.final_norm.bias)

        def embed(self, inputs: Any) -> Any:
            """The residual stream at layer 0 (forward.embed_tokens / embed_features)."""
            if not torch.is_floating_point(inputs):
                if self.token_embed is None:
                    raise WeightsError("token_embed: the model has no token embedding (it "
                                       "takes real features: pass a floating tensor)")
                x = self.token_embed[inputs]
            else:
                if torch.finfo(inputs.dtype).eps > torch.finfo(dtype).eps:
                    raise RaspTypeError(
                        f"input: {inputs.dtype} features for a {dtype} module: they were "
                        f"rounded to {inputs.dtype} before the module saw them; build them "
                        f"as {dtype} (torch.tensor(..., dtype={dtype}))")
                x = inputs.to(dtype) if self.input_proj is None else inputs.to(dtype) @ self.input_proj
            if self.pos_embed is not None:
                n = x.shape[-2]
                if n > self.pos_embed.shape[0]:
                    raise WeightsError(f"pos_embed: sequence length {n} exceeds max_len "
                                       f"{self.pos_embed.shape[0]}")
                x = x + self.pos_embed[:n]
            return x

        def forward(self, inputs: Any) -> Any:
            x = self.embed(inputs)
            n = x.shape[-2]
            mask = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            for block, holder in zip(weights.layers, self.blocks):
                p: Any = holder.params  # a ParameterDict (torch's stubs say Module | Tensor)
                inner = norm(x, block.norm, p)
                if isinstance(block, AttentionBlock):
                    out = 0
                    for h, head in enumerate(block.heads):
                        scores = block.scale * (inner @ p[f"w_q{h}"]) @ (inner @ p[f"w_k{h}"]).transpose(-1, -2)
                        if weights.causal:
                            scores = scores.masked_fill(~mask, float("-inf"))
                        values = torch.softmax(scores, dim=-1) @ (inner @ p[f"w_v{h}"])
                        out = out + (values @ p[f"w_o{h}"] if head.w_o is not None else values)
                else:
                    hidden = activations[block.activation](inner @ p["w1"] + p["b1"])
                    if block.gated:
                        hidden = hidden * (inner @ p["w_gate"] + p["b_gate"])
                    out = hidden @ p["w2"] + p["b2"]
                x = x + out if block.residual else out
            return norm(x, weights.final_norm, self.final) @ self.unembed

    return CompiledTransformer()
