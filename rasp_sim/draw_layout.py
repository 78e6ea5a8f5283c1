"""A layered layout of a `draw.Drawing`: rows top to bottom, one band of rows per layer.

Graphviz's `dot` does this when installed; this is the fallback that needs no system
package. networkx gives the graph algorithms (topological order) but has no layered layout
with crossing reduction (its `multipartite_layout` keeps insertion order within a row), so
the few steps of the Sugiyama method needed here are written out:

1. Row of a node: its layer's first row plus its longest path from nodes of the same layer
   (a layer holds attention and then maps on the attention's output, so it may span rows).
   Every edge then points down, and each layer's rows are contiguous.
2. Order within a row: a few barycentre sweeps (each node moves towards the mean position of
   its neighbours in the row above, then below), the standard heuristic for fewer crossings
   (Sugiyama, Tagawa and Toda, 1981).
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from .draw import Drawing

_SWEEPS = 4


@dataclass(frozen=True)
class Layout:
    """`rows[r]` lists the nodes of row r, left to right; `layer_rows[l]` is the range of
    rows of layer l (empty when the layer has no node)."""

    rows: tuple[tuple[int, ...], ...]
    layer_rows: tuple[range, ...]

    def position(self) -> dict[int, tuple[float, float]]:
        """node -> (x, y): rows centred on x = 0, one unit apart; row 0 at y = 0, going
        down."""
        return {node: (column - (len(row) - 1) / 2, -float(r))
                for r, row in enumerate(self.rows) for column, node in enumerate(row)}


def layered_layout(picture: Drawing) -> Layout:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(picture.labels)))
    graph.add_edges_from((edge.tail, edge.head) for edge in picture.edges)
    level: dict[int, int] = {}
    for node in nx.topological_sort(graph):
        same_layer = [level[p] + 1 for p in graph.predecessors(node)
                      if picture.layers[p] == picture.layers[node]]
        level[node] = max(same_layer, default=0)
    layer_rows, first = [], 0
    for layer in range(len(picture.titles)):
        depth = max((level[n] + 1 for n in graph if picture.layers[n] == layer), default=0)
        layer_rows.append(range(first, first + depth))
        first += depth
    rows: list[list[int]] = [[] for _ in range(first)]
    for node in graph:
        rows[layer_rows[picture.layers[node]].start + level[node]].append(node)
    _reduce_crossings(graph, rows)
    return Layout(tuple(map(tuple, rows)), tuple(layer_rows))


def _reduce_crossings(graph: nx.DiGraph, rows: list[list[int]]) -> None:
    for sweep in range(_SWEEPS):
        downward = sweep % 2 == 0
        neighbours = graph.predecessors if downward else graph.successors
        for r in range(1, len(rows)) if downward else range(len(rows) - 2, -1, -1):
            fixed = {node: i for i, node in enumerate(rows[r - 1 if downward else r + 1])}
            keys = [_barycentre([fixed[n] for n in neighbours(node) if n in fixed], i)
                    for i, node in enumerate(rows[r])]
            rows[r] = [node for _, node in sorted(zip(keys, rows[r]))]


def _barycentre(placed: list[int], position: int) -> float:
    """The mean position of a node's placed neighbours; its own position if it has none."""
    return sum(placed) / len(placed) if placed else position
