"""Drawing: an analysed s-op graph and its layer schedule, as DOT text or a picture.

Public interface (the CLI's `draw` command, the REPL's `draw(...)` and notebooks use it):

- `drawing(analysis, values=None, example=None, *, user_file=None, call_names=None,
  expand=False) -> Drawing`: what is drawn, renderer-independent. Nodes of depth 0
  (tokens, indices, maps on them) are layer 0, "inputs"; every other node sits in its
  layer l (1..L). Constants get no node: they are written into the labels of the nodes
  that use them (`draw_labels`). Without `expand`, each call into a library (the
  standard library or a loaded file, anything built outside `user_file`) is one box
  named by the call (`draw_collapse`). With `values` (node -> value on `example`) an
  s-op's label gets its value and a selector is drawn as a query x key grid.
  Edges run from an input to its user; an aggregate's selector edge is dashed. Roots are
  drawn with a thick border.
- `to_dot(analysis, values=None) -> str` / `dot_text(drawing)`: Graphviz DOT text, one
  cluster per layer (`cluster_inputs`, `cluster_layer_<l>`).
- `render(drawing, path, dpi=DEFAULT_DPI) -> (Path, renderer)`: writes `path`. A `.dot`
  path gets the DOT text; `.svg` (text as text), `.png` (at `dpi`) and `.pdf` are painted
  by `draw_matplotlib` from `draw_layout`'s layout, whose boxes never overlap.
  `write_picture(drawing, stream, format, dpi)` writes the same to an open stream
  (`rasp-sim draw -o -`).

Why DOT is written by hand: networkx's DOT writers need pydot or pygraphviz, neither of
which the project depends on, and DOT's quoted-string syntax is all this needs. Pictures
are always painted by matplotlib, Graphviz or not, so that the layout guarantees (no
overlap, the size rule of docs/language.md) hold for every picture.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Mapping, Sequence

from ..core import graph
from ..language.analyse import Analysis
from ..base.atomic_write import replacing
from .draw_collapse import Box, box_summary, boxes, members_of
from .drawing import Drawing, Edge, Grid
from .draw_formats import DEFAULT_DPI, check_suffix
from .draw_labels import node_text, operation, shown
from ..base.errors import RaspError

_VALUE_CHARS = 40  # example values longer than this are cut, to keep nodes readable
GRID_LIMIT = 24  # a selector on a longer input is described, not drawn cell by cell


def _quote(text: str) -> str:
    """A DOT quoted string; newlines become DOT's centred line break `\\n`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "\\n".join(escaped.splitlines() or [""]) + '"'


