"""The report's circuit section (`rasp-sim report`, pictures/report.py): the model's
ground-truth circuit (`Model.circuit()`, compiled/circuit.py) as two tables, its nodes
(operations, source lines, TransformerLens hooks, dead or not) and its edges (the residual
directions each reading role takes from the sender). Tables, not a picture: an edge's
directions are too many to draw, and the page's one diagram stays the layer diagram."""
from __future__ import annotations

from html import escape
from typing import Any, Callable

from .trace_plot import short_at


def circuit_section(model: Any, quoted: Callable[[str], str]) -> str:
    """The section's HTML; `quoted(at)` is the source line at a file:line:col (or why it is
    not shown, or "")."""
    graph = model.circuit()
    nodes = sorted(graph.nodes, key=lambda n: graph.nodes[n]["order"])
    dead = [n for n in nodes if graph.nodes[n]["dead"]]
    rows = []
    for node in nodes:
        data = graph.nodes[node]
        operations = "<br>".join(
            escape(entry["op"]) + (f" <code>{escape(short_at(entry['at']))}</code> "
                                   f"{escape(quoted(entry['at']))}" if entry.get("at") else "")
            for entry in data["operations"]) or escape(data["kind"])
        hook = data["hook"] + ("" if data["hook_index"] == "[:]" else data["hook_index"])
        rows.append(f"<tr><td>{escape(node)}</td><td>{operations}</td>"
                    f"<td><code>{escape(hook)}</code></td>{_dead(data['dead'])}</tr>")
    edges = []
    for a, b, data in sorted(graph.edges(data=True), key=lambda e: (
            graph.nodes[e[1]]["order"], graph.nodes[e[0]]["order"])):
        reads = "<br>".join(f"{escape(role)}: {escape(' '.join(directions))}"
                            for role, directions in data["reads"].items())
        edges.append(f"<tr><td>{escape(a)}</td><td>{escape(b)}</td><td>{reads}</td>"
                     f"{_dead(data['dead'])}</tr>")
    return (f"<p>{len(nodes)} nodes ({len(dead)} dead: the output does not depend on them), "
            f"{graph.number_of_edges()} edges: an edge where a node reads residual directions "
            "an earlier node writes (<code>rasp-sim circuit</code>; <code>--check</code> "
            "proves it by ablation).</p>"
            '<table id="circuit-nodes"><tr><th>node</th><th>operations</th>'
            f"<th>TransformerLens hook</th><th>dead</th></tr>{''.join(rows)}</table>"
            '<h3>Edges</h3><table id="circuit-edges"><tr><th>sender</th><th>receiver</th>'
            f"<th>directions read (by role)</th><th>dead</th></tr>{''.join(edges)}</table>")


def _dead(dead: bool) -> str:
    return '<td class="bad">dead</td>' if dead else "<td></td>"
