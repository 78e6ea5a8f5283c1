"""Drawing: an analysed s-op graph and its layer schedule, as DOT text or a picture.

Public interface (the CLI's `draw` command uses it):

- `drawing(analysis, values=None) -> Drawing`: what is drawn, renderer-independent. Nodes
  of depth 0 (tokens, indices, constants, maps on them) are layer 0, "inputs"; every other
  node sits in its layer l (1..L). Labels are `analyse.node_label(node)`, plus a second
  line with the node's example value when `values` (a mapping node -> value) has one.
  Edges run from an input to its user; `select` edges are marked `k`/`q`, an aggregate's
  value edge `v` and its selector edge dashed. Roots are drawn with a double border.
- `to_dot(analysis, values=None) -> str` / `dot_text(drawing)`: Graphviz DOT text, one
  cluster per layer (`cluster_inputs`, `cluster_layer_<l>`).
- `render(drawing, path) -> (Path, renderer)`: writes `path`. A `.dot` path gets the DOT
  text; `.png`/`.svg` are drawn by Graphviz's `dot` when it is on PATH, else by
  `draw_matplotlib` (a layered layout in Python), so a fresh install draws pictures.

Why DOT is written by hand: networkx's DOT writers need pydot or pygraphviz, neither of
which the project depends on, and DOT's quoted-string syntax is all this needs.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import graph
from .analyse import Analysis, node_label
from .atomic_write import write_bytes
from .errors import RaspError
from .text import short_repr

_FORMATS = {".png": "png", ".svg": "svg"}
_VALUE_CHARS = 40  # example values longer than this are cut, to keep nodes readable


def _quote(text: str) -> str:
    """A DOT quoted string; newlines become DOT's centred line break `\\n`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "\\n".join(escaped.splitlines() or [""]) + '"'


_DOT_STYLES = {
    "input": 'shape=box, style="rounded,filled", fillcolor="#eeeeee"',
    "selector": "shape=hexagon",
    "aggregate": 'shape=box, style=filled, fillcolor="#cfe2f3"',
    "map": "shape=ellipse",
}


def _in_edges(node: graph.Node) -> Iterator[tuple[graph.Node, str, bool]]:
    """(input, edge label, dashed) for each input of `node`."""
    if isinstance(node, graph.Select):
        yield node.keys, "k", False
        yield node.queries, "q", False
    elif isinstance(node, graph.Aggregate):
        yield node.selector, "", True
        yield node.values, "v", False
    else:
        for child in node.children():
            yield child, "", False


@dataclass(frozen=True)
class Edge:
    """An edge from an input (`tail`) to its user (`head`), as indices into the nodes."""

    tail: int
    head: int
    label: str = ""  # "k"/"q" for a select's keys/queries, "v" for an aggregate's values
    dashed: bool = False  # an aggregate's selector


@dataclass(frozen=True)
class Drawing:
    """What is drawn, independent of the renderer: node i has `labels[i]`, `kinds[i]`
    (input, selector, aggregate or map) and sits in layer `layers[i]` (0 = inputs);
    `titles[l]` names layer l."""

    labels: tuple[str, ...]
    kinds: tuple[str, ...]
    layers: tuple[int, ...]
    roots: frozenset[int]
    edges: tuple[Edge, ...]
    titles: tuple[str, ...]


def _kind(node: graph.Node) -> str:
    if isinstance(node, (graph.Tokens, graph.Indices, graph.Full)):
        return "input"
    if isinstance(node, graph.Selector):
        return "selector"
    if isinstance(node, graph.Aggregate):
        return "aggregate"
    return "map"


def drawing(analysis: Analysis, values: Mapping[graph.Node, Any] | None = None) -> Drawing:
    """The analysed graph as a `Drawing`; `values` adds a second label line per node."""
    values = values or {}
    nodes = list(analysis.graph.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    root_ids = set(map(id, analysis.roots))
    labels = []
    for node in nodes:
        label = node_label(node)
        if node in values:
            label += "\n" + short_repr(values[node], _VALUE_CHARS)
        labels.append(label)
    titles = ["inputs"] + [
        f"layer {layer.index}: {len(layer.heads)} head(s), {len(layer.maps)} map(s)"
        for layer in analysis.layers
    ]
    edges = [Edge(index[child], index[node], label, dashed)
             for node in nodes for child, label, dashed in _in_edges(node)]
    return Drawing(tuple(labels), tuple(map(_kind, nodes)),
                   tuple(analysis.node_depth(node) for node in nodes),
                   frozenset(i for i, node in enumerate(nodes) if id(node) in root_ids),
                   tuple(edges), tuple(titles))


def to_dot(analysis: Analysis, values: Mapping[graph.Node, Any] | None = None) -> str:
    """The analysed graph as DOT text, one cluster per layer (see the module docstring)."""
    return dot_text(drawing(analysis, values))


def dot_text(picture: Drawing) -> str:
    """`picture` as DOT text: a cluster per layer, node styles by kind."""
    clusters: list[list[str]] = [[] for _ in picture.titles]
    for i, (label, kind, layer) in enumerate(zip(picture.labels, picture.kinds,
                                                 picture.layers)):
        border = ", peripheries=2" if i in picture.roots else ""
        clusters[layer].append(f"    n{i} [label={_quote(label)}, {_DOT_STYLES[kind]}{border}];")
    lines = ["digraph rasp {", '  node [fontname="Helvetica"];']
    for layer, (title, body) in enumerate(zip(picture.titles, clusters)):
        name = "cluster_inputs" if layer == 0 else f"cluster_layer_{layer}"
        lines += [f"  subgraph {name} {{", f"    label={_quote(title)};", *body, "  }"]
    for edge in picture.edges:
        attributes = [f'label="{edge.label}"'] if edge.label else []
        if edge.dashed:
            attributes.append("style=dashed")
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        lines.append(f"  n{edge.tail} -> n{edge.head}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write(path: Path, data: bytes) -> None:
    """`path` holds `data`, written atomically (an interrupted or failed write leaves the
    old file)."""
    try:
        write_bytes(path, data)
    except OSError as error:
        raise RaspError(f"cannot write {path}: {error.strerror or error}") from None


def render(picture: Drawing, path: str | Path) -> tuple[Path, str]:
    """Write `picture` to `path`: DOT text (.dot), or a picture (.png, .svg) drawn by
    Graphviz when its `dot` program is installed and by matplotlib otherwise, so a plain
    `pip install` draws too. Returns the path and the renderer used."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".dot":
        _write(path, dot_text(picture).encode("utf-8"))
        return path, "dot text"
    if suffix not in _FORMATS:
        raise RaspError(
            f"cannot draw to '{path.name}': the file name must end in .png, .svg or .dot"
        )
    if shutil.which("dot") is None:
        from .draw_matplotlib import save

        save(picture, path)
        return path, "matplotlib"
    # the picture comes back on stdout, so that this process writes the file atomically
    result = subprocess.run(
        ["dot", f"-T{_FORMATS[suffix]}"],
        input=dot_text(picture).encode("utf-8"), capture_output=True, check=False,
    )
    if result.returncode != 0:
        raise RaspError(f"Graphviz 'dot' failed on {path}: "
                        f"{result.stderr.decode('utf-8', 'replace').strip()}")
    _write(path, result.stdout)
    return path, "Graphviz"
