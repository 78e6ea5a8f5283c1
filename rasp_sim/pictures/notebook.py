"""Jupyter renderings: an s-op's graph (the `rasp-sim draw` picture) and a selector's value
as a query x key grid, both as SVG text (IPython's `_repr_svg_` protocol).

The graph folds each library call into one box, as `rasp-sim draw` does (draw_collapse.py):
a `Program` knows its file; a bare s-op is taken to be written in the file nearest to it
that is not the bundled library.
"""
from __future__ import annotations

import importlib.resources
import tempfile
from html import escape
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core import graph
from ..compiled.model_files import STDLIB

# Grid geometry, in SVG user units (px): one cell per (query, key), labels around it.
_CELL = 22
_MARGIN = 40
_SELECTED = "#3d6fb6"
_EMPTY = "#ffffff"


_LIBRARY_ONLY = "<library only>"  # no node is built here: every library call folds


def node_svg(node: graph.Node, values: Mapping[graph.Node, Any] | None = None, *,
             user_file: str | None = None,
             call_names: Mapping[graph.Node, str] | None = None) -> str:
    """The `rasp-sim draw` picture of `node` as SVG text, library calls folded as the
    CLI folds them: the nodes built outside `user_file` (default: the file nearest to
    `node` that is not the bundled library), one box per call, named by `call_names`."""
    from ..language.analyse import analyse
    from .draw import drawing, render

    analysis = analyse(node)
    picture = drawing(analysis, values, user_file=user_file or _user_file(node, analysis),
                      call_names=call_names)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "graph.svg"
        render(picture, path)
        return path.read_text()


def _user_file(root: graph.Node, analysis: Any) -> str:
    """The file of `root`, or else of the node nearest to it (graph order runs from the
    inputs), that is not the bundled library's."""
    for node in [root, *reversed(list(analysis.graph.nodes))]:
        if node.span is not None and not _is_bundled(node.span.file):
            return node.span.file
    return _LIBRARY_ONLY


def _is_bundled(file: str) -> bool:
    """Whether `file` is the standard library or a file of rasp_sim/programs."""
    library = Path(str(importlib.resources.files("rasp_sim.programs"))).resolve()
    return file == STDLIB or Path(file).resolve().is_relative_to(library)


def selector_svg(rows: Sequence[Sequence[bool]], tokens: Sequence[Any]) -> str:
    """A selector's value as a grid: row q is query q, column k key k, a filled cell where
    query q selects key k; the axes are labelled with the positions and tokens."""
    n = len(rows)
    size = 2 * _MARGIN + n * _CELL
    labels = [escape(f"{i}:{token}"[:6]) for i, token in enumerate(tokens)]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
             f'viewBox="0 0 {size} {size}" font-family="sans-serif" font-size="10">',
             f'<text x="{_MARGIN + n * _CELL / 2}" y="12" text-anchor="middle">keys</text>',
             f'<text x="10" y="{_MARGIN + n * _CELL / 2}" text-anchor="middle" '
             f'transform="rotate(-90 10 {_MARGIN + n * _CELL / 2})">queries</text>']
    for i, label in enumerate(labels):
        centre = _MARGIN + i * _CELL + _CELL / 2
        parts.append(f'<text x="{centre}" y="{_MARGIN - 6}" text-anchor="middle">{label}</text>')
        parts.append(f'<text x="{_MARGIN - 4}" y="{centre + 3}" text-anchor="end">{label}</text>')
    for q, row in enumerate(rows):
        for k, selected in enumerate(row):
            parts.append(f'<rect x="{_MARGIN + k * _CELL}" y="{_MARGIN + q * _CELL}" '
                         f'width="{_CELL}" height="{_CELL}" stroke="#999999" '
                         f'fill="{_SELECTED if selected else _EMPTY}"/>')
    parts.append("</svg>")
    return "\n".join(parts)
