"""A deliberately plain forward pass (one sequence, one query position at a time, Python
softmax) used as the independent reference for compiler/forward.py and the universal
transformers. Shares no code with compiler.forward."""
from __future__ import annotations

import math

import numpy as np

from rasp_sim.compiler.weights import as_dense


def _norm(x, ln):
    return np.stack([(row - row.mean()) / math.sqrt(row.var() + ln.eps) * ln.gain + ln.bias
                     for row in x])


def _activation(name, z):
    if name == "relu":
        return np.where(z > 0, z, 0.0)
    if name == "gelu":  # GPT-2's tanh form, elementwise in plain Python
        return np.vectorize(lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi)
                                                                 * (v + 0.044715 * v ** 3))))(z)
    assert name == "linear", name
    return z


def reference_sequence(model, x):
    """Outputs (N, c) for one initial residual stream x (N, D)."""
    n = len(x)
    for block in model.layers:
        inner = x if block.norm is None else _norm(x, block.norm)
        if hasattr(block, "heads"):
            out = np.zeros_like(x)
            for head in block.heads:
                q, k = inner @ as_dense(head.w_q), inner @ as_dense(head.w_k)
                v = inner @ as_dense(head.w_v)
                if head.w_o is not None:
                    v = v @ as_dense(head.w_o)
                for i in range(n):
                    keys = range(i + 1) if model.causal else range(n)
                    logits = [block.scale * float(q[i] @ k[j]) for j in keys]
                    top = max(logits)
                    weights = [math.exp(s - top) for s in logits]
                    out[i] += sum(w * v[j] for w, j in zip(weights, keys)) / sum(weights)
        else:
            hidden = _activation(block.activation, inner @ as_dense(block.w1) + block.b1)
            if block.w_gate is not None:
                hidden = hidden * (inner @ as_dense(block.w_gate) + block.b_gate)
            out = hidden @ as_dense(block.w2) + block.b2
        x = x + out if block.residual else out
    if model.final_norm is not None:
        x = _norm(x, model.final_norm)
    return x @ as_dense(model.unembed)


def reference_tokens(model, ids):
    return np.stack([reference_sequence(model, np.stack(
        [model.token_embed[t] + model.pos_embed[i] for i, t in enumerate(seq)])) for seq in ids])


def reference_features(model, features):
    proj = None if model.input_proj is None else as_dense(model.input_proj)
    out = []
    for x in features:
        stream = x if proj is None else x @ proj
        if model.pos_embed is not None:
            stream = stream + np.stack([model.pos_embed[i] for i in range(len(x))])
        out.append(reference_sequence(model, stream))
    return np.stack(out)
