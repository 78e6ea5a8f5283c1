"""What is drawn, independent of the renderer: the nodes, layers, edges and selector grids
of a picture (built by draw.py; laid out by draw_layout.py, painted by draw_matplotlib.py,
written as DOT by draw.py), below all of them so that none imports another in a circle."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edge:
    """An edge from an input (`tail`) to its user (`head`), as indices into the nodes."""

    tail: int
    head: int
    label: str = ""  # "k"/"q" for a select's keys/queries, "v" for an aggregate's values
    dashed: bool = False  # an aggregate's selector


@dataclass(frozen=True)
class Grid:
    """A selector's value on the example: `rows[q][k]` is whether query q selects key k;
    `tokens` label both axes."""

    rows: tuple[tuple[bool, ...], ...]
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class Drawing:
    """What is drawn, independent of the renderer: node i has `labels[i]`, `kinds[i]`
    (input, selector, aggregate, map, or call: a folded library call), sits in layer
    `layers[i]` (0 = inputs) and, for a selector drawn on an input, has `grids[i]`;
    `titles[l]` names layer l."""

    labels: tuple[str, ...]
    kinds: tuple[str, ...]
    layers: tuple[int, ...]
    roots: frozenset[int]
    edges: tuple[Edge, ...]
    titles: tuple[str, ...]
    grids: tuple[Grid | None, ...] = ()

    def grid(self, node: int) -> Grid | None:
        return self.grids[node] if self.grids else None
