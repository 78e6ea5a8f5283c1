"""Layer and head analysis of an s-op graph: the original RASP's cost model, plus extras.

Public interface (stable; the CLI `rasp-sim analyse FILE NAME` prints it):

- `analyse(root) -> Analysis`: `root` is one graph node (s-op or selector) or a sequence
  of them. Raises `RaspTypeError` if `root` is not a graph node.
- `Analysis.n_layers`, `Analysis.heads` (heads per layer, layers 1..L: the original's
  numbers), `Analysis.layers` (one `Layer` per layer with its `Head`s and `Map`s),
  `Analysis.input_maps` (the maps of depth 0, computed before layer 1).
- `Analysis.node_depth(node)`, `Analysis.selector_depth(selector)`: the depth of any node
  of the analysed graph; an s-op of depth d is computed in layer d (0 = from the inputs).
- `Analysis.to_json() -> dict`: JSON-native dict for `--json`, keys `layers`, `heads`,
  `input_maps`, `per_layer` (see `Analysis.to_json`).
- `format_table(analysis) -> str`: a readable table (layer, heads, value widths, maps).
- `node_label(node) -> str`: a node's display name, shared with `rasp_sim.pictures.draw`.

Depth follows docs/language.md exactly (the original's greedy "as early as possible"
schedule): inputs and constants 0; maps add no depth; `select` is 1 + max(depth of keys,
queries); a composite selector is 1 + max over all its underlying key and query s-ops;
`aggregate(sel, v)` is max(depth(sel), depth(v) + 1). The heads of layer l are the distinct
selector *objects* (identity, not structure) among the aggregates placed in layer l; a
`sum` aggregate (extension) is a head exactly like a mean. The extra columns of
docs/constructions.md are each head's value width (distinct value s-ops aggregated
through that selector in that layer) and the number of maps per layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import networkx as nx

from ..core import graph
from ..base.errors import RaspTypeError


# Node reprs nest the whole graph (and recurse), so these classes print short summaries.


@dataclass(frozen=True, eq=False, repr=False)
class Head:
    """One attention head: one selector object and the aggregates reading through it in
    one layer."""

    layer: int
    selector: graph.Selector
    aggregates: tuple[graph.Aggregate, ...]

    @property
    def values(self) -> tuple[graph.SOp, ...]:
        """The distinct value s-ops (by identity), in program order (depth-first, inputs
        left to right)."""
        return tuple({id(a.values): a.values for a in self.aggregates}.values())

    @property
    def value_width(self) -> int:
        return len(self.values)

    @property
    def reductions(self) -> tuple[str, ...]:
        """Sorted distinct reductions: ("mean",), ("sum",) or ("mean", "sum")."""
        return tuple(sorted({a.reduction for a in self.aggregates}))

    def __repr__(self) -> str:
        return (f"Head(layer={self.layer}, selector={node_label(self.selector)!r}, "
                f"value_width={self.value_width}, reductions={self.reductions})")


@dataclass(frozen=True, eq=False, repr=False)
class Layer:
    """Layer `index` (1-based): its attention heads, then the maps computed after them."""

    index: int
    heads: tuple[Head, ...]
    maps: tuple[graph.Map, ...]

    def __repr__(self) -> str:
        return f"Layer({self.index}, heads={self.heads}, maps={len(self.maps)})"


@dataclass(frozen=True, eq=False, repr=False)
class Analysis:
    """The schedule of `roots` and everything they depend on: `layers[l - 1]` is layer l."""

    roots: tuple[graph.Node, ...]
    layers: tuple[Layer, ...]
    input_maps: tuple[graph.Map, ...]
    # The analysed graph (edges child -> parent), for drawing and for the compiler.
    graph: nx.DiGraph
    _depth: Mapping[graph.Node, int]

    def __repr__(self) -> str:
        return (f"Analysis(layers={self.n_layers}, heads={self.heads}, "
                f"input_maps={len(self.input_maps)})")

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def heads(self) -> tuple[int, ...]:
        """Heads per layer for layers 1..L: the original's numbers."""
        return tuple(len(layer.heads) for layer in self.layers)

    def node_depth(self, node: graph.Node) -> int:
        try:
            return self._depth[node]
        except KeyError:
            raise KeyError(f"{node_label(node)!r} is not in the analysed graph") from None

    def selector_depth(self, selector: graph.Selector) -> int:
        if not isinstance(selector, graph.Selector):
            raise TypeError(f"expected a selector, got {type(selector).__name__}")
        return self.node_depth(selector)

    def to_json(self) -> dict[str, Any]:
        """`{"layers": L, "heads": [h_1..h_L], "input_maps": m0, "per_layer": [{"layer": l,
        "maps": m, "heads": [{"selector": label, "value_width": w, "values": [labels],
        "reductions": ["mean"|"sum", ...]}]}]}`."""
        return {
            "layers": self.n_layers,
            "heads": list(self.heads),
            "input_maps": len(self.input_maps),
            "per_layer": [
                {
                    "layer": layer.index,
                    "maps": len(layer.maps),
                    "heads": [
                        {
                            "selector": node_label(head.selector),
                            "value_width": head.value_width,
                            "values": [node_label(v) for v in head.values],
                            "reductions": list(head.reductions),
                        }
                        for head in layer.heads
                    ],
                }
                for layer in self.layers
            ],
        }


