"""DOT output of `rasp_sim.pictures.draw`, parsed back with a small Lark grammar for the subset of
the DOT language it emits (graphviz.org/doc/info/lang.html), and `render`'s file handling.
pydot is not a dependency, so the grammar below is the well-formedness check."""
from __future__ import annotations

import re
from pathlib import Path

import lark
import numpy as np
import pytest

from rasp_sim.pictures import draw
from rasp_sim.core import graph as G
from rasp_sim.language.analyse import analyse
from rasp_sim.pictures.draw_layout import layered_layout, title_text
from rasp_sim.pictures.drawing import Drawing, Edge
from rasp_sim.base.errors import RaspError

DOT_SUBSET = r"""
start: "digraph" ID "{" stmt* "}"
?stmt: node_stmt | edge_stmt | subgraph | attr_stmt | assign
subgraph: "subgraph" ID "{" stmt* "}"
node_stmt: ID attrs ";"
edge_stmt: ID "->" ID attrs? ";"
attr_stmt: "node" attrs ";"
assign: ID "=" value ";"
attrs: "[" attr ("," attr)* "]"
attr: ID "=" value
?value: ID | STRING
ID: /[A-Za-z_][A-Za-z0-9_]*/ | /[0-9]+/
STRING: /"([^"\\]|\\.)*"/
%ignore /\s+/
"""
_PARSER = lark.Lark(DOT_SUBSET, parser="lalr")


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], token[1:-1])


def parse_dot(text: str) -> tuple[dict[str, list[str]], dict[str, dict[str, str]], list]:
    """(cluster name -> node ids, node id -> attributes, edges (tail, head, attributes))."""
    clusters: dict[str, list[str]] = {}
    nodes: dict[str, dict[str, str]] = {}
    edges: list[tuple[str, str, dict[str, str]]] = []

    def attrs(tree: lark.Tree | None) -> dict[str, str]:
        if tree is None:
            return {}
        pairs = [(str(a.children[0]), str(a.children[1])) for a in tree.children]
        return {k: _unquote(v) if v.startswith('"') else v for k, v in pairs}

    def walk(statements: list, cluster: str | None) -> None:
        for st in statements:
            if not isinstance(st, lark.Tree):
                continue
            if st.data == "subgraph":
                assert cluster is None, "clusters are not nested"
                name = str(st.children[0])
                clusters[name] = []
                walk(st.children[1:], name)
            elif st.data == "node_stmt":
                node_id = str(st.children[0])
                assert node_id not in nodes, "each node is declared once"
                nodes[node_id] = attrs(st.children[1])
                if cluster is not None:
                    clusters[cluster].append(node_id)
            elif st.data == "edge_stmt":
                extra = st.children[2] if len(st.children) > 2 else None
                edges.append((str(st.children[0]), str(st.children[1]), attrs(extra)))

    tree = _PARSER.parse(text)
    walk(tree.children[1:], None)
    return clusters, nodes, edges


def _by_label(nodes: dict[str, dict[str, str]]) -> dict[str, str]:
    return {a["label"].split("\n")[0]: node_id for node_id, a in nodes.items()}


indices = G.Indices(name="indices")
tokens_int = G.Tokens("int", name="tokens_int")


def two_layer_program() -> tuple[G.SOp, dict[str, int]]:
    """b = aggregate(select(indices, indices, ==), aggregate(...)) plus a map; every node
    named, with the layer each belongs in by docs/language.md (worked out by hand)."""
    one = G.Full(1, name="one")
    plus = G.Map("+", (tokens_int, one), name="plus")
    s1 = G.Select(indices, indices, "==", name="s1")
    a = G.Aggregate(s1, plus, name="a")
    s2 = G.Select(indices, a, "<", name="s2")
    b = G.Aggregate(s2, tokens_int, name="b")
    out = G.Map("*", (b, a), name="out")
    return out, {"indices": 0, "tokens_int": 0, "one": 0, "plus": 0, "s1": 1, "a": 1,
                 "s2": 2, "b": 2, "out": 2}


