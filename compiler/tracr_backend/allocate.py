"""Layer allocation: the craft blocks of the graph into attention and MLP sublayers.

Replaces tracr's `craft_graph_to_model`, whose depth computation walks every path of the
graph from the inputs (exponential in the program: a 2 x 2 attention simulator spent 23 s
and 3.3 million calls there) and whose placement is a heuristic (its own comment says so).
Here each block takes the earliest sublayer of its kind after everything it reads, in one
pass in topological order: attention sublayers are the even slots 0, 2, 4, ..., MLP
sublayers the odd ones, and an attention-then-MLP pair (tracr's selector width, a head with
its BOS scrub, a softmax and its pick) takes an even slot and the odd one after it. This is
the shallowest placement for the given blocks (every block sits right after its latest
input), so a model never has more layers than tracr's allocation gives it.
"""
from __future__ import annotations

from collections import defaultdict

import networkx as nx
from tracr.compiler import nodes
from tracr.craft import bases, transformers

from .blocks import NormedMLP


def _kind(block: object) -> str:
    if isinstance(block, transformers.MLP):
        return "mlp"
    if isinstance(block, transformers.SeriesWithResiduals):
        return "pair"
    return "attention"


def allocate(graph: nx.DiGraph) -> tuple[transformers.SeriesWithResiduals, list[list[str]]]:
    """The craft model: blocks grouped by slot, heads in parallel, MLPs combined; and per
    layer of it, the ids of the graph nodes whose blocks it holds."""
    done: dict[str, int] = {}  # node -> the last slot its value needs (-1: an input)
    by_slot: dict[int, list] = defaultdict(list)
    sources: dict[int, list[str]] = defaultdict(list)
    for node_id in nx.topological_sort(graph):
        ready = max((done[p] for p in graph.predecessors(node_id)), default=-1)
        block = graph.nodes[node_id].get(nodes.MODEL_BLOCK)
        if block is None:
            done[node_id] = ready
            continue
        kind = _kind(block)
        slot = ready + 1
        if (slot % 2 == 1) != (kind == "mlp"):  # attention and pairs start on even slots
            slot += 1
        # one LayerNorm per MLP block: a second normalised MLP takes the next MLP slot
        while isinstance(block, NormedMLP) and any(isinstance(b, NormedMLP)
                                                   for b in by_slot[slot]):
            slot += 2
        if kind == "pair":
            attention, mlp = block.blocks
            by_slot[slot].append(attention)
            by_slot[slot + 1].append(mlp)
            sources[slot + 1].append(node_id)
            done[node_id] = slot + 1
        else:
            by_slot[slot].append(block)
            done[node_id] = slot
        sources[slot].append(node_id)
    residual = bases.join_vector_spaces(*[b.residual_space for blocks in by_slot.values()
                                          for b in blocks])
    layers: list = []
    for slot in sorted(by_slot):
        for block in by_slot[slot]:
            block.residual_space = residual
        if slot % 2 == 0:
            layers.append(transformers.MultiAttentionHead(by_slot[slot]))
        else:
            layers.append(_combined(by_slot[slot]))
    return transformers.SeriesWithResiduals(layers), [sources[slot] for slot in sorted(by_slot)]


def _combined(mlps: list[transformers.MLP]) -> transformers.MLP:
    """The slot's MLPs in parallel, keeping the LayerNorm of its (one) NormedMLP: no other
    MLP reads the directions it normalises (a row gathered for that LayerNorm only)."""
    combined = transformers.MLP.combine_in_parallel(mlps)
    normed = [b for b in mlps if isinstance(b, NormedMLP)]
    if not normed:
        return combined
    return NormedMLP(combined.fst, combined.snd, combined.residual_space,
                     normalised=normed[0].normalised, eps=normed[0].eps)