def _depth_of(node: graph.Node, depth: Mapping[graph.Node, int]) -> int:
    """Depth of `node` given the depths of its children (docs/language.md)."""
    if isinstance(node, (graph.Tokens, graph.Indices, graph.Full)):
        return 0
    if isinstance(node, graph.Map):
        return max((depth[c] for c in node.inputs), default=0)
    if isinstance(node, graph.Select):
        return 1 + max(depth[node.keys], depth[node.queries])
    if isinstance(node, (graph.SelectorAnd, graph.SelectorOr, graph.SelectorNot)):
        # "1 + max over all underlying key and query s-ops" equals the max of the operand
        # selectors' depths, by induction, and avoids re-walking nested composites.
        return max(depth[c] for c in node.children())
    if isinstance(node, graph.Aggregate):
        # +1 on values: an attention output is readable only by a later layer.
        return max(depth[node.selector], depth[node.values] + 1)
    raise TypeError(f"the analyser does not know graph node type {type(node).__name__}")


def _as_roots(root: graph.Node | Sequence[graph.Node]) -> tuple[graph.Node, ...]:
    roots = (root,) if isinstance(root, graph.Node) else root
    if not isinstance(roots, (list, tuple)) or not roots or not all(
        isinstance(r, graph.Node) for r in roots
    ):
        raise RaspTypeError(
            f"can only analyse s-ops and selectors, got {type(root).__name__}: {root!r:.60}"
        )
    return tuple(roots)


def analyse(root: graph.Node | Sequence[graph.Node]) -> Analysis:
    """Schedule `root` (and everything it depends on) into layers and heads."""
    roots = _as_roots(root)
    g = graph.to_networkx(roots)
    depth: dict[graph.Node, int] = {}
    for node in nx.topological_sort(g):  # iterative, children first: deep graphs are fine
        depth[node] = _depth_of(node, depth)
    n_layers = max(depth.values())

    # Group aggregates by (layer, selector identity); dicts keep first-seen order.
    heads: list[dict[graph.Selector, list[graph.Aggregate]]] = [{} for _ in range(n_layers + 1)]
    maps: list[list[graph.Map]] = [[] for _ in range(n_layers + 1)]
    for node in g.nodes:  # insertion order: depth-first, inputs left to right
        if isinstance(node, graph.Aggregate):
            heads[depth[node]].setdefault(node.selector, []).append(node)
        elif isinstance(node, graph.Map):
            maps[depth[node]].append(node)
    layers = tuple(
        Layer(
            index=d,
            heads=tuple(Head(d, sel, tuple(aggs)) for sel, aggs in heads[d].items()),
            maps=tuple(maps[d]),
        )
        for d in range(1, n_layers + 1)
    )
    return Analysis(tuple(roots), layers, tuple(maps[0]), g, depth)


_SELECTOR_WORDS = {graph.SelectorAnd: "and", graph.SelectorOr: "or", graph.SelectorNot: "not"}


def node_label(node: graph.Node) -> str:
    """`node.name` if set, else a short description such as `select(==)` or `map +`."""
    if node.name:
        return node.name
    if isinstance(node, graph.Tokens):
        return f"tokens_{node.kind}"
    if isinstance(node, graph.Indices):
        return "indices"
    if isinstance(node, graph.Full):
        return repr(node.value)
    if isinstance(node, graph.Map):
        return f"map {node.op}"
    if isinstance(node, graph.Select):
        return f"select({node.op})"
    if isinstance(node, graph.Aggregate):
        return "aggregate" if node.reduction == "mean" else f"aggregate {node.reduction}"
    if type(node) in _SELECTOR_WORDS:
        return f"selector {_SELECTOR_WORDS[type(node)]}"
    return type(node).__name__


def _head_cell(head: Head) -> str:
    kinds = "+".join(head.reductions)
    return str(head.value_width) if kinds == "mean" else f"{head.value_width} ({kinds})"


def format_table(analysis: Analysis) -> str:
    """The schedule as text: a summary line, a row for the maps on the inputs (depth 0,
    before layer 1), then one row per layer 1..L."""
    rows: list[tuple[str, str, str, str]] = [("layer", "heads", "value widths", "maps")]
    rows.append(("inputs", "-", "-", str(len(analysis.input_maps))))
    for layer in analysis.layers:
        widths = ", ".join(_head_cell(h) for h in layer.heads) or "-"
        rows.append((str(layer.index), str(len(layer.heads)), widths, str(len(layer.maps))))
    sizes = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        f"layers: {analysis.n_layers}  heads: {list(analysis.heads)}",
        *(
            "  ".join(cell.rjust(size) if i != 2 else cell.ljust(size)
                      for i, (cell, size) in enumerate(zip(row, sizes))).rstrip()
            for row in rows
        ),
    ]
    return "\n".join(lines)


__all__ = ["Analysis", "Head", "Layer", "analyse", "format_table", "node_label"]