def test_dot_is_well_formed_with_one_cluster_per_layer() -> None:
    root, layer_of = two_layer_program()
    clusters, nodes, edges = parse_dot(draw.to_dot(analyse(root)))
    assert list(clusters) == ["cluster_inputs", "cluster_layer_1", "cluster_layer_2"]
    ids = _by_label(nodes)
    del layer_of["one"]  # a constant is folded into its user's label, not drawn
    assert set(ids) == set(layer_of)
    assert nodes[ids["plus"]]["label"] == "plus\ntokens_int + 1"
    names = ["cluster_inputs", "cluster_layer_1", "cluster_layer_2"]
    for label, layer in layer_of.items():
        assert ids[label] in clusters[names[layer]], label
    edge_set = {(nodes[t]["label"].split("\n")[0], nodes[h]["label"].split("\n")[0],
                 tuple(sorted(a.items()))) for t, h, a in edges}
    assert len(edges) == 11  # two inputs for each of the six non-leaf nodes, less `one`
    assert ("indices", "s2", (("label", "k"),)) in edge_set
    assert ("a", "s2", (("label", "q"),)) in edge_set
    assert ("s2", "b", (("style", "dashed"),)) in edge_set
    assert ("tokens_int", "b", (("label", "v"),)) in edge_set
    assert ("b", "out", ()) in edge_set and ("a", "out", ()) in edge_set
    assert nodes[ids["out"]].get("peripheries") == "2"
    assert "peripheries" not in nodes[ids["b"]]


def test_cluster_titles_give_heads_and_maps() -> None:
    root, _ = two_layer_program()
    text = draw.to_dot(analyse(root))
    assert 'label="layer 1: 1 head(s), 0 map(s)";' in text
    assert 'label="layer 2: 1 head(s), 1 map(s)";' in text


def test_unnamed_nodes_are_labelled_by_their_operation_with_constants_folded() -> None:
    tokens = G.Tokens("str")
    sel = G.SelectorAnd(G.Select(G.Indices(), G.Full(0), "=="), G.Select(tokens, tokens, "!="))
    out = G.Map("+", (G.Aggregate(sel, G.Tokens("int")),
                      G.Aggregate(sel, G.Tokens("float"), reduction="sum")))
    _, nodes, _ = parse_dot(draw.to_dot(analyse(out)))
    labels = sorted(a["label"] for a in nodes.values())
    assert labels == sorted(["indices", "tokens_str", "tokens_int", "tokens_float",
                             "select(indices, 0, ==)", "select(tokens_str, tokens_str, !=)",
                             "· and ·", "aggregate(·, tokens_int)",
                             "aggregate sum(·, tokens_float)", "· + ·"])


def test_example_values_form_a_last_line() -> None:
    root, _ = two_layer_program()
    a = root.inputs[1]
    values = {a: np.array([1, 2, 3]), root: list(range(100))}
    _, nodes, _ = parse_dot(draw.to_dot(analyse(root), values))
    ids = _by_label(nodes)
    assert nodes[ids["a"]]["label"] == "a\naggregate(s1, plus)\n[1, 2, 3]"
    long = nodes[ids["out"]]["label"].split("\n")[-1]
    assert len(long) == 40 and long.endswith("...") and long.startswith("[0, 1, 2")
    assert nodes[ids["b"]]["label"] == "b\naggregate(s2, tokens_int)"


def test_awkward_names_are_escaped() -> None:
    name = 'say "hi" \\ then\nnewline'
    root = G.Map("not", (G.Tokens("bool"),), name=name)
    _, nodes, _ = parse_dot(draw.to_dot(analyse(root)))
    assert any(a["label"].startswith(name + "\n") for a in nodes.values())


def test_a_5000_deep_chain_draws() -> None:
    node: G.SOp = tokens_int
    for _ in range(5000):
        node = G.Map("neg", (node,))
    clusters, nodes, edges = parse_dot(draw.to_dot(analyse(node)))
    assert (list(clusters), len(nodes), len(edges)) == (["cluster_inputs"], 5001, 5000)


# ------------------------------------------------------------------------------ render


def _picture(root: G.Node = tokens_int) -> Drawing:
    return draw.drawing(analyse(root))


