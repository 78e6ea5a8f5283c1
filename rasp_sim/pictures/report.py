"""One self-contained HTML page about a compiled model on one input (`rasp-sim report`).

The page holds, from the `Trace` of the input (rasp_sim/compiled/trace.py, the data of
`rasp-sim trace`):

- the layer diagram: the embedding, every block and the readout, each block labelled with
  the RASP operations it computes and their source lines (the compile record; a line is
  quoted only from a file the model may name, rasp_sim/compiled/model_files.py, and otherwise the
  label says why not), painted by `draw_matplotlib` (so its boxes never overlap) as inline
  SVG;
- the residual stream after the embedding and after every block, as a heatmap (positions
  x labelled residual directions);
- every head's attention pattern as a query x key grid, every MLP's hidden activations;
- the decoded output next to the interpreter's output on the same input;
- the model's ground-truth circuit (`Model.circuit()`): its nodes with their operations,
  source lines and TransformerLens hooks, and its edges with the directions they carry
  (pictures/report_circuit.py).

Heatmaps are PNG images inlined as `data:` URIs and the diagram is inline SVG: the page
loads nothing from the network or the disk, so it opens anywhere, offline, as one file.
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from html import escape
from typing import Any, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .drawing import Drawing, Edge
from .report_circuit import circuit_section
from ..compiled.model_files import ModelFiles
from ..compiled.trace import Trace
from .trace_plot import capped_width, label_columns, short_at

_DPI = 100
_CMAP_STREAM, _CMAP_PATTERN, _CMAP_MLP = "RdBu_r", "Blues", "viridis"
_SOURCE_CHARS = 70  # a quoted source line is cut here, to keep the diagram's boxes narrow
_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
h3 { font-size: 1em; margin: 1.2em 0 0.3em; }
figure { margin: 0.5em 0 1em; display: inline-block; vertical-align: top; }
figcaption { font-size: 0.85em; color: #444; margin-top: 0.2em; }
img { max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: left; }
.ok { color: #1a7f37; } .bad { color: #c62828; font-weight: bold; }
code { background: #f4f4f4; padding: 0 0.2em; }
"""


@dataclass(frozen=True)
class Reference:
    """The interpreter's output on the input, or why there is none (`note`)."""

    output: list | None
    note: str = ""


def block_label(index: int, kind: str, operations: Sequence[Any], files: ModelFiles) -> str:
    """`block 0: attention`, then per operation its name, location and source line (or
    why the line is not shown)."""
    lines = [f"block {index}: {kind}"]
    for operation in operations:
        lines.append(operation.op)
        if operation.at:
            lines.append(f"{short_at(operation.at)}  {_quoted(files, operation.at)}".rstrip())
    return "\n".join(lines)


def _quoted(files: ModelFiles, at: str) -> str:
    """The source line at `at`, cut to _SOURCE_CHARS; or `[not shown: why]`."""
    line = files.source_line(at)
    if line is None:
        return ""
    if line.text is None:
        return f"[not shown: {line.refused.short if line.refused else 'unreadable'}]"
    source = line.text
    return source if len(source) <= _SOURCE_CHARS else source[:_SOURCE_CHARS - 3] + "..."


