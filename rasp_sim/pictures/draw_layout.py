"""A layered layout of a `draw.Drawing`, in points: rows top to bottom, one band per layer,
every box sized to its text (or selector grid) so that nothing overlaps by construction.

networkx gives the graph algorithms (topological order) but has no layered layout with
crossing reduction or sized boxes (its `multipartite_layout` keeps insertion order and
treats nodes as points), so the few steps of the Sugiyama method needed here are
written out:

1. Row of a node: its layer's first row plus its longest path from nodes of the same layer
   (a layer holds attention and then maps on the attention's output, so it may span rows).
   Every edge then points down, and each layer's rows are contiguous.
2. Order within a row: a few barycentre sweeps (each node moves towards the mean position of
   its neighbours in the row above, then below), the standard heuristic for fewer crossings
   (Sugiyama, Tagawa and Toda, 1981).
3. Folding (the size rule of docs/cli.md, "Layers and heads"): a row wider than `MAX_WIDTH` continues on
   the next line of its band, so the picture is never wider than `MAX_WIDTH`; bands stack
   in one column while they fit `MAX_HEIGHT`, and a taller picture continues in a new
   column to the right (one or more whole layers per column).
4. x in a row: each box as near the mean x of the boxes it reads as the boxes to its left
   allow, then the row shifted as a whole so that it sits centred on those means.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import networkx as nx
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from .drawing import Drawing

FONT_SIZE = 9.0  # points; at 100 dpi a line of text is 12.5 px high
TITLE_SIZE = 8.0
LINE_SPACING = 1.2  # matplotlib's default for multi-line text
PAD = 5.0  # points between a box's border and its text
CELL = 11.0  # a selector grid's cell
GRID_LABEL = 26.0  # room for the token labels along a grid's axes
H_GAP, V_GAP = 14.0, 26.0  # between boxes in a row; between rows (the arrows' room)
BAND_TOP = 8.0  # room above a band's first row
WIDTH_SLACK = 1.04  # Agg's hinted glyphs come out a little wider than their outlines
MARGIN = 8.0
# 2,000 px at the default 100 dpi: 20 inches of 72 points.
MAX_WIDTH = MAX_HEIGHT = 2000 / 100 * 72
_SWEEPS = 4


@dataclass(frozen=True)
class Rect:
    """An axis-aligned box: centre (x, y), size (w, h), y growing downwards."""

    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: "Rect") -> bool:
        return (abs(self.x - other.x) * 2 < self.w + other.w
                and abs(self.y - other.y) * 2 < self.h + other.h)


@dataclass(frozen=True)
class Band:
    """Layer `layer`'s shaded band and its title (`title` is where the text sits)."""

    layer: int
    area: Rect
    title: Rect


@dataclass(frozen=True)
class Layout:
    """`boxes[i]` is node i's box; `width`, `height` the picture's size, in points."""

    boxes: tuple[Rect, ...]
    bands: tuple[Band, ...]
    width: float
    height: float

    def labelled_rects(self) -> list[Rect]:
        """Every rectangle that holds text: the node boxes and the band titles (none may
        overlap another)."""
        return [*self.boxes, *(band.title for band in self.bands)]


@lru_cache(maxsize=4096)
def text_size(text: str, size: float = FONT_SIZE) -> tuple[float, float]:
    """(width, height) of `text` in points, as matplotlib draws it (DejaVu Sans)."""
    lines = text.splitlines() or [""]
    font = FontProperties(size=size)
    width = max(TextToPath().get_text_width_height_descent(line, font, ismath=False)[0]
                for line in lines)
    return width * WIDTH_SLACK, len(lines) * size * LINE_SPACING


def title_text(title: str) -> str:
    """A band title as drawn in the left margin: `layer 2:` over `1 head(s), 0 map(s)`."""
    return title.replace(": ", ":\n", 1)


def box_size(picture: Drawing, node: int) -> tuple[float, float]:
    """A node's box: its text, and below it its selector grid if it has one."""
    width, height = text_size(picture.labels[node])
    grid = picture.grid(node)
    if grid is not None:
        side = len(grid.rows) * CELL
        width = max(width, side + GRID_LABEL)
        height += side + GRID_LABEL
    return width + 2 * PAD, height + 2 * PAD


def _rows(picture: Drawing) -> tuple[nx.DiGraph, list[list[int]], list[range]]:
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
    return graph, rows, layer_rows


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