def test_render_dot_writes_the_text(tmp_path: Path) -> None:
    assert draw.render(_picture(), tmp_path / "g.dot") == (tmp_path / "g.dot", "dot text")
    assert (tmp_path / "g.dot").read_text() == draw.to_dot(analyse(tokens_int))


def test_render_rejects_unknown_formats(tmp_path: Path) -> None:
    with pytest.raises(RaspError) as info:
        draw.render(_picture(), tmp_path / "g.gif")
    assert info.value.format() == (
        "error: cannot draw to 'g.gif': the file name must end in .svg, .png, .pdf or .dot")


def test_png_is_painted_at_the_chosen_dpi(tmp_path: Path) -> None:
    from matplotlib.image import imread

    root, _ = two_layer_program()
    assert draw.render(_picture(root), tmp_path / "g.png") == (tmp_path / "g.png", "matplotlib")
    draw.render(_picture(root), tmp_path / "g2.png", dpi=2 * draw.DEFAULT_DPI)
    pixels = imread(tmp_path / "g.png")
    height, width, _ = pixels.shape
    assert height > 200 and width > 100
    assert len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 10  # not blank
    assert abs(imread(tmp_path / "g2.png").shape[0] - 2 * height) <= 2


def test_svg_has_every_label_as_text(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    root, layers = two_layer_program()
    picture = _picture(root)
    draw.render(picture, tmp_path / "g.svg")
    texts = "\n".join("".join(element.itertext()) for element in ET.parse(
        tmp_path / "g.svg").iter("{http://www.w3.org/2000/svg}text"))
    for label in [*picture.labels, *map(title_text, picture.titles)]:
        for line in label.splitlines():
            assert line in texts, line
    assert len(picture.titles) == 3


def test_pdf_is_written_with_its_text_as_text(tmp_path: Path) -> None:
    root, _ = two_layer_program()
    draw.render(_picture(root), tmp_path / "g.pdf")
    data = (tmp_path / "g.pdf").read_bytes()
    assert data.startswith(b"%PDF") and b"/FontFile2" in data  # an embedded TrueType font


def test_render_reports_unwritable_paths(tmp_path: Path) -> None:
    for name in ("g.dot", "g.png"):
        with pytest.raises(RaspError, match=f"missing/{name}: the folder .*missing does "
                                            "not exist"):
            draw.render(_picture(), tmp_path / "missing" / name)


# ------------------------------------------------------------------------------ layout


def test_layout_edges_go_down_and_each_layer_is_a_band() -> None:
    root, layers = two_layer_program()
    picture = _picture(root)
    layout = layered_layout(picture)
    boxes = layout.boxes
    for edge in picture.edges:
        tail, head = boxes[edge.tail], boxes[edge.head]
        assert tail.y + tail.h / 2 < head.y - head.h / 2
    bands = {band.layer: band.area for band in layout.bands}
    for node, layer in enumerate(picture.layers):
        box, band = boxes[node], bands[layer]
        assert band.y - band.h / 2 <= box.y - box.h / 2 and box.y + box.h / 2 <= band.y + band.h / 2
    del layers["one"]
    assert {picture.labels[n].split("\n")[0]: picture.layers[n]
            for n in range(len(picture.labels))} == layers


def test_layout_orders_a_row_to_avoid_crossings() -> None:
    # Two independent chains whose heads are listed in the opposite order of their
    # inputs: the barycentre sweeps must uncross them.
    picture = Drawing(labels=("a", "b", "a2", "b2"), kinds=("input",) * 2 + ("map",) * 2,
                           layers=(0, 0, 0, 0), roots=frozenset({2, 3}),
                           edges=(Edge(0, 3), Edge(1, 2)), titles=("inputs",))
    x = [box.x for box in layered_layout(picture).boxes]
    assert (x[0] < x[1]) == (x[3] < x[2])


def test_cli_draws_a_png(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from matplotlib.image import imread

    from rasp_sim.cli import main

    target = tmp_path / "reverse.png"
    example = Path(__file__).resolve().parent.parent / "examples" / "reverse.rasp"
    assert main(["draw", str(example), "-o", str(target), "--input", "hey"]) == 0
    assert capsys.readouterr().out == f"wrote {target} (matplotlib)\n"
    assert imread(target).shape[2] == 4  # an RGBA image that matplotlib reads back
