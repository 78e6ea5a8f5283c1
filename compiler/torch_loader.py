"""Loading rasp-sim weights into PyTorch (optional: torch is not a dependency).

    from rasp_sim.compiler.torch_loader import load_torch
    from rasp_sim.compiler.tracr_backend.runtime import token_ids
    net = load_torch("reverse.npz")                        # a torch.nn.Module, float64
    ids = torch.tensor([token_ids(net.weights, list("abc"))])
    out = net(ids)                                          # (1, 4, c); position 0 is BOS
    # categorical output: net.weights.output_encoder.values[i] for i in out.argmax(-1)[0, 1:]

The module computes exactly compiler/forward.py's forward pass (token and position
embeddings, attention blocks with their logit scale and causal mask, ReLU MLPs, optional
LayerNorms, the unembedding), with every weight as a frozen parameter. Keep PyTorch's
default `torch.set_float32_matmul_precision("highest")` if you cast to float32.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .weights import AttentionBlock, LayerNorm, Transformer, WeightsError, as_dense, load


def load_torch(model: Transformer | str | Path, dtype: Any = None, device: Any = None) -> Any:
    """The weights (a Transformer or an .npz path) as a `torch.nn.Module` of token ids."""
    import torch

    weights = model if isinstance(model, Transformer) else load(model)
    if weights.token_embed is None or weights.pos_embed is None:
        raise WeightsError("load_torch reads token-id models (token and position "
                           "embeddings); this model takes real features (use forward.py)")
    dtype = dtype or torch.float64

    def tensor(array: Any) -> Any:
        return torch.nn.Parameter(torch.as_tensor(as_dense(array), dtype=dtype, device=device),
                                  requires_grad=False)

    def norm(x: Any, ln: LayerNorm | None, params: Any) -> Any:
        if ln is None:
            return x
        return torch.nn.functional.layer_norm(x, x.shape[-1:], params["gain"], params["bias"],
                                              ln.eps)

    class CompiledTransformer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weights = weights
            self.token_embed = tensor(weights.token_embed)
            self.pos_embed = tensor(weights.pos_embed)
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
                    for name in ("w1", "b1", "w2", "b2"):
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

        def forward(self, ids: Any) -> Any:
            n = ids.shape[-1]
            x = self.token_embed[ids] + self.pos_embed[:n]
            mask = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            for block, holder in zip(weights.layers, self.blocks):
                p = holder.params
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
                    out = torch.relu(inner @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
                x = x + out if block.residual else out
            return norm(x, weights.final_norm, self.final) @ self.unembed

    return CompiledTransformer()
