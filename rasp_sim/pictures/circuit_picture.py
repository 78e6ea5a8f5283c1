"""A model's circuit graph (compiled/circuit.py) as a `Drawing`, so `rasp-sim circuit -o`
paints it with `rasp-sim draw`'s stack (DOT text, or matplotlib's layered layout): one
band for the embeddings, one per block, one for the unembedding; a head is drawn as an
aggregate, an MLP as a map, the unembedding as the root; each edge is labelled with the
roles that read it (q, k, v; in, gate) and dead nodes say so."""
from __future__ import annotations

from typing import Any

import networkx as nx

from .drawing import Drawing, Edge
from .trace_plot import short_at

_KINDS = {"token_embed": "input", "pos_embed": "input", "input_proj": "input", "input": "input",
          "head": "aggregate", "mlp": "map", "unembed": "call"}
_OPERATIONS_SHOWN = 3  # a merged MLP block may compute many: the rest are counted


def circuit_drawing(graph: nx.DiGraph) -> Drawing:
    """The drawing of `graph` (`Model.circuit()`, either naming)."""
    nodes = sorted(graph.nodes, key=lambda n: graph.nodes[n]["order"])
    blocks = sorted({graph.nodes[n]["block"] for n in nodes
                     if graph.nodes[n]["kind"] in ("head", "mlp")})
    band = {block: i + 1 for i, block in enumerate(blocks)}
    layers = []
    for node in nodes:
        data = graph.nodes[node]
        layers.append(0 if data["block"] is None else band.get(data["block"], len(blocks) + 1))
    titles = ["embedding"] + [f"block {block} ({_block_kind(graph, block)})"
                              for block in blocks] + ["unembedding"]
    index = {node: i for i, node in enumerate(nodes)}
    edges = tuple(Edge(index[a], index[b], ",".join(data["reads"]), dashed=data["dead"])
                  for a, b, data in graph.edges(data=True))
    return Drawing(labels=tuple(node_label(graph, n) for n in nodes),
                   kinds=tuple(_KINDS[graph.nodes[n]["kind"]] for n in nodes),
                   layers=tuple(layers), roots=frozenset({len(nodes) - 1}), edges=edges,
                   titles=tuple(titles))


def node_label(graph: nx.DiGraph, node: Any) -> str:
    """The node's id, its operations with their source line (file name and line only),
    and "dead" where the output does not depend on it."""
    data = graph.nodes[node]
    lines = [str(node)]
    operations = data["operations"]
    for entry in operations[:_OPERATIONS_SHOWN]:
        lines.append(entry["op"] + (f" @ {short_at(entry['at'])}" if entry.get("at") else ""))
    if len(operations) > _OPERATIONS_SHOWN:
        lines.append(f"(+{len(operations) - _OPERATIONS_SHOWN} more)")
    if data["dead"]:
        lines.append("(dead: the output does not read it)")
    return "\n".join(lines)


def _block_kind(graph: nx.DiGraph, block: int) -> str:
    kinds = {data["kind"] for _, data in graph.nodes(data=True) if data["block"] == block}
    return "attention" if "head" in kinds else "mlp"
