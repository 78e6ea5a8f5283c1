"""A `Trace` as one matplotlib figure (`Trace.plot()`, `rasp-sim trace -o`): the residual
stream after the last block (positions x labelled directions) and every attention head's
pattern (queries x keys), each panel titled with its block's RASP operation and source.

matplotlib's object API with the Agg canvas, as draw_matplotlib.py: headless, no pyplot
state.
"""
from __future__ import annotations

import io
from typing import Any, BinaryIO

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..compiled.trace import Trace

_HEADS_PER_ROW = 4
_CMAP_STREAM, _CMAP_PATTERN = "RdBu_r", "Blues"


def trace_figure(trace: Trace) -> Figure:
    """The figure of `trace`: the residual stream on top, the attention patterns below."""
    heads = trace.attention
    rows_of_heads = -(-len(heads) // _HEADS_PER_ROW)
    width = max(8.0, 0.22 * len(trace.residual_labels) + 2.5)
    figure = Figure(figsize=(width, 3.2 + 3.4 * rows_of_heads), layout="constrained")
    FigureCanvasAgg(figure)
    grid = figure.add_gridspec(1 + rows_of_heads, _HEADS_PER_ROW,
                               height_ratios=[1.0] + [1.1] * rows_of_heads)
    _stream_panel(figure.add_subplot(grid[0, :]), trace)
    for index, head in enumerate(heads):
        axes = figure.add_subplot(grid[1 + index // _HEADS_PER_ROW, index % _HEADS_PER_ROW])
        axes.imshow(head.pattern, cmap=_CMAP_PATTERN, vmin=0.0, vmax=1.0)
        _ticks(axes, trace.positions, trace.positions)
        operation = head.operations[0] if head.operations else None
        title = f"block {head.block} head {head.head}"
        if operation is not None:
            title += f"\n{operation.op}" + (f"\n{operation.at}" if operation.at else "")
        axes.set_title(title, fontsize=7)
        axes.set_xlabel("keys", fontsize=7)
        axes.set_ylabel("queries", fontsize=7)
    return figure


def _stream_panel(axes: Any, trace: Trace) -> None:
    values = trace.residuals[-1].values
    bound = max(float(abs(values).max()), 1e-12)
    image = axes.imshow(values, cmap=_CMAP_STREAM, vmin=-bound, vmax=bound, aspect="auto")
    _ticks(axes, trace.residual_labels, trace.positions)
    axes.set_title(f"residual stream after the last block; output {trace.output}", fontsize=8)
    axes.figure.colorbar(image, ax=axes, fraction=0.02)


def _ticks(axes: Any, columns: Any, rows: Any) -> None:
    axes.set_xticks(range(len(columns)), [str(c) for c in columns], rotation=90, fontsize=6)
    axes.set_yticks(range(len(rows)), [str(r) for r in rows], fontsize=7)


def write_trace_figure(trace: Trace, stream: BinaryIO, format: str) -> None:
    """Write the figure to the open binary `stream` as `format` (png, svg or pdf)."""
    trace_figure(trace).savefig(stream, dpi=150, format=format)


def trace_svg(trace: Trace) -> str:
    """The figure as SVG text (a notebook's rendering of a Trace)."""
    text = io.StringIO()
    trace_figure(trace).savefig(text, format="svg")
    return text.getvalue()
