"""Painting a `draw.Drawing` with matplotlib (SVG, PNG or PDF).

The layout comes from `draw_layout`, in points, and the figure is exactly the layout's
size, so one point of the layout is one point of the page: text is drawn at the size the
layout measured it. Each layer is a shaded band with its title in the left margin, nodes are boxes coloured
by kind, folded library calls have a green fill, roots a thick border, a selector on an
input is a query x key grid (a filled cell where the query selects the key), and an
aggregate's selector arrow is dashed. Uses matplotlib's object API with the Agg canvas
(no pyplot, no GUI backend), so it works headless and leaves no global figure state.
"""
from __future__ import annotations

from typing import BinaryIO

from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from .drawing import Drawing, Grid
from .draw_layout import (CELL, FONT_SIZE, GRID_LABEL, PAD, TITLE_SIZE, Layout, Rect,
                          layered_layout, title_text)

_FILL = {"input": "#eeeeee", "selector": "#fff2cc", "aggregate": "#cfe2f3", "map": "#ffffff",
         "call": "#e2f0d9"}
_ROUNDING = {"input": 4.0, "selector": 1.0, "aggregate": 0.0, "map": 8.0, "call": 2.0}
_BANDS = ("#f4f4f4", "#fbfbee")
_SELECTED = "#3d6fb6"
_POINTS_PER_INCH = 72.0
# A very big graph (--expand on the encoder) is painted at a lower resolution rather than
# refused: at most _LARGEST_PIXELS in all (a 40-megapixel PNG is a few MB, and PIL's
# decompression-bomb guard accepts it) and 2^15 pixels a side (Agg's limit is 2^16).
_LARGEST_PIXELS, _LARGEST_SIDE_PIXELS = 40e6, 2**15


def figure_of(picture: Drawing, layout: Layout | None = None) -> Figure:
    """The painted figure, `layout.width` x `layout.height` points."""
    layout = layout or layered_layout(picture)
    figure = Figure(figsize=(layout.width / _POINTS_PER_INCH,
                             layout.height / _POINTS_PER_INCH))
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_axis_off()
    axes.set_xlim(0, layout.width)
    axes.set_ylim(layout.height, 0)  # y grows downwards, as in the layout
    for band in layout.bands:
        area = band.area
        axes.add_patch(Rectangle((area.x - area.w / 2, area.y - area.h / 2), area.w, area.h,
                                 color=_BANDS[band.layer % 2], zorder=0, linewidth=0))
        axes.text(band.title.x - band.title.w / 2, band.title.y,
                  title_text(picture.titles[band.layer]), ha="left", va="center",
                  fontsize=TITLE_SIZE, color="#555555", parse_math=False)
    for edge in picture.edges:
        tail, head = layout.boxes[edge.tail], layout.boxes[edge.head]
        axes.add_patch(FancyArrowPatch(
            (tail.x, tail.y + tail.h / 2), (head.x, head.y - head.h / 2),
            arrowstyle="-|>", mutation_scale=8, shrinkA=0, shrinkB=1, zorder=1,
            linestyle="--" if edge.dashed else "-", color="#555555", linewidth=0.7))
    for node, box in enumerate(layout.boxes):
        _paint_node(axes, picture, node, box)
    return figure


def _paint_node(axes: object, picture: Drawing, node: int, box: Rect) -> None:
    kind = picture.kinds[node]
    rounding = min(_ROUNDING[kind], box.h / 2, box.w / 2)
    axes.add_patch(FancyBboxPatch(  # type: ignore[attr-defined]
        (box.x - box.w / 2, box.y - box.h / 2), box.w, box.h,
        boxstyle=f"round,pad=0,rounding_size={rounding}" if rounding else "square,pad=0",
        facecolor=_FILL[kind], edgecolor="black", zorder=2,
        linewidth=2.0 if node in picture.roots else 0.7))
    grid = picture.grid(node)
    top = box.y - box.h / 2 + PAD
    text_height = box.h - 2 * PAD - (len(grid.rows) * CELL + GRID_LABEL if grid else 0)
    axes.text(box.x, top + text_height / 2, picture.labels[node],  # type: ignore[attr-defined]
              ha="center", va="center", fontsize=FONT_SIZE, zorder=3, parse_math=False)
    if grid is not None:
        side = len(grid.rows) * CELL
        _paint_grid(axes, grid, box.x - side / 2 + GRID_LABEL / 2, top + text_height + GRID_LABEL)


def _paint_grid(axes: object, grid: Grid, left: float, top: float) -> None:
    """Cells from (left, top): row q is query q, column k key k; tokens along both axes."""
    small = 7.0
    turn = 90 if any(len(token) > 1 for token in grid.tokens) else 0
    for q, row in enumerate(grid.rows):
        for k, selected in enumerate(row):
            axes.add_patch(Rectangle(  # type: ignore[attr-defined]
                (left + k * CELL, top + q * CELL), CELL, CELL, zorder=3, linewidth=0.4,
                edgecolor="#999999", facecolor=_SELECTED if selected else "white"))
    for i, token in enumerate(grid.tokens):
        centre = i * CELL + CELL / 2
        axes.text(left + centre, top - 2, token, ha="center", va="bottom",  # type: ignore[attr-defined]
                  fontsize=small, rotation=turn, zorder=3, parse_math=False)
        axes.text(left - 2, top + centre, token, ha="right", va="center",  # type: ignore[attr-defined]
                  fontsize=small, zorder=3, parse_math=False)


def save(picture: Drawing, stream: BinaryIO, format: str, dpi: float) -> None:
    """Draw `picture` into the open `stream` as `format` (svg, png, pdf)."""
    figure = figure_of(picture)
    # SVG text stays text (searchable, selectable) instead of glyph outlines; PDF
    # embeds TrueType fonts so that its text is text too.
    with rc_context({"svg.fonttype": "none", "pdf.fonttype": 42}):
        figure.savefig(stream, dpi=resolution(figure, dpi), format=format)


def resolution(figure: Figure, dpi: float) -> float:
    """`dpi`, lowered as far as the pixel limits of a big figure require."""
    width, height = figure.get_size_inches()
    return min(dpi, (_LARGEST_PIXELS / (width * height)) ** 0.5,
               _LARGEST_SIDE_PIXELS / max(width, height))