_DOT_STYLES = {
    "input": 'shape=box, style="rounded,filled", fillcolor="#eeeeee"',
    "selector": "shape=hexagon",
    "aggregate": 'shape=box, style=filled, fillcolor="#cfe2f3"',
    "map": "shape=ellipse",
    "call": 'shape=box, style="filled,bold", fillcolor="#e2f0d9"',
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


def _kind(node: graph.Node) -> str:
    if isinstance(node, (graph.Tokens, graph.Indices, graph.Full)):
        return "input"
    if isinstance(node, graph.Selector):
        return "selector"
    if isinstance(node, graph.Aggregate):
        return "aggregate"
    return "map"


def _grid(value: Any, example: Sequence[Any]) -> Grid | None:
    rows = value.tolist() if hasattr(value, "tolist") else value
    if not isinstance(rows, list) or not 0 < len(rows) <= GRID_LIMIT:
        return None
    return Grid(tuple(tuple(bool(c) for c in row) for row in rows),
                tuple(shown(t, 4) if not isinstance(t, str) else t[:4] for t in example))


def _value_line(node: graph.Node, value: Any, grid: Grid | None) -> str:
    if isinstance(node, graph.Selector):
        if grid is not None:
            return ""
        rows = value.tolist() if hasattr(value, "tolist") else value
        return f"{len(rows)} x {len(rows)} selector" if isinstance(rows, list) else ""
    return shown(value, _VALUE_CHARS)


def _box_label(box: Box, depth: Mapping[graph.Node, int],
               call_names: Mapping[graph.Node, str]) -> str:
    output = box.output
    name = call_names.get(output) or output.name or operation(output)
    return f"{name}\n{box_summary(box, depth)}"


def drawing(analysis: Analysis, values: Mapping[graph.Node, Any] | None = None,
            example: Any = None, *, user_file: str | Path | None = None,
            call_names: Mapping[graph.Node, str] | None = None,
            expand: bool = False) -> Drawing:
    """The analysed graph as a `Drawing` (see the module docstring). `user_file` defaults
    to the file the first root was built in."""
    values = values or {}
    call_names = call_names or {}
    depth = {node: analysis.node_depth(node) for node in analysis.graph.nodes}
    if user_file is None:
        spans = [root.span for root in analysis.roots if root.span is not None]
        user_file = spans[0].file if spans else None
    folded = {} if expand or user_file is None else members_of(boxes(analysis, user_file))
    root_ids = set(map(id, analysis.roots))

    index: dict[int, int] = {}  # id(node or box) -> drawn node
    labels: list[str] = []
    kinds: list[str] = []
    layers: list[int] = []
    grids: list[Grid | None] = []
    roots: set[int] = set()

    def place(key: object, label: str, kind: str, layer: int, grid: Grid | None) -> int:
        index[id(key)] = len(labels)
        labels.append(label)
        kinds.append(kind)
        layers.append(layer)
        grids.append(grid)
        return index[id(key)]

    for node in analysis.graph.nodes:
        if isinstance(node, graph.Full):
            continue
        box = folded.get(node)
        if box is not None and box.output is not node:
            continue
        grid = (_grid(values[node], () if example is None else list(example)) if isinstance(node, graph.Selector)
                and node in values else None)
        if box is not None:
            label, kind = _box_label(box, depth, call_names), "call"
        else:
            label, kind = node_text(node), _kind(node)
        if node in values:
            line = _value_line(node, values[node], grid)
            label += "\n" + line if line else ""
        at = place(box or node, label, kind, depth[node], grid)
        if id(node) in root_ids or (box and any(id(m) in root_ids for m in box.members)):
            roots.add(at)

    def drawn(node: graph.Node) -> int:
        return index[id(folded.get(node, node))]

    edges: dict[tuple[int, int, str], Edge] = {}
    for node in analysis.graph.nodes:
        if isinstance(node, graph.Full):
            continue
        for child, label, dashed in _in_edges(node):
            if isinstance(child, graph.Full):
                continue
            tail, head = drawn(child), drawn(node)
            key = (tail, head, "" if node in folded else label)
            if tail != head and key not in edges:
                inside = node in folded
                edges[key] = Edge(tail, head, "" if inside else label,
                                         dashed and not inside)
    titles = ["inputs"] + [
        f"layer {layer.index}: {len(layer.heads)} head(s), {len(layer.maps)} map(s)"
        for layer in analysis.layers
    ]
    return Drawing(tuple(labels), tuple(kinds), tuple(layers), frozenset(roots),
                   tuple(edges.values()), tuple(titles), tuple(grids))


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


def render(picture: Drawing, path: str | Path, dpi: float = DEFAULT_DPI) -> tuple[Path, str]:
    """Write `picture` to `path`: DOT text (.dot), or a picture (.svg, .png at `dpi`,
    .pdf) painted by matplotlib. Returns the path and the renderer used."""
    path = Path(path)
    check_suffix(str(path))
    try:
        with replacing(path) as handle:
            renderer = write_picture(picture, handle, path.suffix.lower().lstrip("."), dpi)
    except OSError as error:
        raise RaspError(f"cannot write {path}: {error.strerror or error}") from None
    return path, renderer


def write_picture(picture: Drawing, stream: BinaryIO, format: str,
                  dpi: float = DEFAULT_DPI) -> str:
    """Write `picture` to the open `stream` in `format` (dot, svg, png or pdf); returns
    the renderer used."""
    if format == "dot":
        stream.write(dot_text(picture).encode("utf-8"))
        return "dot text"
    from .draw_matplotlib import save

    save(picture, stream, format, dpi)
    return "matplotlib"
