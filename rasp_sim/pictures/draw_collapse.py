"""Which nodes a drawing folds into one box per library call (`rasp-sim draw` without
`--expand`).

A node is *library* when it was built outside the drawn program's file: in the standard
library or a loaded file (its span says where). Inputs and constants never are. Each
library node joins the box of the node it feeds, so a box is one library result (an
s-op a user node reads, or a drawn root) with the library nodes only it needs:

- a library node read by a user node, or drawn as a root, heads its own box;
- otherwise, walking from the users back to the inputs, a node joins the box of its
  users when they are all in one box, and heads a box of its own when they are in
  several (a shared library value such as `length` or `full_s`).

So every box has one output, boxes never overlap, and an arrow into a box comes from an
input, a user node or another box. A box is named by the call the program wrote
(`sorted = sort(tokens, tokens)`, from the assignment that binds its output) or by the
name of its output (`length`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import networkx as nx

from ..core import graph
from ..language.analyse import Analysis
from ..language.ast import Assign, Call
from ..base.errors import RaspError, Span


@dataclass(frozen=True, eq=False)
class Box:
    """A folded library call: `output` and the library nodes only it needs."""

    output: graph.Node
    members: tuple[graph.Node, ...]


def _is_library(node: graph.Node, user_file: Path) -> bool:
    if isinstance(node, graph.Map) and node.op == "assert":
        # An assert's span is the user's call that led to it (its error names the user's
        # line, docs/language.md), so it belongs where the condition it checks was built.
        return _is_library(node.inputs[0], user_file)
    if isinstance(node, (graph.Tokens, graph.Indices, graph.Full)) or node.span is None:
        return False
    return Path(node.span.file).resolve() != user_file


def boxes(analysis: Analysis, user_file: str | Path) -> list[Box]:
    """The library calls of `analysis`'s graph, as boxes (see the module docstring)."""
    user = Path(user_file).resolve()
    g: nx.DiGraph = analysis.graph  # edges child -> user
    roots = set(map(id, analysis.roots))
    owner: dict[graph.Node, graph.Node] = {}
    for node in reversed(list(nx.topological_sort(g))):  # users before what they read
        if not _is_library(node, user):
            continue
        users = list(g.successors(node))
        heads = {id(owner.get(u)): owner.get(u) for u in users}
        if id(node) in roots or len(heads) != 1 or None in heads.values():
            owner[node] = node
        else:
            owner[node] = next(iter(heads.values()))  # type: ignore[assignment]
    members: dict[graph.Node, list[graph.Node]] = {}
    for node in g.nodes:  # graph order, so members keep program order
        if node in owner:
            members.setdefault(owner[node], []).append(node)
    return [Box(output, tuple(nodes)) for output, nodes in members.items()]


def _span_text(span: Span) -> str:
    lines = span.source.text.splitlines()[span.line - 1:span.end_line]
    if not lines:
        return ""
    if len(lines) == 1:
        return lines[0][span.column - 1:span.end_column - 1]
    return " ".join([lines[0][span.column - 1:], *(l.strip() for l in lines[1:-1]),
                     lines[-1][:span.end_column - 1].strip()])


def call_names(file: str | Path, values: Mapping[str, object]) -> dict[graph.Node, str]:
    """`name = call(...)` for each top-level assignment of `file` whose value is one call
    and whose name is bound to an s-op or selector in `values`: the box labels of those
    calls. Empty when the file cannot be read or parsed (the drawing then names boxes by
    their outputs)."""
    from ..language.parser import parse
    from ..base.program_files import read_program

    try:
        program = parse(read_program(file), str(file))
    except (RaspError, OSError):
        return {}
    names: dict[graph.Node, str] = {}
    for statement in program.statements:
        if not (isinstance(statement, Assign) and len(statement.names) == 1
                and len(statement.values) == 1 and isinstance(statement.values[0], Call)):
            continue
        node = values.get(statement.names[0])
        if isinstance(node, graph.Node):
            names[node] = f"{statement.names[0]} = {_span_text(statement.values[0].span)}"
    return names


def box_summary(box: Box, depth: Mapping[graph.Node, int]) -> str:
    """`layers 1-2, 3 heads`: the layers the box's nodes are computed in and its heads
    (the distinct selectors its aggregates read through)."""
    layers = sorted({depth[n] for n in box.members if depth[n] > 0})
    heads = len({id(n.selector) for n in box.members if isinstance(n, graph.Aggregate)})
    if not layers:
        return "maps on the inputs"
    span = f"layer {layers[0]}" if len(layers) == 1 else f"layers {layers[0]}-{layers[-1]}"
    return f"{span}, {heads} head{'s' if heads != 1 else ''}"


def members_of(boxes_: Iterable[Box]) -> dict[graph.Node, Box]:
    """node -> the box it is folded into."""
    return {node: box for box in boxes_ for node in box.members}