def layer_diagram(model: Any, files: ModelFiles) -> Drawing:
    """The model as a drawing: the embedding, a row per block (a band per transformer
    layer: attention then MLP), the readout; kinds give the boxes their colours. Source
    lines are read through `files` (the model's own folder and the library)."""
    blocks = model.layers
    labels = ["embedding"] + [block_label(b.index, b.kind, b.operations, files)
                              for b in blocks]
    labels.append("readout: decoded output")
    kinds = ["input"] + ["aggregate" if b.kind == "attention" else "map" for b in blocks]
    kinds.append("input")
    layers = [0] + [1 + b.index // 2 for b in blocks]
    last = max(layers) + 1
    layers.append(last)
    titles = ["input", *(f"layer {layer}" for layer in range(1, last)), "output"]
    edges = tuple(Edge(i, i + 1) for i in range(len(labels) - 1))
    return Drawing(tuple(labels), tuple(kinds), tuple(layers), frozenset({len(labels) - 1}),
                   edges, tuple(titles))


def _svg(figure: Figure) -> str:
    text = io.StringIO()
    figure.savefig(text, format="svg")
    svg = text.getvalue()
    return svg[svg.index("<svg"):]  # inline: no XML declaration or DOCTYPE


def _png(figure: Figure) -> str:
    data = io.BytesIO()
    figure.savefig(data, format="png", dpi=_DPI)
    return "data:image/png;base64," + base64.b64encode(data.getvalue()).decode("ascii")


def heatmap(values: np.ndarray, columns: Sequence[str], rows: Sequence[str], *,
            cmap: str, symmetric: bool, xlabel: str, ylabel: str) -> str:
    """A labelled heatmap as a PNG data URI; the colour bar gives the scale."""
    width = capped_width(len(columns), 3.5)
    height = min(20.0, max(3.0, 0.2 * len(rows) + 2.4))  # room for rotated labels
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    bound = max(float(np.abs(values).max()) if values.size else 0.0, 1e-12)
    image = axes.imshow(values, cmap=cmap, aspect="auto", interpolation="nearest",
                        vmin=-bound if symmetric else min(0.0, float(values.min(initial=0))),
                        vmax=bound)
    labelled = label_columns(axes, columns, width)
    axes.set_yticks(range(len(rows)), list(rows), fontsize=7)
    axes.set_xlabel(f"{xlabel} ({labelled})" if labelled else xlabel, fontsize=8)
    axes.set_ylabel(ylabel, fontsize=8)
    figure.colorbar(image, ax=axes, fraction=0.03)
    return _png(figure)


def _figure(kind: str, uri: str, caption: str) -> str:
    return (f'<figure class="{kind}"><img src="{uri}" alt="{escape(caption)}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def _agree(model: Any, reference: Any, tolerance: float) -> bool:
    if isinstance(model, (int, float)) and isinstance(reference, (int, float)) \
            and not isinstance(model, bool) and not isinstance(reference, bool):
        return abs(model - reference) <= tolerance * max(1.0, abs(reference))
    return bool(model == reference)


def output_table(trace: Trace, reference: Reference, tolerance: float) -> str:
    """Position by position: the input token, the model's output, the interpreter's."""
    if reference.output is None:
        rows = "".join(f"<tr><td>{i}</td><td>{escape(str(x))}</td>"
                       f"<td>{escape(str(y))}</td></tr>"
                       for i, (x, y) in enumerate(zip(trace.input, trace.output)))
        return (f"<p>The interpreter's output is not shown: {escape(reference.note)}</p>"
                f'<table id="output"><tr><th>position</th><th>input</th><th>model</th></tr>'
                f"{rows}</table>")
    agree = [_agree(m, r, tolerance) for m, r in zip(trace.output, reference.output)]
    agree += [False] * abs(len(trace.output) - len(reference.output))
    rows = "".join(
        f"<tr><td>{i}</td><td>{escape(str(x))}</td><td>{escape(str(m))}</td>"
        f"<td>{escape(str(r))}</td><td class=\"{'ok' if same else 'bad'}\">"
        f"{'yes' if same else 'NO'}</td></tr>"
        for i, (x, m, r, same) in enumerate(zip(trace.input, trace.output, reference.output,
                                                agree)))
    verdict = ("the model agrees with the interpreter" if all(agree)
               else "the model DISAGREES with the interpreter")
    return (f'<p class="{"ok" if all(agree) else "bad"}">On this input {verdict} '
            f"(numbers to a relative {tolerance:g}).</p>"
            '<table id="output"><tr><th>position</th><th>input</th><th>model</th>'
            f"<th>interpreter</th><th>agree</th></tr>{rows}</table>")


def unshown_sources(files: ModelFiles) -> str:
    """A paragraph naming each source file whose lines are not shown, and why; empty if
    every line was shown."""
    refused = files.refused()
    if not refused:
        return ""
    items = "".join(f"<li><code>{escape(name)}</code>: {escape(str(why))}</li>"
                    for name, why in refused.items())
    return (f'<p id="unshown">Source lines not shown (a model names only files in its own '
            f"folder or the bundled library):</p><ul>{items}</ul>")


def report_html(model: Any, trace: Trace, reference: Reference, title: str,
                files: ModelFiles) -> str:
    """The whole page (see the module docstring); `files`: the files the model may name
    (rasp_sim/compiled/model_files.py), for its source lines."""
    from .draw_matplotlib import figure_of

    info = model.info
    tolerance = float((info.get("validation") or {}).get("tolerance") or 1e-9)
    heads: dict[int, list] = {}
    for head in trace.attention:
        heads.setdefault(head.block, []).append(head)
    mlps = {mlp.block: mlp for mlp in trace.mlps}

    def stream(values: np.ndarray, caption: str) -> str:
        return _figure("residual", heatmap(values, trace.residual_labels, trace.positions,
                                           cmap=_CMAP_STREAM, symmetric=True,
                                           xlabel="residual direction", ylabel="position"),
                       caption)

    parts = [
        f"<h1>{escape(title)}</h1>",
        f"<p>Input <code>{escape(str(list(trace.input)))}</code>; program "
        f"<code>{escape(str(info.get('name')))}</code> of "
        f"<code>{escape(str(info.get('program')))}</code>; {info.get('layers')} layers, "
        f"{info.get('heads')} heads, residual width {info.get('residual_width')}.</p>",
        "<h2>Output</h2>", output_table(trace, reference, tolerance),
        "<h2>Layer diagram</h2>",
        f'<figure class="diagram" id="diagram">{_svg(figure_of(layer_diagram(model, files)))}'
        "<figcaption>Each block with the RASP operations it computes and their source "
        "lines.</figcaption></figure>",
        unshown_sources(files),
        "<h2>Circuit</h2>", circuit_section(model, lambda at: _quoted(files, at)),
        "<h2>Residual stream, block by block</h2>",
        stream(trace.residuals[0].values, "residual stream after the embedding"),
    ]
    for block, residual in zip(model.layers, trace.residuals[1:]):
        ops = "; ".join(op.op + (f" at {short_at(op.at)}" if op.at else "")
                        for op in block.operations)
        parts.append(f"<h3>block {block.index} ({block.kind}): {escape(ops)}</h3>")
        for head in heads.get(block.index, []):
            parts.append(_figure("attention", heatmap(
                head.pattern, trace.positions, trace.positions, cmap=_CMAP_PATTERN,
                symmetric=False, xlabel="key", ylabel="query"),
                f"block {block.index} head {head.head}: attention pattern (query x key)"))
        if block.index in mlps:
            hidden = mlps[block.index].hidden
            parts.append(_figure("mlp", heatmap(
                hidden, [str(i) for i in range(hidden.shape[1])], trace.positions,
                cmap=_CMAP_MLP, symmetric=False, xlabel="hidden unit", ylabel="position"),
                f"block {block.index}: MLP hidden activations"))
        parts.append(stream(residual.values, f"residual stream after block {block.index}"))
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")
