"""How the weight format's flat list of blocks becomes TransformerLens's layers (one
attention sublayer then one MLP each; docs/transformer_lens.md): torch-free, so the
circuit graph (compiled/circuit.py) names TransformerLens hooks without importing torch,
and the export (transformer_lens_export.py) builds its layers from the same pairing."""
from __future__ import annotations

from typing import Any, Sequence

from .weights import AttentionBlock


def pair_layers(blocks: Sequence[Any]) -> list[tuple[int | None, int | None]]:
    """Block indices as (attention, MLP) layers, None where the layer's sublayer is empty:
    an attention block and the MLP right after it share a layer; an MLP with no attention
    before it, or an attention with no MLP after it, gets an empty partner."""
    layers: list[list[int | None]] = []
    for index, block in enumerate(blocks):
        if isinstance(block, AttentionBlock):
            layers.append([index, None])
        elif layers and layers[-1][0] is not None and layers[-1][1] is None:
            layers[-1][1] = index
        else:
            layers.append([None, index])
    return [(attention, mlp) for attention, mlp in layers]


def block_map(blocks: Sequence[Any]) -> dict[int, tuple[int, str]]:
    """Block index -> (layer, "attn" | "mlp"): the sublayer of TransformerLens's model
    that computes it (`RaspTransformer.block_map`)."""
    return {index: (layer, kind) for layer, pair in enumerate(pair_layers(blocks))
            for index, kind in zip(pair, ("attn", "mlp")) if index is not None}
