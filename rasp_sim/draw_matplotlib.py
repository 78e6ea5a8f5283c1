"""Painting a `draw.Drawing` with matplotlib (PNG or SVG), for machines without Graphviz.

The layout comes from `draw_layout`; each layer is a shaded band titled like Graphviz's
clusters, nodes are boxes coloured by kind (the DOT renderer's colours), roots have a
thick border, and edges carry the same `k`/`q`/`v` labels and dashes as the DOT text.
Uses matplotlib's object API with the Agg canvas (no pyplot, no GUI backend), so it works
headless and leaves no global figure state.
"""
from __future__ import annotations

from pathlib import Path

from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .atomic_write import replacing
from .draw import Drawing
from .draw_layout import layered_layout
from .errors import RaspError

_FILL = {"input": "#eeeeee", "selector": "#fff2cc", "aggregate": "#cfe2f3", "map": "#ffffff"}
_BOX = {"input": "round,pad=0.3", "selector": "round4,pad=0.3", "aggregate": "square,pad=0.3",
        "map": "round,pad=0.3,rounding_size=0.8"}
_BANDS = ("#f7f7f7", "#fdfdf0")
# Inches per layout unit. Big graphs are drawn at a lower resolution rather than refused:
# at most _LARGEST_PIXELS in all (a 40-megapixel PNG is a few MB, and image viewers and
# PIL's decompression-bomb guard accept it) and 2^15 pixels a side (Agg's limit is 2^16).
_UNIT_WIDTH, _UNIT_HEIGHT = 2.2, 1.0
_DPI, _LARGEST_PIXELS, _LARGEST_SIDE_PIXELS = 100, 40e6, 2**15


def save(picture: Drawing, path: Path) -> None:
    """Draw `picture` into `path`; the format follows the suffix (.png or .svg)."""
    layout = layered_layout(picture)
    position = layout.position()
    width = max((len(row) for row in layout.rows), default=1)
    size = (2 + width * _UNIT_WIDTH, 1 + len(layout.rows) * _UNIT_HEIGHT)
    figure = Figure(figsize=size)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_axis_off()
    half = width / 2 + 0.5
    axes.set_xlim(-half - 1.5, half)
    axes.set_ylim(-len(layout.rows) + 0.4, 0.6)

    for layer, rows in enumerate(layout.layer_rows):
        if not rows:
            continue
        top, bottom = -rows.start + 0.5, -rows.stop + 0.5
        axes.axhspan(bottom, top, color=_BANDS[layer % 2], zorder=0)
        axes.text(-half - 1.4, top - 0.1, picture.titles[layer], va="top", ha="left",
                  fontsize=8, color="#555555")
    for edge in picture.edges:
        (x0, y0), (x1, y1) = position[edge.tail], position[edge.head]
        axes.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=1,
                      arrowprops={"arrowstyle": "-|>", "shrinkA": 10, "shrinkB": 10,
                                  "linestyle": "--" if edge.dashed else "-",
                                  "color": "#444444", "linewidth": 0.8})
        if edge.label:  # near the user's end, where edges into one node are apart
            axes.text(x0 + 0.7 * (x1 - x0), y0 + 0.7 * (y1 - y0), edge.label, fontsize=8,
                      color="#aa3300", fontweight="bold", ha="center", va="center", zorder=3,
                      bbox={"boxstyle": "circle,pad=0.1", "facecolor": "white",
                            "edgecolor": "none"})
    for node, (x, y) in position.items():
        kind = picture.kinds[node]
        axes.text(x, y, picture.labels[node], ha="center", va="center", fontsize=8, zorder=2,
                  bbox={"boxstyle": _BOX[kind], "facecolor": _FILL[kind],
                        "edgecolor": "black", "linewidth": 2.0 if node in picture.roots else 0.8})
    try:
        # SVG text stays text (searchable, selectable) instead of glyph outlines.
        with rc_context({"svg.fonttype": "none"}), replacing(path) as handle:
            figure.savefig(handle, dpi=_resolution(*size), format=path.suffix.lower().lstrip("."))
    except OSError as error:
        raise RaspError(f"cannot write {path}: {error.strerror or error}") from None


def _resolution(width: float, height: float) -> float:
    """Dots per inch: _DPI, lowered as far as the pixel limits of a big figure require."""
    return min(_DPI, (_LARGEST_PIXELS / (width * height)) ** 0.5,
               _LARGEST_SIDE_PIXELS / max(width, height))
