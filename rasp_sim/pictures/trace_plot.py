"""A `Trace` as one matplotlib figure (`Trace.plot()`, `rasp-sim trace -o`): the residual
stream after the last block (positions x labelled directions) and every attention head's
pattern (queries x keys), each panel titled with its block's RASP operation and source.

matplotlib's object API with the Agg canvas, as draw_matplotlib.py: headless, no pyplot
state. So that a notebook shows the figure without pyplot (`trace.plot()` as a cell's last
line), it is a `NotebookFigure`, which Jupyter displays as a PNG.

Wide models stay readable, as in `rasp-sim report` (which shares these helpers): the
figure is at most MAX_WIDTH inches wide, a residual axis with more directions than fit is
labelled every k-th direction, heads wrap into more columns on a wide figure, titles wrap
to their panel, and source locations name the file, not its folders.
"""
from __future__ import annotations

import io
import math
import textwrap
from pathlib import Path
from typing import Any, BinaryIO, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..compiled.trace import Trace

MAX_WIDTH = 28.0  # inches: 4,200 px at the PNG's 150 dpi
_PANEL_WIDTH = 2.2  # inches per attention panel
_TICK_POINTS = 6  # font size of the residual labels
_CMAP_STREAM, _CMAP_PATTERN = "RdBu_r", "Blues"


class NotebookFigure(Figure):
    """A matplotlib Figure that Jupyter displays as a PNG, with or without pyplot."""

    def _repr_png_(self) -> bytes:
        data = io.BytesIO()
        self.savefig(data, format="png", dpi=100)
        return data.getvalue()


def capped_width(columns: int, minimum: float) -> float:
    """A heatmap's width in inches for `columns` labelled columns, capped at MAX_WIDTH."""
    return min(MAX_WIDTH, max(minimum, 0.16 * columns + 2.0))


def short_at(at: str) -> str:
    """A source location with the folders dropped: `classic.rasp:10:38`."""
    return at if at.startswith("<") else Path(at).name


def label_columns(axes: Any, labels: Sequence[str], width: float) -> str:
    """Label the x axis with `labels`, every k-th when all do not fit in `width` inches;
    returns how the axis is labelled (`every 3rd direction labelled`), or ""."""
    fitting = max(1, int(width * 72 / (_TICK_POINTS * 1.5)))
    step = math.ceil(len(labels) / fitting)
    axes.set_xticks(range(0, len(labels), step), [str(c) for c in labels[::step]],
                    rotation=90, fontsize=_TICK_POINTS)
    return "" if step == 1 else f"every {_ordinal(step)} of {len(labels)} labelled"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def trace_figure(trace: Trace) -> NotebookFigure:
    """The figure of `trace`: the residual stream on top, the attention patterns below."""
    heads = trace.attention
    width = capped_width(len(trace.residual_labels), 8.0)
    per_row = max(4, int(width // _PANEL_WIDTH))
    rows_of_heads = -(-len(heads) // per_row)
    figure = NotebookFigure(figsize=(width, 3.2 + 3.4 * rows_of_heads), layout="constrained")
    FigureCanvasAgg(figure)
    grid = figure.add_gridspec(1 + rows_of_heads, per_row,
                               height_ratios=[1.0] + [1.1] * rows_of_heads)
    _stream_panel(figure.add_subplot(grid[0, :]), trace, width)
    title_chars = int(width / per_row * 72 / (7 * 0.75))  # 7-point characters per panel
    for index, head in enumerate(heads):
        axes = figure.add_subplot(grid[1 + index // per_row, index % per_row])
        axes.imshow(head.pattern, cmap=_CMAP_PATTERN, vmin=0.0, vmax=1.0)
        axes.set_xticks(range(len(trace.positions)), trace.positions, rotation=90, fontsize=7)
        axes.set_yticks(range(len(trace.positions)), trace.positions, fontsize=7)
        axes.set_title(_head_title(head, title_chars), fontsize=7)
        axes.set_xlabel("keys", fontsize=7)
        axes.set_ylabel("queries", fontsize=7)
    return figure


def _head_title(head: Any, chars: int) -> str:
    """`block 2 head 0`, its operation and where it is written, wrapped to `chars`."""
    lines = [f"block {head.block} head {head.head}"]
    if head.operations:
        operation = head.operations[0]
        lines += [operation.op] + ([short_at(operation.at)] if operation.at else [])
    return "\n".join(textwrap.fill(line, chars, break_long_words=True) for line in lines)


def _stream_panel(axes: Any, trace: Trace, width: float) -> None:
    values = trace.residuals[-1].values
    bound = max(float(abs(values).max()), 1e-12)
    image = axes.imshow(values, cmap=_CMAP_STREAM, vmin=-bound, vmax=bound, aspect="auto",
                        interpolation="nearest")
    labelled = label_columns(axes, trace.residual_labels, width)
    axes.set_yticks(range(len(trace.positions)), trace.positions, fontsize=7)
    if labelled:
        axes.set_xlabel(f"residual directions: {labelled}", fontsize=7)
    title = f"residual stream after the last block; output {trace.output}"
    axes.set_title(textwrap.fill(title, int(width * 72 / (8 * 0.6)), max_lines=2),
                   fontsize=8)
    axes.figure.colorbar(image, ax=axes, fraction=0.02)


def write_trace_figure(trace: Trace, stream: BinaryIO, format: str) -> None:
    """Write the figure to the open binary `stream` as `format` (png, svg or pdf)."""
    trace_figure(trace).savefig(stream, dpi=150, format=format)


def trace_svg(trace: Trace) -> str:
    """The figure as SVG text (a notebook's rendering of a Trace)."""
    text = io.StringIO()
    trace_figure(trace).savefig(text, format="svg")
    return text.getvalue()