def _fold(row: list[int], sizes: list[tuple[float, float]],
          room: float) -> list[list[int]]:
    """`row` cut into lines no wider than `room` (a box wider than that alone)."""
    lines: list[list[int]] = [[]]
    width = 0.0
    for node in row:
        extra = sizes[node][0] + (H_GAP if lines[-1] else 0.0)
        if lines[-1] and width + extra > room:
            lines.append([])
            extra, width = sizes[node][0], 0.0
        lines[-1].append(node)
        width += extra
    return lines


def _place_line(line: list[int], sizes: list[tuple[float, float]],
                wanted: list[float]) -> list[float]:
    """x centres for `line`: each at its wanted x or right of its left neighbour, then
    all shifted so the mean offset from the wanted x is zero."""
    xs: list[float] = []
    for i, node in enumerate(line):
        x = wanted[i]
        if xs:
            x = max(x, xs[-1] + (sizes[line[i - 1]][0] + sizes[node][0]) / 2 + H_GAP)
        xs.append(x)
    shift = sum(x - w for x, w in zip(xs, wanted)) / len(xs)
    return [x - shift for x in xs]


def layered_layout(picture: Drawing) -> Layout:
    graph, rows, layer_rows = _rows(picture)
    sizes = [box_size(picture, node) for node in range(len(picture.labels))]
    gutter = max(text_size(title_text(t), TITLE_SIZE)[0] for t in picture.titles) + 2 * PAD
    room = MAX_WIDTH - 2 * MARGIN - gutter - 2 * PAD
    centre: dict[int, float] = {}
    # Bands as (layer, lines of nodes, their x, their y relative to the band's top, height)
    bands: list[tuple[int, list[list[int]], float]] = []
    offsets: dict[int, float] = {}
    for layer, span in enumerate(layer_rows):
        if not span:
            continue
        lines: list[list[int]] = []
        y = BAND_TOP
        for r in span:
            for line in _fold(rows[r], sizes, room):
                wanted = [_mean([centre[p] for p in graph.predecessors(n) if p in centre])
                          for n in line]
                for node, x in zip(line, _place_line(line, sizes, wanted)):
                    centre[node] = x
                height = max(sizes[n][1] for n in line)
                for node in line:
                    offsets[node] = y + height / 2
                y += height + V_GAP
                lines.append(line)
        bands.append((layer, lines, y - V_GAP + PAD))
    return _stack(picture, bands, centre, offsets, sizes, gutter)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _stack(picture: Drawing, bands: list[tuple[int, list[list[int]], float]],
           centre: dict[int, float], offsets: dict[int, float],
           sizes: list[tuple[float, float]], gutter: float) -> Layout:
    """Bands top to bottom in columns no taller than MAX_HEIGHT, columns left to right;
    each column has the band titles in a left margin `gutter` wide, where no box is."""
    columns: list[list[tuple[int, list[list[int]], float]]] = [[]]
    height = 0.0
    for band in bands:
        if columns[-1] and height + band[2] > MAX_HEIGHT - 2 * MARGIN:
            columns.append([])
            height = 0.0
        columns[-1].append(band)
        height += band[2]
    boxes: dict[int, Rect] = {}
    placed: list[Band] = []
    left = MARGIN
    total_height = 0.0
    for column in columns:
        members = [n for _, lines, _ in column for line in lines for n in line]
        low = min(centre[n] - sizes[n][0] / 2 for n in members)
        high = max(centre[n] + sizes[n][0] / 2 for n in members)
        width = gutter + high - low + 2 * PAD
        top = MARGIN
        for layer, lines, band_height in column:
            for line in lines:
                for n in line:
                    x = left + gutter + PAD + centre[n] - low
                    boxes[n] = Rect(x, top + offsets[n], *sizes[n])
            title_w, title_h = text_size(title_text(picture.titles[layer]), TITLE_SIZE)
            placed.append(Band(layer, Rect(left + width / 2, top + band_height / 2, width,
                                           band_height),
                               Rect(left + PAD + title_w / 2, top + BAND_TOP + title_h / 2,
                                    title_w, title_h)))
            top += band_height
        total_height = max(total_height, top + MARGIN)
        left += width + H_GAP
    return Layout(tuple(boxes[n] for n in range(len(picture.labels))), tuple(placed),
                  left - H_GAP + MARGIN, total_height)
