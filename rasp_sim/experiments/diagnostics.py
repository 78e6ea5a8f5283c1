"""How peaked a backbone's attention is: the entropy of each head's pattern.

A head whose scores are O(1) spreads its attention (entropy near that of the uniform
pattern); one whose scores grow with the width is near-argmax (entropy near 0), and a
trained embedding gets almost no gradient through it.
"""
from __future__ import annotations

import numpy as np

from rasp_sim.compiler import forward
from rasp_sim.compiler.weights import AttentionBlock, Transformer, as_dense
from .errors import ExperimentError


def attention_entropy(model: Transformer, ids: np.ndarray) -> list[float]:
    """Per attention layer of `model` on the token rows `ids` (B, N): the entropy of each
    head's pattern over the positions it may attend to, divided by that of the uniform
    pattern over them (log of their number), averaged over heads, rows and positions > 0
    (position 0 has one choice)."""
    if model.token_embed is None or model.pos_embed is None:
        raise ExperimentError("attention_entropy: the model has no token or position embedding")
    stream = model.token_embed[ids] + model.pos_embed[: ids.shape[1]]
    n = ids.shape[1]
    choices = np.arange(1, n + 1) if model.causal else np.full(n, n)
    uniform = np.log(choices[1:])
    out = []
    for block in model.layers:
        if isinstance(block, AttentionBlock):
            read = stream if block.norm is None else forward.layer_norm(stream, block.norm)
            ratios = []
            for head in block.heads:
                pattern = forward.softmax_attention(read @ as_dense(head.w_q),
                                                    read @ as_dense(head.w_k),
                                                    block.scale, model.causal)
                logs = np.log(np.where(pattern > 0, pattern, 1.0))
                entropy = -(pattern * logs).sum(axis=-1)[:, 1:]
                ratios.append(float((entropy / uniform).mean()))
            out.append(float(np.mean(ratios)))
        stream = forward.apply_block(stream, block, model.causal)
    return out
