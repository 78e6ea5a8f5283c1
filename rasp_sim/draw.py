"""Drawing: an analysed s-op graph and its layer schedule as Graphviz DOT text.

Public interface (stable; the CLI's `draw` command uses it):

- `to_dot(analysis, values=None) -> str`: DOT text for `analysis.graph`. Nodes of depth 0
  (tokens, indices, constants, maps on them) sit in a cluster `cluster_inputs`; every
  other node sits in the cluster `cluster_layer_<l>` of its layer l (1..L), one cluster per
  layer. Labels are `analyse.node_label(node)`, plus a second line with the node's example
  value when `values` (a mapping node -> value) has one. Edges run from an input to its
  user; `select` edges are marked `k`/`q`, an aggregate's value edge `v` and its selector
  edge dashed. Roots are drawn with a double border.
- `render(dot_text, path) -> Path`: writes `path`. A `.dot` path gets the text itself;
  `.png`/`.svg` run Graphviz's `dot` executable. Without Graphviz, the text is written
  next to `path` with the suffix `.dot` and a `RaspError` says so.

Why DOT is written by hand: networkx's DOT writers need pydot or pygraphviz, neither of
which the project depends on, and DOT's quoted-string syntax is all this needs.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import graph
from .analyse import Analysis, node_label
from .errors import RaspError

_FORMATS = {".png": "png", ".svg": "svg"}
_VALUE_CHARS = 40  # example values longer than this are cut, to keep nodes readable


def _quote(text: str) -> str:
    """A DOT quoted string; newlines become DOT's centred line break `\\n`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "\\n".join(escaped.splitlines() or [""]) + '"'


def _format_value(value: Any) -> str:
    if hasattr(value, "tolist"):  # numpy arrays and scalars print as plain lists
        value = value.tolist()
    text = str(value).replace("\n", " ")
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "..."


def _style(node: graph.Node) -> str:
    if isinstance(node, (graph.Tokens, graph.Indices, graph.Full)):
        return 'shape=box, style="rounded,filled", fillcolor="#eeeeee"'
    if isinstance(node, graph.Selector):
        return "shape=hexagon"
    if isinstance(node, graph.Aggregate):
        return 'shape=box, style=filled, fillcolor="#cfe2f3"'
    return "shape=ellipse"


def _in_edges(node: graph.Node) -> Iterator[tuple[graph.Node, str]]:
    """(input, DOT edge attributes) for each input of `node`."""
    if isinstance(node, graph.Select):
        yield node.keys, ' [label="k"]'
        yield node.queries, ' [label="q"]'
    elif isinstance(node, graph.Aggregate):
        yield node.selector, " [style=dashed]"
        yield node.values, ' [label="v"]'
    else:
        for child in node.children():
            yield child, ""


def to_dot(analysis: Analysis, values: Mapping[graph.Node, Any] | None = None) -> str:
    """The analysed graph as DOT text, one cluster per layer (see the module docstring)."""
    values = values or {}
    ids = {node: f"n{i}" for i, node in enumerate(analysis.graph.nodes)}
    roots = set(map(id, analysis.roots))
    clusters: list[list[str]] = [[] for _ in range(analysis.n_layers + 1)]
    for node, node_id in ids.items():
        label = node_label(node)
        if node in values:
            label += "\n" + _format_value(values[node])
        border = ", peripheries=2" if id(node) in roots else ""
        clusters[analysis.node_depth(node)].append(
            f"    {node_id} [label={_quote(label)}, {_style(node)}{border}];"
        )

    lines = ["digraph rasp {", '  node [fontname="Helvetica"];']
    titles = ["inputs"] + [
        f"layer {layer.index}: {len(layer.heads)} head(s), {len(layer.maps)} map(s)"
        for layer in analysis.layers
    ]
    for depth, (title, body) in enumerate(zip(titles, clusters)):  # graph leaves: depth 0
        name = "cluster_inputs" if depth == 0 else f"cluster_layer_{depth}"
        lines += [f"  subgraph {name} {{", f"    label={_quote(title)};", *body, "  }"]
    for node, node_id in ids.items():
        for child, attributes in _in_edges(node):
            lines.append(f"  {ids[child]} -> {node_id}{attributes};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as error:
        raise RaspError(f"cannot write {path}: {error.strerror or error}") from None


def render(dot_text: str, path: str | Path) -> Path:
    """Write `dot_text` to `path` (.dot), or render it with Graphviz (.png, .svg)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".dot":
        _write(path, dot_text)
        return path
    if suffix not in _FORMATS:
        raise RaspError(
            f"cannot draw to '{path.name}': the file name must end in .png, .svg or .dot"
        )
    if shutil.which("dot") is None:
        dot_path = path.with_suffix(".dot")
        _write(dot_path, dot_text)
        raise RaspError(
            f"Graphviz is not installed (no 'dot' program on PATH), so {path} was not "
            f"rendered; the graph was written as DOT text to {dot_path} instead. Install "
            "Graphviz, or open the .dot file with any Graphviz viewer."
        )
    result = subprocess.run(
        ["dot", f"-T{_FORMATS[suffix]}", "-o", str(path)],
        input=dot_text, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise RaspError(f"Graphviz 'dot' failed on {path}: {result.stderr.strip()}")
    return path
